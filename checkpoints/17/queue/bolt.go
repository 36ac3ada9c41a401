package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

var bucketJobs = []byte("compensation_jobs")

// Bolt is a Queue in a bbolt file: one bucket, one JSON record per job, every
// change in one transaction synced to disk before the call returns, so what
// Enqueue accepted survives a kill -9.
type Bolt struct {
	db       *bolt.DB
	maxTries int
	now      func() time.Time
}

// NewBolt keeps its jobs in db (the caller opens and closes it), giving each
// job maxTries deliveries (0: DefaultMaxTries).
func NewBolt(db *bolt.DB, maxTries int) (*Bolt, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketJobs)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	if maxTries <= 0 {
		maxTries = DefaultMaxTries
	}
	return &Bolt{db: db, maxTries: maxTries, now: time.Now}, nil
}

func (q *Bolt) Enqueue(ctx context.Context, jobs ...Job) error {
	return q.update(ctx, func(b *bolt.Bucket) error {
		for _, j := range jobs {
			if b.Get([]byte(j.ID)) != nil {
				continue // at most once in the queue, whatever its state
			}
			j.State, j.Tries, j.LastReason = Pending, 0, ""
			if err := put(b, j); err != nil {
				return err
			}
		}
		return nil
	})
}

func (q *Bolt) Lease(ctx context.Context, n int, visibility time.Duration) ([]Job, error) {
	var leased []Job
	err := q.update(ctx, func(b *bolt.Bucket) error {
		now := q.now()
		c := b.Cursor()
		for k, v := c.First(); k != nil && len(leased) < n; k, v = c.Next() {
			var j Job
			if err := json.Unmarshal(v, &j); err != nil {
				return err
			}
			due := (j.State == Pending && !now.Before(j.NotBefore)) || (j.State == Leased && now.After(j.LeaseUntil))
			if !due {
				continue
			}
			if j.State == Leased && j.Tries >= q.maxTries {
				j.State, j.LastReason = Dead, "lease_expired"
			} else {
				j.State, j.Tries, j.LeaseUntil = Leased, j.Tries+1, now.Add(visibility)
				leased = append(leased, j)
			}
			if err := put(b, j); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return leased, nil
}

func (q *Bolt) Complete(ctx context.Context, id string) error {
	return q.change(ctx, id, func(j *Job) error {
		j.State = Done
		return nil
	})
}

func (q *Bolt) Fail(ctx context.Context, id, reason string, retryIn time.Duration) (bool, error) {
	var dead bool
	err := q.change(ctx, id, func(j *Job) error {
		if j.State == Done || j.State == Dead {
			dead = j.State == Dead
			return nil // a late report about a finished job changes nothing
		}
		j.LastReason = reason
		if j.Tries >= q.maxTries {
			j.State, dead = Dead, true
			return nil
		}
		j.State, j.NotBefore = Pending, q.now().Add(retryIn)
		return nil
	})
	return dead, err
}

func (q *Bolt) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := q.db.View(func(tx *bolt.Tx) error {
		now := q.now()
		return tx.Bucket(bucketJobs).ForEach(func(_, v []byte) error {
			var j Job
			if err := json.Unmarshal(v, &j); err != nil {
				return err
			}
			switch {
			case j.State == Leased && now.After(j.LeaseUntil):
				c.Pending++ // its worker is gone: it will be delivered again
			case j.State == Leased:
				c.Leased++
			case j.State == Done:
				c.Done++
			case j.State == Dead:
				c.Dead++
			default:
				c.Pending++
			}
			return nil
		})
	})
	return c, err
}

// Get returns one job as stored.
func (q *Bolt) Get(id string) (Job, error) {
	var j Job
	err := q.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketJobs).Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		return json.Unmarshal(v, &j)
	})
	return j, err
}

func (q *Bolt) change(ctx context.Context, id string, f func(*Job) error) error {
	return q.update(ctx, func(b *bolt.Bucket) error {
		v := b.Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		var j Job
		if err := json.Unmarshal(v, &j); err != nil {
			return err
		}
		if err := f(&j); err != nil {
			return err
		}
		return put(b, j)
	})
}

func (q *Bolt) update(ctx context.Context, f func(*bolt.Bucket) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return q.db.Update(func(tx *bolt.Tx) error { return f(tx.Bucket(bucketJobs)) })
}

func put(b *bolt.Bucket, j Job) error {
	v, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return b.Put([]byte(j.ID), v)
}

package queue

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Defaults for the zero fields of Limits.
const (
	DefaultKeepFinished = 1000   // done and dead jobs kept
	DefaultMaxOpen      = 20_000 // pending and leased jobs at most
	MaxIDBytes          = 256    // one job's ID at most
	MaxBodyBytes        = 4096   // one job's body at most
)

// ErrFull is returned by Enqueue when the jobs would take the queue past its
// MaxOpen: nothing of that Enqueue is written.
var ErrFull = errors.New("queue: full")

// ErrTooLarge is returned by Enqueue for a job whose ID or body is too long.
var ErrTooLarge = errors.New("queue: job too large")

// Limits bound a Bolt queue in count and size; a zero field takes its default.
type Limits struct {
	MaxTries int // deliveries before a job is dead (DefaultMaxTries)
	// KeepFinished is how many done and dead jobs are kept, for a second
	// Enqueue of their ID to be a no-op and for Counts; past it the job that
	// finished first is removed and counted in Counts.Pruned.
	KeepFinished int
	MaxOpen      int // pending and leased jobs at most (DefaultMaxOpen)
}

var (
	bucketJobs     = []byte("compensation_jobs")     // ID → JSON job
	bucketFinished = []byte("compensation_finished") // sequence → ID, in the order jobs finished
	bucketMeta     = []byte("compensation_meta")     // the counters below
	bucketDue      = []byte("compensation_due")      // due time + ID → nothing: the open jobs by when they are due
	keyOpen        = []byte("open")                  // jobs pending or leased
	keyPruned      = []byte("pruned")                // finished jobs removed so far
)

// Bolt is a Queue in a bbolt file: one record per job, every change in one
// transaction synced to disk before the call returns, so what Enqueue
// accepted survives a kill -9. It holds at most MaxOpen unfinished jobs and
// KeepFinished finished ones, each at most MaxIDBytes + MaxBodyBytes.
type Bolt struct {
	db     *bolt.DB
	limits Limits
	now    func() time.Time
	onDead func(tx *bolt.Tx, j Job) error // see OnDeadTx
}

// NewBolt keeps its jobs in db (the caller opens and closes it), within lim.
func NewBolt(db *bolt.DB, lim Limits) (*Bolt, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketJobs, bucketFinished, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return indexAll(tx)
	})
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	if lim.MaxTries <= 0 {
		lim.MaxTries = DefaultMaxTries
	}
	if lim.KeepFinished <= 0 {
		lim.KeepFinished = DefaultKeepFinished
	}
	if lim.MaxOpen <= 0 {
		lim.MaxOpen = DefaultMaxOpen
	}
	return &Bolt{db: db, limits: lim, now: time.Now}, nil
}

// DB is the file the queue lives in.
func (q *Bolt) DB() *bolt.DB { return q.db }

// OnDeadTx makes f run inside the transaction in which a job dies (its
// last try failed, or its last lease ran out), with the job as it died: what
// the job was for is settled with its death, or neither is, whatever kills
// the process. An error from f undoes both. Set it before the queue is used.
func (q *Bolt) OnDeadTx(f func(tx *bolt.Tx, j Job) error) { q.onDead = f }

func (q *Bolt) Enqueue(ctx context.Context, jobs ...Job) error {
	return q.update(ctx, func(tx *bolt.Tx) error { return q.EnqueueTx(tx, jobs...) })
}

// EnqueueTx is Enqueue inside the caller's read-write transaction on the
// queue's file: what the caller writes there and the jobs are committed
// together, or not at all.
func (q *Bolt) EnqueueTx(tx *bolt.Tx, jobs ...Job) error {
	if tx.DB() != q.db {
		return errors.New("queue: EnqueueTx needs a transaction on the queue's own file")
	}
	b := tx.Bucket(bucketJobs)
	for _, j := range jobs {
		if len(j.ID) > MaxIDBytes || len(j.Body) > MaxBodyBytes {
			return fmt.Errorf("%w: %d-byte ID, %d-byte body (at most %d and %d)", ErrTooLarge, len(j.ID), len(j.Body), MaxIDBytes, MaxBodyBytes)
		}
		if b.Get([]byte(j.ID)) != nil {
			continue // at most once in the queue, whatever its state
		}
		if open := counter(tx, keyOpen); open >= uint64(q.limits.MaxOpen) {
			return fmt.Errorf("%w: %d jobs waiting", ErrFull, open)
		}
		j.State, j.Tries, j.LastReason = Pending, 0, ""
		if err := put(b, j); err != nil {
			return err
		}
		if err := index(tx, j, true); err != nil {
			return err
		}
		if err := addCounter(tx, keyOpen, 1); err != nil {
			return err
		}
	}
	return nil
}

// DeleteTx removes every job whose ID starts with prefix, in whatever state,
// inside the caller's transaction: what a store does when it drops the thing
// those jobs were for. It returns how many it removed.
func (q *Bolt) DeleteTx(tx *bolt.Tx, prefix string) (int, error) {
	b := tx.Bucket(bucketJobs)
	var keys [][]byte
	var open int
	c := b.Cursor()
	for k, v := c.Seek([]byte(prefix)); k != nil && strings.HasPrefix(string(k), prefix); k, v = c.Next() {
		var j Job
		if err := json.Unmarshal(v, &j); err != nil {
			return 0, err
		}
		if j.State == Pending || j.State == Leased {
			open++
			if err := index(tx, j, false); err != nil {
				return 0, err
			}
		}
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), addCounter(tx, keyOpen, -open)
}

// Lease walks the due index from its oldest entry and stops at the first
// one not yet due: a poll with nothing due reads one key, in a read-only
// transaction, however many jobs wait.
func (q *Bolt) Lease(ctx context.Context, n int, visibility time.Duration) ([]Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var due bool
	q.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketDue).Cursor().First()
		due = k != nil && !dueAt(k).After(q.now())
		return nil
	})
	if !due || n <= 0 {
		return nil, nil
	}
	var leased []Job
	err := q.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJobs)
		now := q.now()
		var candidates [][]byte // the IDs of the entries due, read before the index changes
		c := tx.Bucket(bucketDue).Cursor()
		for k, _ := c.First(); k != nil && !dueAt(k).After(now) && len(candidates) < n+leaseBatchSlack; k, _ = c.Next() {
			candidates = append(candidates, append([]byte(nil), k...))
		}
		for _, k := range candidates {
			if len(leased) >= n {
				break
			}
			v := b.Get(k[8:])
			if v == nil { // an entry left behind by a job removed without its index (an older file)
				if err := tx.Bucket(bucketDue).Delete(k); err != nil {
					return err
				}
				continue
			}
			var j Job
			if err := json.Unmarshal(v, &j); err != nil {
				return err
			}
			isDue := (j.State == Pending && !now.Before(j.NotBefore)) || (j.State == Leased && now.After(j.LeaseUntil))
			if !isDue {
				continue // due at this very instant for a lease: the next poll takes it
			}
			if err := index(tx, j, false); err != nil {
				return err
			}
			if j.State == Leased && j.Tries >= q.limits.MaxTries {
				j.State, j.LastReason = Dead, "lease_expired"
				if err := q.finish(tx, j); err != nil {
					return err
				}
				continue
			}
			j.State, j.Tries, j.LeaseUntil = Leased, j.Tries+1, now.Add(visibility)
			leased = append(leased, j)
			if err := put(b, j); err != nil {
				return err
			}
			if err := index(tx, j, true); err != nil {
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

// leaseBatchSlack is how many due entries past n one Lease reads, for those
// that turn out dead (they take no place in the batch).
const leaseBatchSlack = 64

func (q *Bolt) Complete(ctx context.Context, id string) error {
	return q.change(ctx, id, func(j *Job) bool {
		if j.State == Done {
			return false
		}
		wasOpen := j.State != Dead
		j.State = Done
		return wasOpen
	})
}

func (q *Bolt) Fail(ctx context.Context, id, reason string, retryIn time.Duration) (bool, error) {
	var dead bool
	err := q.change(ctx, id, func(j *Job) bool {
		if j.State == Done || j.State == Dead {
			dead = j.State == Dead
			return false // a late report about a finished job changes nothing
		}
		j.LastReason = reason
		if j.Tries >= q.limits.MaxTries {
			j.State, dead = Dead, true
			return true
		}
		j.State, j.NotBefore = Pending, q.now().Add(retryIn)
		return false
	})
	return dead, err
}

func (q *Bolt) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := q.db.View(func(tx *bolt.Tx) error {
		now := q.now()
		c.Pruned = int(counter(tx, keyPruned))
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

// change applies f to the stored job id and saves it; when f reports that
// the job has just finished (done or dead from pending or leased), it is
// also booked as finished.
func (q *Bolt) change(ctx context.Context, id string, f func(*Job) (finished bool)) error {
	return q.update(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJobs)
		v := b.Get([]byte(id))
		if v == nil {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		var j Job
		if err := json.Unmarshal(v, &j); err != nil {
			return err
		}
		if err := index(tx, j, false); err != nil {
			return err
		}
		if f(&j) {
			return q.finish(tx, j)
		}
		if err := put(b, j); err != nil {
			return err
		}
		return index(tx, j, true)
	})
}

// finish saves j, just finished, books it in the order of finishing, and
// removes the finished jobs beyond KeepFinished, those that finished first.
func (q *Bolt) finish(tx *bolt.Tx, j Job) error {
	if err := put(tx.Bucket(bucketJobs), j); err != nil {
		return err
	}
	if j.State == Dead && q.onDead != nil {
		if err := q.onDead(tx, j); err != nil {
			return err
		}
	}
	if err := addCounter(tx, keyOpen, -1); err != nil {
		return err
	}
	order := tx.Bucket(bucketFinished)
	seq, err := order.NextSequence()
	if err != nil {
		return err
	}
	if err := order.Put(seqKey(seq), []byte(j.ID)); err != nil {
		return err
	}
	// Only the oldest entry is ever removed, so the entries are the
	// sequences from the first key's to seq, without a gap.
	c := order.Cursor()
	for k, id := c.First(); k != nil && seq-binary.BigEndian.Uint64(k)+1 > uint64(q.limits.KeepFinished); k, id = c.First() {
		if err := q.prune(tx, id); err != nil {
			return err
		}
		if err := order.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// prune removes the finished job id (a store may have removed it already).
func (q *Bolt) prune(tx *bolt.Tx, id []byte) error {
	b := tx.Bucket(bucketJobs)
	v := b.Get(id)
	if v == nil {
		return nil
	}
	var j Job
	if err := json.Unmarshal(v, &j); err != nil {
		return err
	}
	if j.State != Done && j.State != Dead {
		return nil
	}
	if err := b.Delete(id); err != nil {
		return err
	}
	return addCounter(tx, keyPruned, 1)
}

func (q *Bolt) update(ctx context.Context, f func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return q.db.Update(f)
}

func put(b *bolt.Bucket, j Job) error {
	v, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return b.Put([]byte(j.ID), v)
}

func seqKey(n uint64) []byte { return binary.BigEndian.AppendUint64(nil, n) }

// index adds (or with add false removes) the due-index entry of j: a
// pending job is due at its NotBefore, a leased one when its lease ends; a
// finished job has none.
func index(tx *bolt.Tx, j Job, add bool) error {
	var at time.Time
	switch j.State {
	case Pending:
		at = j.NotBefore
	case Leased:
		at = j.LeaseUntil
	default:
		return nil
	}
	var ns uint64 // the zero time, and any before 1970, sort first
	if at.After(time.Unix(0, 0)) {
		ns = uint64(at.UnixNano())
	}
	k := append(seqKey(ns), j.ID...)
	if add {
		return tx.Bucket(bucketDue).Put(k, nil)
	}
	return tx.Bucket(bucketDue).Delete(k)
}

// dueAt is the time of a due-index key.
func dueAt(k []byte) time.Time { return time.Unix(0, int64(binary.BigEndian.Uint64(k[:8]))) }

// indexAll builds the due index of a file that has none (one written before
// the index existed); in a file that has one it does nothing.
func indexAll(tx *bolt.Tx) error {
	if tx.Bucket(bucketDue) != nil {
		return nil
	}
	if _, err := tx.CreateBucket(bucketDue); err != nil {
		return err
	}
	return tx.Bucket(bucketJobs).ForEach(func(_, v []byte) error {
		var j Job
		if err := json.Unmarshal(v, &j); err != nil {
			return err
		}
		return index(tx, j, true)
	})
}

func counter(tx *bolt.Tx, key []byte) uint64 {
	v := tx.Bucket(bucketMeta).Get(key)
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func addCounter(tx *bolt.Tx, key []byte, delta int) error {
	n := int64(counter(tx, key)) + int64(delta)
	return tx.Bucket(bucketMeta).Put(key, seqKey(uint64(max(n, 0))))
}

package quoteflow

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"quoteflowlab.dev/checkpoints/18/queue"
)

// ErrNoBasket is returned for a basket ID the store does not hold.
var ErrNoBasket = errors.New("quoteflow: no such basket")

// BasketStore keeps baskets as they stand. Put writes a basket and enqueues
// its compensation jobs in one transaction: both are stored, or neither, so
// a crash can never leave a job without its basket. Update is one atomic
// read-modify-write, so two workers finishing lines of one basket at once
// lose neither change.
type BasketStore interface {
	Put(ctx context.Context, b Basket, jobs ...queue.Job) error
	Get(ctx context.Context, id string) (Basket, error)
	// Update applies change to the stored basket and saves it if change
	// reports a change.
	Update(ctx context.Context, id string, change func(*Basket) bool) error
}

// DefaultMaxBaskets is how many baskets a BoltStore keeps: past it, the
// oldest basket is dropped, with its compensation jobs. A basket is at most
// MaxBasketLines lines of three suppliers, so the file stays bounded too.
const DefaultMaxBaskets = 1000

var (
	bucketBaskets     = []byte("baskets")      // ID → JSON basket
	bucketBasketOrder = []byte("basket_order") // sequence → ID, oldest first
)

// BoltStore is a BasketStore in a bbolt file, the same file as its queue.
type BoltStore struct {
	db         *bolt.DB
	queue      *queue.Bolt
	maxBaskets int
}

// NewBoltStore keeps up to maxBaskets baskets (0: DefaultMaxBaskets) in db,
// and their jobs in q, which must be a queue in the same file; the caller
// opens and closes it.
func NewBoltStore(db *bolt.DB, q *queue.Bolt, maxBaskets int) (*BoltStore, error) {
	if q == nil || q.DB() != db {
		return nil, errors.New("quoteflow: basket store: the queue must be in the store's file")
	}
	err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketBaskets, bucketBasketOrder} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("quoteflow: basket store: %w", err)
	}
	if maxBaskets <= 0 {
		maxBaskets = DefaultMaxBaskets
	}
	s := &BoltStore{db: db, queue: q, maxBaskets: maxBaskets}
	q.OnDeadTx(s.buryTx)
	return s, nil
}

// buryTx settles the basket line of a compensation job that has just died,
// in the transaction in which the queue marks it dead: a crash right after
// cannot leave the line queued for ever.
func (s *BoltStore) buryTx(tx *bolt.Tx, j queue.Job) error {
	var c compensation
	if err := json.Unmarshal(j.Body, &c); err != nil || c.BasketID == "" {
		return nil // not a basket's job
	}
	bucket := tx.Bucket(bucketBaskets)
	v := bucket.Get([]byte(c.BasketID))
	if v == nil {
		return nil // its basket is gone
	}
	var b Basket
	if err := json.Unmarshal(v, &b); err != nil {
		return err
	}
	if !b.bury(c.Index, c.Supplier, j.LastReason) {
		return nil
	}
	v, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return bucket.Put([]byte(c.BasketID), v)
}

// Put stores b and enqueues jobs in one transaction, in which it also drops
// the oldest baskets past the store's limit, with their jobs.
func (s *BoltStore) Put(ctx context.Context, b Basket, jobs ...queue.Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		baskets, order := tx.Bucket(bucketBaskets), tx.Bucket(bucketBasketOrder)
		if baskets.Get([]byte(b.ID)) == nil {
			seq, err := order.NextSequence()
			if err != nil {
				return err
			}
			if err := order.Put(binary.BigEndian.AppendUint64(nil, seq), []byte(b.ID)); err != nil {
				return err
			}
		}
		// Only the oldest entry is ever removed, so the entries are the
		// sequences from the first key's to the last, without a gap. The
		// dropped baskets' jobs go first, making room for the new ones.
		c := order.Cursor()
		for k, id := c.First(); k != nil && order.Sequence()-binary.BigEndian.Uint64(k)+1 > uint64(s.maxBaskets); k, id = c.First() {
			if err := baskets.Delete(id); err != nil {
				return err
			}
			if _, err := s.queue.DeleteTx(tx, string(id)+"/"); err != nil {
				return err
			}
			if err := order.Delete(k); err != nil {
				return err
			}
		}
		if err := baskets.Put([]byte(b.ID), v); err != nil {
			return err
		}
		if err := s.queue.EnqueueTx(tx, jobs...); err != nil {
			return err
		}
		return nil
	})
}

func (s *BoltStore) Get(ctx context.Context, id string) (Basket, error) {
	var b Basket
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketBaskets).Get([]byte(id))
		if v == nil {
			return ErrNoBasket
		}
		return json.Unmarshal(v, &b)
	})
	return b, err
}

func (s *BoltStore) Update(ctx context.Context, id string, change func(*Basket) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		bucket := tx.Bucket(bucketBaskets)
		v := bucket.Get([]byte(id))
		if v == nil {
			return ErrNoBasket
		}
		var b Basket
		if err := json.Unmarshal(v, &b); err != nil {
			return err
		}
		if !change(&b) {
			return nil
		}
		v, err := json.Marshal(b)
		if err != nil {
			return err
		}
		return bucket.Put([]byte(id), v)
	})
}

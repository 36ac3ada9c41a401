package quoteflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"quoteflowlab.dev/checkpoints/16/queue"
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

var bucketBaskets = []byte("baskets")

// BoltStore is a BasketStore in a bbolt file, the same file as its queue.
type BoltStore struct {
	db    *bolt.DB
	queue *queue.Bolt
}

// NewBoltStore keeps baskets in db, and their jobs in q, which must be a
// queue in the same file; the caller opens and closes it.
func NewBoltStore(db *bolt.DB, q *queue.Bolt) (*BoltStore, error) {
	if q == nil || q.DB() != db {
		return nil, errors.New("quoteflow: basket store: the queue must be in the store's file")
	}
	err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketBaskets)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("quoteflow: basket store: %w", err)
	}
	return &BoltStore{db: db, queue: q}, nil
}

func (s *BoltStore) Put(ctx context.Context, b Basket, jobs ...queue.Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	v, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketBaskets).Put([]byte(b.ID), v); err != nil {
			return err
		}
		return s.queue.EnqueueTx(tx, jobs...)
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

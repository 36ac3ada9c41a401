package quoteflow

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"quoteflowlab.dev/checkpoints/20/queue"
)

// ErrNoBasket is returned for a basket ID the store does not hold.
var ErrNoBasket = errors.New("quoteflow: no such basket")

// ErrBasketExists is returned by Reserve for an ID the store holds already.
var ErrBasketExists = errors.New("quoteflow: a basket with this ID is stored already")

// ErrStoreUnavailable wraps a failure of the basket store itself (a full
// disk, a damaged file, a store out of reach or too slow for the deadline):
// the handler answers it with 503 {"detail":"store_unavailable","kept":
// "nothing"} ("unknown", with the basket to ask again for, under ErrUnconfirmed).
var ErrStoreUnavailable = errors.New("quoteflow: the basket store is unavailable")

// ErrUnconfirmed wraps, with ErrStoreUnavailable, a write the store was sent
// and did not confirm (a timeout, a connection lost before the reply): it
// may have been made all the same. A refusal, a reply saying it was not
// made, or a connection never opened is not unconfirmed: nothing was kept.
var ErrUnconfirmed = errors.New("quoteflow: the store did not confirm the write; it may have been made")

// BasketStore keeps baskets as they stand. Reserve writes a basket before
// any supplier is asked, so a basket that cannot be stored costs no call.
// Put writes it again, answered, and enqueues its compensation jobs in one
// transaction: both are stored, or neither, so a crash can never leave a
// job without its basket. Update is one atomic read-modify-write, so two
// workers finishing lines of one basket at once lose neither change.
type BasketStore interface {
	// Reserve stores b unless a basket with its ID is held; then it writes
	// nothing and returns the held basket with ErrBasketExists, unless
	// replace(held) says to replace it.
	Reserve(ctx context.Context, b Basket, replace func(held Basket) bool) (Basket, error)
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

// reservePerLine is the room a reservation takes per line, about what the
// line's answer and its three jobs will: the answer reuses those pages, so
// a disk that had room for the reservation has room for the answer.
const reservePerLine = 2 << 10

// Reserve stores b (see BasketStore) in one transaction. The stored value
// is padded to about the size of the answer (reservePerLine): on a full
// disk the reservation fails, before any supplier is asked, rather than
// the answer after.
func (s *BoltStore) Reserve(ctx context.Context, b Basket, replace func(held Basket) bool) (Basket, error) {
	if err := ctx.Err(); err != nil {
		return Basket{}, err
	}
	v, err := json.Marshal(b)
	if err != nil {
		return Basket{}, err
	}
	pad := strings.Repeat(" ", reservePerLine*len(b.Items)) // JSON whitespace: read as b
	v = append(v[:len(v)-1], pad+"}"...)
	var held Basket
	err = s.db.Update(func(tx *bolt.Tx) error {
		if old := tx.Bucket(bucketBaskets).Get([]byte(b.ID)); old != nil {
			if err := json.Unmarshal(old, &held); err != nil {
				return err
			}
			if replace == nil || !replace(held) {
				return ErrBasketExists
			}
		}
		return s.putTx(tx, b.ID, v)
	})
	return held, err
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
	return s.db.Update(func(tx *bolt.Tx) error { return s.putTx(tx, b.ID, v, jobs...) })
}

// putTx writes basket id's value v and enqueues jobs, dropping the oldest
// baskets past the store's limit, with their jobs.
func (s *BoltStore) putTx(tx *bolt.Tx, id string, v []byte, jobs ...queue.Job) error {
	baskets, order := tx.Bucket(bucketBaskets), tx.Bucket(bucketBasketOrder)
	if baskets.Get([]byte(id)) == nil {
		seq, err := order.NextSequence()
		if err != nil {
			return err
		}
		if err := order.Put(binary.BigEndian.AppendUint64(nil, seq), []byte(id)); err != nil {
			return err
		}
	}
	// Only the oldest entry is ever removed, so the entries are the
	// sequences from the first key's to the last, without a gap. The
	// dropped baskets' jobs go first, making room for the new ones.
	c := order.Cursor()
	for k, old := c.First(); k != nil && order.Sequence()-binary.BigEndian.Uint64(k)+1 > uint64(s.maxBaskets); k, old = c.First() {
		if err := baskets.Delete(old); err != nil {
			return err
		}
		if _, err := s.queue.DeleteTx(tx, string(old)+"/"); err != nil {
			return err
		}
		if err := order.Delete(k); err != nil {
			return err
		}
	}
	if err := baskets.Put([]byte(id), v); err != nil {
		return err
	}
	return s.queue.EnqueueTx(tx, jobs...)
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

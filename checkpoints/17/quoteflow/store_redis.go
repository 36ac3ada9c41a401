package quoteflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/17/queue"
)

// ErrStoreUnavailable wraps a failure to reach a RedisStore's server: the
// handler answers it with 503 {"detail":"store_unavailable"}.
var ErrStoreUnavailable = errors.New("quoteflow: the basket store (Redis) is unavailable")

// maxUpdateTries bounds Update's optimistic retries when other processes
// keep changing the same basket.
const maxUpdateTries = 50

// RedisStore is a BasketStore in the Redis server of its queue, so every
// process sharing the queue sees every basket: one process stores a basket,
// another drains its compensation jobs and completes it. A basket and its
// jobs are written by one script (queue.Stream.EnqueueWith); it keeps the
// newest maxBaskets baskets, the oldest dropped with its jobs.
type RedisStore struct {
	queue      *queue.Stream
	rdb        redis.UniversalClient
	maxBaskets int
}

// NewRedisStore keeps up to maxBaskets baskets (0: DefaultMaxBaskets) beside
// the jobs of q, in q's Redis server.
func NewRedisStore(q *queue.Stream, maxBaskets int) (*RedisStore, error) {
	if q == nil {
		return nil, errors.New("quoteflow: basket store: needs its queue")
	}
	if maxBaskets <= 0 {
		maxBaskets = DefaultMaxBaskets
	}
	return &RedisStore{queue: q, rdb: q.Client(), maxBaskets: maxBaskets}, nil
}

// Put stores b and enqueues jobs in one script (see BoltStore.Put).
func (s *RedisStore) Put(ctx context.Context, b Basket, jobs ...queue.Job) error {
	v, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return unavailable(ctx, s.queue.EnqueueWith(ctx, queue.Owner{ID: b.ID, Value: v, Keep: s.maxBaskets}, jobs...))
}

// unavailable marks an error of the Redis server (not the queue's refusal,
// nor the caller's own context) as ErrStoreUnavailable.
func unavailable(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, queue.ErrFull) || errors.Is(err, queue.ErrTooLarge) ||
		errors.Is(err, ErrNoBasket) || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
}

func (s *RedisStore) Get(ctx context.Context, id string) (Basket, error) {
	v, err := s.rdb.Get(ctx, s.queue.OwnerKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Basket{}, ErrNoBasket
	}
	if err != nil {
		return Basket{}, unavailable(ctx, err)
	}
	var b Basket
	return b, json.Unmarshal(v, &b)
}

// Update is one read-modify-write, optimistic: it WATCHes the basket, and
// when another process changed it in between, it reads and applies change
// again, so neither change is lost.
func (s *RedisStore) Update(ctx context.Context, id string, change func(*Basket) bool) error {
	key := s.queue.OwnerKey(id)
	apply := func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			return ErrNoBasket
		}
		if err != nil {
			return err
		}
		var b Basket
		if err := json.Unmarshal(v, &b); err != nil {
			return err
		}
		if !change(&b) {
			return nil
		}
		v, err = json.Marshal(b)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, v, 0)
			return nil
		})
		return err
	}
	for range maxUpdateTries {
		err := s.rdb.Watch(ctx, apply, key)
		if !errors.Is(err, redis.TxFailedErr) {
			return unavailable(ctx, err)
		}
	}
	return fmt.Errorf("quoteflow: basket store: basket %s changed by others %d times in a row", id, maxUpdateTries)
}

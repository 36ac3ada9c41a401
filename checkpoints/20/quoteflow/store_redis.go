package quoteflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/20/queue"
)

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

// Reserve stores b (see BasketStore) in one script, which writes only if
// no basket with b's ID is stored, or if the one stored is still the one
// replace was shown (compare and swap).
func (s *RedisStore) Reserve(ctx context.Context, b Basket, replace func(held Basket) bool) (Basket, error) {
	v, err := json.Marshal(b)
	if err != nil {
		return Basket{}, err
	}
	o := queue.Owner{ID: b.ID, Value: v, Keep: s.maxBaskets, IfAbsent: true}
	for range maxUpdateTries {
		err := s.queue.EnqueueWith(ctx, o)
		if !errors.Is(err, queue.ErrOwnerExists) {
			return Basket{}, unconfirmed(ctx, err)
		}
		raw, err := s.rdb.Get(ctx, s.queue.OwnerKey(b.ID)).Bytes()
		if errors.Is(err, redis.Nil) {
			o.IfValue = nil // dropped in between: try again
			continue
		}
		if err != nil {
			return Basket{}, unavailable(ctx, err)
		}
		var held Basket
		if err := json.Unmarshal(raw, &held); err != nil {
			return Basket{}, err
		}
		if replace == nil || !replace(held) {
			if held, err = s.Get(ctx, b.ID); err != nil { // with the deaths of its jobs
				return Basket{}, err
			}
			return held, ErrBasketExists
		}
		o.IfValue = raw
	}
	return Basket{}, fmt.Errorf("quoteflow: basket store: basket %s changed by others %d times in a row", b.ID, maxUpdateTries)
}

// Put stores b and enqueues jobs in one script (see BoltStore.Put). The
// script writes nothing if it reaches Redis after ctx's deadline (less a
// margin): a write the caller gave up on never lands later.
func (s *RedisStore) Put(ctx context.Context, b Basket, jobs ...queue.Job) error {
	v, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return unconfirmed(ctx, s.queue.EnqueueWith(ctx, queue.Owner{ID: b.ID, Value: v, Keep: s.maxBaskets}, jobs...))
}

// remote: the store is a network away, its writes bounded by the deadline.
func (s *RedisStore) remote() bool { return true }

// unconfirmed is unavailable for a write: a script that may have run though
// no reply came back (it was sent, then a timeout or a lost connection) is
// ErrUnconfirmed as well. A reply from Redis (an error, a refusal, "too
// late") or a connection refused says the write was not made.
func unconfirmed(ctx context.Context, err error) error {
	var reply redis.Error
	if err == nil || errors.Is(err, queue.ErrFull) || errors.Is(err, queue.ErrTooLarge) ||
		errors.Is(err, queue.ErrTooLate) || errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &reply) {
		return unavailable(ctx, err)
	}
	return fmt.Errorf("%w: %w: %w", ErrStoreUnavailable, ErrUnconfirmed, err)
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

// Get reads the basket and the deaths of its jobs, which the queue records
// beside it in the script that marks a job dead, and settles those lines.
func (s *RedisStore) Get(ctx context.Context, id string) (Basket, error) {
	b, err := s.read(ctx, s.rdb, id)
	return b, unavailable(ctx, err)
}

// read is Get on c (the client, or a transaction watching the keys).
func (s *RedisStore) read(ctx context.Context, c redis.Cmdable, id string) (Basket, error) {
	var value *redis.StringCmd
	var dead *redis.MapStringStringCmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		value = p.Get(ctx, s.queue.OwnerKey(id))
		dead = p.HGetAll(ctx, s.queue.DeadKey(id))
		return nil
	})
	if errors.Is(value.Err(), redis.Nil) {
		return Basket{}, ErrNoBasket
	}
	if err != nil {
		return Basket{}, err
	}
	var b Basket
	if err := json.Unmarshal([]byte(value.Val()), &b); err != nil {
		return Basket{}, err
	}
	for line, reason := range dead.Val() { // "index/supplier" → the job's last reason
		i, supplier, _ := strings.Cut(line, "/")
		if index, err := strconv.Atoi(i); err == nil {
			b.bury(index, supplier, reason)
		}
	}
	return b, nil
}

// Update is one read-modify-write, optimistic: it WATCHes the basket, and
// when another process changed it in between, it reads and applies change
// again, so neither change is lost.
func (s *RedisStore) Update(ctx context.Context, id string, change func(*Basket) bool) error {
	key := s.queue.OwnerKey(id)
	apply := func(tx *redis.Tx) error {
		b, err := s.read(ctx, tx, id)
		if err != nil {
			return err
		}
		if !change(&b) {
			return nil
		}
		v, err := json.Marshal(b)
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
		err := s.rdb.Watch(ctx, apply, key, s.queue.DeadKey(id))
		if !errors.Is(err, redis.TxFailedErr) {
			return unavailable(ctx, err)
		}
	}
	return fmt.Errorf("quoteflow: basket store: basket %s changed by others %d times in a row", id, maxUpdateTries)
}

package quota

import (
	"context"
	"errors"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// maxLocalKeys bounds Local's table of rate windows; a key idle for a whole
// window is forgotten first (it has nothing left to count).
const maxLocalKeys = 1024

// Local is a quota held by one process: a semaphore for concurrency (lesson
// 13) and a sliding window per key for the rate. Run three processes with
// Local and the suppliers see three times the limit.
type Local struct {
	sem  *semaphore.Weighted
	rate Rate

	mu     sync.Mutex
	starts map[string][]admitted // per key, the admissions of the last window, oldest first
}

// NewLocal returns a Local quota of limit concurrent calls (limit ≥ 1) and
// rate per key (the zero Rate: none).
func NewLocal(limit int, rate Rate) (*Local, error) {
	if limit < 1 {
		return nil, errors.New("quota: the concurrency limit must be at least 1")
	}
	if err := rate.validate(); err != nil {
		return nil, err
	}
	return &Local{sem: semaphore.NewWeighted(int64(limit)), rate: rate, starts: map[string][]admitted{}}, nil
}

// Acquire takes a slot of the semaphore, waiting in line until ctx ends.
func (l *Local) Acquire(ctx context.Context) error { return l.sem.Acquire(ctx, 1) }

// TryAcquire takes a slot if one is free now, without waiting.
func (l *Local) TryAcquire(context.Context) (bool, error) { return l.sem.TryAcquire(1), nil }

// Release gives a slot back; it panics without a matching Acquire.
func (l *Local) Release() { l.sem.Release(1) }

// admitted is one call let through: when, and what it cost.
type admitted struct {
	at   time.Time
	cost int
}

// Wait admits one call to key within the rate (see Quota).
func (l *Local) Wait(ctx context.Context, key string) error { return l.WaitN(ctx, key, 1) }

// WaitN admits one call of cost to key within the rate (see Quota).
func (l *Local) WaitN(ctx context.Context, key string, cost int) error {
	if l.rate.Unlimited() {
		return nil
	}
	cost = max(cost, 1)
	if cost > l.rate.N {
		return ErrRateLimited // more than the whole window holds
	}
	for {
		wait, err := l.allow(key, cost, time.Now())
		if err != nil || wait == 0 {
			return err
		}
		if !fits(ctx, wait) {
			return ErrRateLimited
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// allow admits one call of cost (≤ rate.N) to key at now (0), or says how
// long until it fits.
func (l *Local) allow(key string, cost int, now time.Time) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	starts, known := l.starts[key]
	if !known && len(l.starts) >= maxLocalKeys {
		l.forgetIdle(now)
		if len(l.starts) >= maxLocalKeys {
			return 0, errors.New("quota: too many rate keys in use at once")
		}
	}
	used := 0
	for len(starts) > 0 && now.Sub(starts[0].at) >= l.rate.Per {
		starts = starts[1:] // out of the window
	}
	for _, a := range starts {
		used += a.cost
	}
	if used+cost > l.rate.N {
		for _, a := range starts { // the oldest leave first
			if used -= a.cost; used+cost <= l.rate.N {
				l.starts[key] = starts
				return a.at.Add(l.rate.Per).Sub(now), nil
			}
		}
	}
	l.starts[key] = append(starts, admitted{now, cost})
	return 0, nil
}

func (l *Local) forgetIdle(now time.Time) {
	for key, starts := range l.starts {
		if len(starts) == 0 || now.Sub(starts[len(starts)-1].at) >= l.rate.Per {
			delete(l.starts, key)
		}
	}
}

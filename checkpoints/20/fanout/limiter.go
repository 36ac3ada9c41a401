package fanout

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Limiter bounds how many calls run at once. One Limiter is shared by
// everything that calls the same suppliers: a limit made per Run is no limit,
// since two runs at once would each admit their own share.
//
// Acquire waits for a slot or for ctx to end (then it returns ctx's error and
// holds nothing); every successful Acquire is paired with one Release. A
// limiter shared by several processes (quota.Redis) also fails with
// quota.ErrUnavailable when it cannot be asked: Run then makes no call and
// reports CodeQuotaUnavailable.
type Limiter interface {
	Acquire(ctx context.Context) error
	Release()
}

// Local is a Limiter for one process: a FIFO semaphore of n slots that
// honours the context while waiting, so time spent in line is paid from the
// caller's deadline.
type Local struct {
	sem   *semaphore.Weighted
	inUse atomic.Int64
	limit int
}

// NewLocal returns a Local limiter with n slots (n ≥ 1).
func NewLocal(n int) *Local {
	if n < 1 {
		panic("fanout: NewLocal needs at least one slot")
	}
	return &Local{sem: semaphore.NewWeighted(int64(n)), limit: n}
}

// Acquire takes a slot, waiting for one or for ctx to end.
func (l *Local) Acquire(ctx context.Context) error {
	if err := l.sem.Acquire(ctx, 1); err != nil {
		return err
	}
	l.inUse.Add(1)
	return nil
}

// TryAcquire takes a slot if one is free now, without waiting, and reports
// whether it did (a hedge asks this way: it never queues).
func (l *Local) TryAcquire(context.Context) (bool, error) {
	if !l.sem.TryAcquire(1) {
		return false, nil
	}
	l.inUse.Add(1)
	return true, nil
}

// Release returns a slot taken by Acquire or TryAcquire.
func (l *Local) Release() {
	l.inUse.Add(-1)
	l.sem.Release(1)
}

// InUse is the number of slots taken now.
func (l *Local) InUse() int { return int(l.inUse.Load()) }

// Limit is the number of slots.
func (l *Local) Limit() int { return l.limit }

package quoteflow

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"quoteflowlab.dev/checkpoints/20/fanout"
	"quoteflowlab.dev/checkpoints/20/hedge"
)

// ErrBusy is returned by Admit and Quote when the inbound limit is reached;
// the handler answers it with 503 {"detail":"capacity_exhausted"} and Retry-After: 1.
var ErrBusy = errors.New("quoteflow: inbound capacity exhausted")

// Admit takes an inbound slot without waiting: ErrBusy when all are taken,
// and then nothing was taken. release returns the slot; calling it again
// does nothing. Quote admits itself; a test can hold a slot with Admit.
//
// Why atomic: in Python one event loop runs the check and the increment with
// no await between them, so no other task can slip in. Go's net/http runs
// each request on its own goroutine, and goroutines run in parallel on many
// OS threads: two handlers can both read 7 and both write 8. The check and
// the increment must be one indivisible step, here a compare-and-swap that
// retries when another goroutine changed the count in between.
func (s *Service) Admit() (release func(), err error) {
	for {
		n := s.active.Load()
		if n >= int64(s.inboundLimit) {
			return nil, ErrBusy
		}
		if s.active.CompareAndSwap(n, n+1) {
			return sync.OnceFunc(func() { s.active.Add(-1) }), nil
		}
	}
}

// ActiveRequests is the number of inbound slots taken now.
func (s *Service) ActiveRequests() int { return int(s.active.Load()) }

// acquireOutbound waits for one of the shared outbound slots, or for ctx to
// end: waiting in line is paid from the same deadline as the call itself.
func (s *Service) acquireOutbound(ctx context.Context) (release func(), err error) {
	if err := s.outbound.Acquire(ctx); err != nil {
		return nil, err
	}
	return s.outbound.Release, nil
}

// OutboundInUse is the number of outbound slots this service holds now,
// for quotes and baskets together.
func (s *Service) OutboundInUse() int { return int(s.outboundInUse.Load()) }

// countedLimiter counts the slots this service holds of a limiter that may
// be shared with others.
type countedLimiter struct {
	fanout.Limiter
	inUse *atomic.Int64
}

func (l *countedLimiter) Acquire(ctx context.Context) error {
	if err := l.Limiter.Acquire(ctx); err != nil {
		return err
	}
	l.inUse.Add(1)
	return nil
}

// TryAcquire takes a slot if the limiter has one free now; a limiter that
// cannot be asked without waiting never has one (no hedge is sent).
func (l *countedLimiter) TryAcquire(ctx context.Context) (bool, error) {
	t, ok := l.Limiter.(hedge.Limiter)
	if !ok {
		return false, nil
	}
	held, err := t.TryAcquire(ctx)
	if held {
		l.inUse.Add(1)
	}
	return held, err
}

func (l *countedLimiter) Release() {
	l.inUse.Add(-1)
	l.Limiter.Release()
}

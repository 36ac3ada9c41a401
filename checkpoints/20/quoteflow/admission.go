package quoteflow

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/fanout"
	"quoteflowlab.dev/checkpoints/20/hedge"
)

// ErrBusy is returned by Admit and Quote when the inbound limit is reached;
// the handler answers it with 503 {"detail":"capacity_exhausted"} and Retry-After: 1.
var ErrBusy = errors.New("quoteflow: inbound capacity exhausted")

// Admit takes an inbound slot without waiting: ErrBusy when all are taken
// (or others wait for one), and then nothing was taken. release returns the
// slot; calling it again does nothing. A test can hold a slot with Admit.
//
// Why atomic: in Python one event loop runs the check and the increment with
// no await between them, so no other task can slip in. Go's net/http runs
// each request on its own goroutine, and goroutines run in parallel on many
// OS threads: two handlers can both read 7 and both write 8. The check and
// the increment must be one indivisible step, here under the limiter's mutex.
func (s *Service) Admit() (release func(), err error) {
	tok, ok := s.inbound.TryAcquire(adaptive.High)
	if !ok {
		return nil, ErrBusy
	}
	return func() { tok.Done(adaptive.Ignore) }, nil
}

// admit takes an inbound slot for a request of priority p. Without
// Config.InboundQueue it is Admit. With one, a request that finds every
// slot taken waits in its line, single quotes before baskets, at most the
// line's target and never past ctx's deadline minus the floor: when it is
// shed (the line full of requests at least as important, its wait over, no
// time left) it gets ErrBusy at once, answered 503 with Retry-After.
// release returns the slot and tells an adaptive inbound limit how the
// request went (adaptive.Ignore: nothing).
func (s *Service) admit(ctx context.Context, p adaptive.Priority) (release func(adaptive.Outcome), err error) {
	door := s.inbound
	if p == adaptive.Low && s.baskets != nil {
		door = s.baskets
	}
	var tok *adaptive.Token
	if !s.inboundQueue {
		t, ok := door.TryAcquire(adaptive.High)
		if !ok {
			return nil, ErrBusy
		}
		tok = t
	} else {
		tok, err = door.Acquire(ctx, p)
		if errors.Is(err, adaptive.ErrShed) {
			return nil, fmt.Errorf("%w: %w", ErrBusy, err)
		}
		if err != nil {
			return nil, err
		}
	}
	return tok.Done, nil
}

// ActiveRequests is the number of inbound slots taken now.
func (s *Service) ActiveRequests() int {
	n := s.inbound.Stats().InFlight
	if s.baskets != nil {
		n += s.baskets.Stats().InFlight
	}
	return n
}

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

// Package hedge sends a second copy of a slow idempotent call — a hedged
// request — and takes whichever copy answers first, cancelling the other.
//
// A call that has not answered by its supplier's recent p95 (Delays) gets a
// copy, only if the shared Budget has a token and the shared Limiter has a
// free slot right now: a hedge never waits in line, because hedging a
// saturated limiter only makes the line longer. When every slot is busy at
// the delay, Do looks again every SlotRetry while the first copy runs and
// the Budget has a token, and takes a slot that has come free (a caller
// waiting in line still gets it first: TryAcquire never passes a waiter).
// Both copies hold a slot of their own. The first success wins and the
// other copy's context is cancelled at once; a failure of one copy lets the
// other finish. A hedge that never reached the supplier (it returned
// ErrNotSent: cancelled while it waited for a rate quota, say) is not
// counted, and its token goes back to the Budget.
//
// Like fanout, it is usable on its own: Do wraps any call that is safe to
// make twice (a GET of a price, never a POST that orders).
package hedge

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Limiter is the shared outbound limit, asked without waiting. TryAcquire
// takes a slot if one is free now and reports whether it did; Release gives
// it back. fanout.Local, quota.Local and quota.Redis are Limiters.
type Limiter interface {
	TryAcquire(ctx context.Context) (bool, error)
	Release()
}

// A Call makes one copy of the call: attempt 1 is the first, 2 the hedge
// (the caller sends the same request ID with X-Attempt: 2). It must honour
// ctx: when ctx is cancelled, it stops and returns. A copy that stopped
// before it sent anything returns an error wrapping ErrNotSent.
type Call[T any] func(ctx context.Context, attempt int) (T, error)

// ErrNotSent, wrapped in a Call's error, says the copy stopped before it
// reached the supplier: a hedge that says so is not counted in the Report,
// and its token is refunded. Any other return counts as sent.
var ErrNotSent = errors.New("hedge: the copy was not sent")

// Policy is what every hedged call of a process shares.
type Policy struct {
	Limiter Limiter // the outbound limit every supplier call holds a slot of (required)
	Budget  *Budget // pays one token per hedge; shared with the retries (required)
	Delays  *Delays // per key, how long before a hedge (required)
	// Floor: no hedge starts with less than this left before ctx's deadline
	// (a copy that cannot finish helps nobody). 0: any time left will do.
	Floor time.Duration
}

// SlotRetry is how often Do looks again for a free slot when the limiter
// was full at the delay: a sibling's hedge may have taken the last slot an
// instant before, and one of the calls in flight frees its slot within a
// fast call's time.
const SlotRetry = 5 * time.Millisecond

// Report says what Do did.
type Report struct {
	Attempts int  // copies sent: 1, or 2 when hedged
	Hedged   bool // a hedge was sent (launched and not ErrNotSent)
	Winner   int  // the attempt whose answer Do returned (1 or 2); 0 when both failed
}

// answer is one copy's result.
type answer[T any] struct {
	v       T
	err     error
	attempt int
}

// Do makes call for key (a supplier), hedging it as the Policy says, and
// returns the first success, or, when every copy sent failed, the first
// copy's failure. The first call is recorded in the Budget (it adds its
// share of a token) and a success's latency, counted from the first copy's
// start, in Delays. Do returns once both copies have returned: the loser,
// cancelled when the winner answered, returns at once; a hedge it learns
// then was never sent leaves the Report and the Budget as if not launched.
// A panic in call is re-raised here.
func Do[T any](ctx context.Context, p *Policy, key string, call Call[T]) (v T, rep Report, err error) {
	p.Budget.First()
	start := time.Now()
	answers := make(chan answer[T], 2)
	var cancels [3]context.CancelFunc
	var panics [3]any
	var wg sync.WaitGroup
	// unsent takes back a hedge that returned without being sent: not a
	// copy sent, not a hedge, its token refunded (as a retry's is).
	unsent := func(a answer[T]) {
		if a.attempt == 2 && errors.Is(a.err, ErrNotSent) && rep.Hedged {
			rep.Attempts, rep.Hedged = rep.Attempts-1, false
			p.Budget.Refund()
		}
	}
	defer func() {
		wg.Wait()
		for drained := false; !drained; { // the loser's answer, in by now
			select {
			case a := <-answers:
				unsent(a)
			default:
				drained = true
			}
		}
		for _, pv := range panics {
			if pv != nil {
				panic(pv)
			}
		}
	}()
	cancelAll := func() {
		for _, c := range cancels {
			if c != nil {
				c()
			}
		}
	}
	defer cancelAll()
	launch := func(attempt int, release func()) {
		cctx, cancel := context.WithCancel(ctx)
		cancels[attempt] = cancel
		wg.Go(func() {
			var a answer[T]
			a.attempt = attempt
			defer func() {
				if pv := recover(); pv != nil {
					panics[attempt] = fmt.Sprintf("hedge: panic in attempt %d: %v\n%s", attempt, pv, debug.Stack())
					a.err = fmt.Errorf("hedge: attempt %d panicked", attempt)
				}
				release() // the slot comes back as soon as the copy has returned
				answers <- a
			}()
			a.v, a.err = call(cctx, attempt)
		})
	}

	rep = Report{Attempts: 1}
	launch(1, func() {})
	running := 1
	timer := time.NewTimer(p.Delays.Delay(key))
	defer timer.Stop()
	var first *answer[T] // the first copy's failure
	for {
		select {
		case <-timer.C:
			release, ok, later := p.trySlot(ctx)
			switch {
			case ok:
				rep.Attempts, rep.Hedged = 2, true
				launch(2, release)
				running++
			case later && p.Budget.HasToken():
				// The limiter was full: look again soon, holding no place in
				// line. (With no token to pay for a hedge, looking would only
				// load the limiter, a round trip each with a shared quota.)
				timer.Reset(SlotRetry)
			}
		case a := <-answers:
			running--
			unsent(a)
			if a.err == nil {
				rep.Winner = a.attempt
				cancelAll() // the loser stops now, and its slot comes back
				p.Delays.Observe(key, time.Since(start))
				return a.v, rep, nil
			}
			if a.attempt == 1 {
				first = &a
			}
			if running == 0 && first != nil {
				return first.v, rep, first.err // a failure is the retries' business, not a hedge's
			}
			if running == 0 {
				return a.v, rep, a.err
			}
		}
	}
}

// trySlot takes, without waiting, what a hedge needs: time left (Floor), a
// free slot of the Limiter, then a token of the Budget. It holds nothing
// when ok is false; later then says the limiter was full, which may change
// while the first copy runs, where too little time left, no token or a
// limiter that failed will not change for this call.
func (p *Policy) trySlot(ctx context.Context) (release func(), ok, later bool) {
	if deadline, has := ctx.Deadline(); has && time.Until(deadline) < p.Floor {
		return nil, false, false
	}
	held, err := p.Limiter.TryAcquire(ctx)
	if err != nil {
		return nil, false, false // the limiter cannot say (a quota store down): no hedge
	}
	if !held {
		return nil, false, true // the limiter is full: a hedge would only lengthen the line
	}
	if !p.Budget.TrySpend() {
		p.Limiter.Release()
		return nil, false, false // no token: in an outage, hedging would double the load
	}
	return p.Limiter.Release, true, false
}

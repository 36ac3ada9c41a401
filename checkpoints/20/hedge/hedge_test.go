package hedge_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"quoteflowlab.dev/checkpoints/20/fanout"
	"quoteflowlab.dev/checkpoints/20/hedge"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// copyRun is what one copy of a call saw: when it started and when it
// ended, counted from the start of Do, and whether it was cancelled.
type copyRun struct {
	started, ended time.Duration
	cancelled      bool
}

// fakeSupplier answers attempt n after its latency (or fails with fail[n]),
// honouring ctx, and records each copy.
type fakeSupplier struct {
	start   time.Time
	latency map[int]time.Duration
	fail    map[int]bool

	mu   sync.Mutex
	runs map[int]copyRun
}

var errSupplier = errors.New("supplier failed")

func (f *fakeSupplier) call(ctx context.Context, attempt int) (int, error) {
	run := copyRun{started: time.Since(f.start)}
	defer func() {
		run.ended = time.Since(f.start)
		f.mu.Lock()
		f.runs[attempt] = run
		f.mu.Unlock()
	}()
	t := time.NewTimer(f.latency[attempt])
	defer t.Stop()
	select {
	case <-t.C:
		if f.fail[attempt] {
			return 0, errSupplier
		}
		return attempt, nil
	case <-ctx.Done():
		run.cancelled = true
		return 0, ctx.Err()
	}
}

func newFake(latency map[int]time.Duration, fail map[int]bool) *fakeSupplier {
	return &fakeSupplier{start: time.Now(), latency: latency, fail: fail, runs: map[int]copyRun{}}
}

// policy is a Policy whose delay for "boreal" is 40 ms (10 latencies of
// 40 ms known), on a limiter of slots and a full budget.
func policy(t *testing.T, slots int) (*hedge.Policy, *fanout.Local) {
	t.Helper()
	lim := fanout.NewLocal(slots)
	d := hedge.NewDelays(hedge.DelayConfig{})
	for range hedge.DefaultMinSamples {
		d.Observe("boreal", 40*time.Millisecond)
	}
	if got := d.Delay("boreal"); got != 40*time.Millisecond {
		t.Fatalf("the delay after 10 latencies of 40ms is %s, want 40ms", got)
	}
	return &hedge.Policy{Limiter: lim, Budget: hedge.NewBudget(hedge.BudgetConfig{}), Delays: d}, lim
}

func TestAStragglerIsHedgedAtTheDelayAndLosesItsCallAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lim := policy(t, 6)
		f := newFake(map[int]time.Duration{1: 1200 * time.Millisecond, 2: 30 * time.Millisecond}, nil)
		v, rep, err := hedge.Do(context.Background(), p, "boreal", f.call)
		took := time.Since(f.start)
		if err != nil || v != 2 {
			t.Fatalf("Do = %d, %v; want the hedge's answer 2", v, err)
		}
		if rep != (hedge.Report{Attempts: 2, Hedged: true, Winner: 2}) {
			t.Errorf("report %+v, want 2 attempts, hedged, won by attempt 2", rep)
		}
		if got := f.runs[2].started; got != 40*time.Millisecond {
			t.Errorf("the hedge started at %s, want exactly the delay, 40ms", got)
		}
		if took != 70*time.Millisecond {
			t.Errorf("Do returned at %s, want 70ms (hedge at 40ms + its 30ms)", took)
		}
		if r := f.runs[1]; !r.cancelled || r.ended != 70*time.Millisecond {
			t.Errorf("the first copy ended at %s (cancelled: %v), want cancelled at 70ms, the instant the hedge answered", r.ended, r.cancelled)
		}
		if n := lim.InUse(); n != 0 {
			t.Errorf("%d slots still held after Do: the hedge's slot did not come back", n)
		}
		if s := p.Budget.Stats(); s.ExtraCalls != 1 || s.FirstCalls != 1 {
			t.Errorf("budget saw %d first calls and %d extra, want 1 and 1", s.FirstCalls, s.ExtraCalls)
		}
	})
}

func TestAFastCallIsNotHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := policy(t, 6)
		f := newFake(map[int]time.Duration{1: 39 * time.Millisecond, 2: time.Millisecond}, nil)
		v, rep, err := hedge.Do(context.Background(), p, "boreal", f.call)
		if err != nil || v != 1 || rep != (hedge.Report{Attempts: 1, Winner: 1}) {
			t.Fatalf("Do = %d, %+v, %v; want 1, one attempt, no hedge", v, rep, err)
		}
		if _, ran := f.runs[2]; ran {
			t.Error("a hedge was sent for a call that answered before the delay")
		}
	})
}

func TestNoHedgeWithoutAToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lim := policy(t, 6)
		p.Budget = hedge.NewBudget(hedge.BudgetConfig{Cap: 1})
		if !p.Budget.TrySpend() { // the one token, gone
			t.Fatal("a new budget of cap 1 has no token")
		}
		f := newFake(map[int]time.Duration{1: 1200 * time.Millisecond, 2: 30 * time.Millisecond}, nil)
		v, rep, err := hedge.Do(context.Background(), p, "boreal", f.call)
		if err != nil || v != 1 || rep.Hedged || rep.Attempts != 1 {
			t.Fatalf("Do = %d, %+v, %v; want the first copy's answer and no hedge", v, rep, err)
		}
		if took := time.Since(f.start); took != 1200*time.Millisecond {
			t.Errorf("Do returned at %s, want 1200ms: the straggler itself", took)
		}
		if _, ran := f.runs[2]; ran {
			t.Error("a hedge was sent with no token in the budget")
		}
		if n := lim.InUse(); n != 0 {
			t.Errorf("%d slots held after Do: a slot taken for a hedge without a token was kept", n)
		}
	})
}

func TestNoHedgeWithoutAFreeSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lim := policy(t, 1)
		if err := lim.Acquire(context.Background()); err != nil { // the first copy's slot, held by its caller
			t.Fatal(err)
		}
		f := newFake(map[int]time.Duration{1: 1200 * time.Millisecond, 2: 30 * time.Millisecond}, nil)
		_, rep, err := hedge.Do(context.Background(), p, "boreal", f.call)
		lim.Release()
		if err != nil || rep.Hedged {
			t.Fatalf("Do = %+v, %v; want no hedge: the limiter was full", rep, err)
		}
		if _, ran := f.runs[2]; ran {
			t.Error("a hedge was sent with no free slot")
		}
		if s := p.Budget.Stats(); s.ExtraCalls != 0 {
			t.Errorf("a hedge never sent spent %d tokens", s.ExtraCalls)
		}
	})
}

// A sibling's call holds the last slot at the delay and gives it back at
// 57 ms: the hedge goes out within SlotRetry of that, not never.
func TestAHedgeTakesASlotThatComesFreeAfterTheDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lim := policy(t, 2)
		for range 2 { // the first copy's slot, held by its caller, and a sibling's
			if err := lim.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		time.AfterFunc(57*time.Millisecond, lim.Release) // the sibling answers
		f := newFake(map[int]time.Duration{1: 1200 * time.Millisecond, 2: 30 * time.Millisecond}, nil)
		v, rep, err := hedge.Do(context.Background(), p, "boreal", f.call)
		lim.Release()
		if err != nil || v != 2 || !rep.Hedged {
			t.Fatalf("Do = %d, %+v, %v; want the hedge's answer: a slot came free at 57ms", v, rep, err)
		}
		if got := f.runs[2].started; got < 57*time.Millisecond || got > 57*time.Millisecond+hedge.SlotRetry {
			t.Errorf("the hedge started at %s, want within %s of 57ms, when the slot came free", got, hedge.SlotRetry)
		}
		if s := p.Budget.Stats(); s.ExtraCalls != 1 || s.Denied != 0 {
			t.Errorf("budget: %d extra calls, %d denied; want 1 and 0 (looking for a slot costs no token)", s.ExtraCalls, s.Denied)
		}
		if n := lim.InUse(); n != 0 {
			t.Errorf("%d slots held after Do, want 0", n)
		}
	})
}

// countingLimiter counts the TryAcquire calls a hedge makes.
type countingLimiter struct {
	hedge.Limiter
	tries atomic.Int64
}

func (l *countingLimiter) TryAcquire(ctx context.Context) (bool, error) {
	l.tries.Add(1)
	return l.Limiter.TryAcquire(ctx)
}

// With the limiter full and no token, a hedge could not be paid for even if
// a slot came free: Do asks the limiter once, not every SlotRetry.
func TestNoTokenNoLookingAgainForASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lim := policy(t, 1)
		if err := lim.Acquire(context.Background()); err != nil { // the first copy's slot
			t.Fatal(err)
		}
		defer lim.Release()
		p.Budget = hedge.NewBudget(hedge.BudgetConfig{Cap: 1})
		if !p.Budget.TrySpend() {
			t.Fatal("a new budget of cap 1 has no token")
		}
		counted := &countingLimiter{Limiter: lim}
		p.Limiter = counted
		f := newFake(map[int]time.Duration{1: 1200 * time.Millisecond, 2: 30 * time.Millisecond}, nil)
		if _, rep, err := hedge.Do(context.Background(), p, "boreal", f.call); err != nil || rep.Hedged {
			t.Fatalf("Do = %+v, %v; want the first copy's answer, no hedge", rep, err)
		}
		if n := counted.tries.Load(); n != 1 {
			t.Errorf("the limiter was asked %d times in the straggler's 1.2 s; want once: with no token, looking again cannot help", n)
		}
	})
}

// A first call waiting in line for a slot gets the one that frees: a hedge
// looking again never passes it.
func TestAHedgeNeverTakesASlotFromACallWaitingInLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lim := policy(t, 2)
		for range 2 {
			if err := lim.Acquire(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		got := make(chan time.Duration, 1)
		done := make(chan struct{})
		start := time.Now()
		go func() { // a first call, in line from 50ms
			defer close(done)
			time.Sleep(50 * time.Millisecond)
			if err := lim.Acquire(context.Background()); err == nil {
				got <- time.Since(start)
				time.Sleep(500 * time.Millisecond) // it holds the slot while the straggler runs
				lim.Release()
			}
		}()
		time.AfterFunc(57*time.Millisecond, lim.Release) // a sibling answers
		f := newFake(map[int]time.Duration{1: 300 * time.Millisecond, 2: 30 * time.Millisecond}, nil)
		v, rep, err := hedge.Do(context.Background(), p, "boreal", f.call)
		lim.Release()
		if err != nil || v != 1 || rep.Hedged {
			t.Fatalf("Do = %d, %+v, %v; want the first copy's answer, no hedge: the freed slot was the waiting call's", v, rep, err)
		}
		if d := <-got; d != 57*time.Millisecond {
			t.Errorf("the call in line got its slot at %s, want 57ms, the instant it came free", d)
		}
		<-done
	})
}

func TestAFailureOfOneLetsTheOtherFinish(t *testing.T) {
	cases := []struct {
		name    string
		latency map[int]time.Duration
		fail    map[int]bool
		want    int
		at      time.Duration
	}{
		{"the first fails after the hedge started", map[int]time.Duration{1: 50 * time.Millisecond, 2: 30 * time.Millisecond}, map[int]bool{1: true}, 2, 70 * time.Millisecond},
		{"the hedge fails", map[int]time.Duration{1: 300 * time.Millisecond, 2: 5 * time.Millisecond}, map[int]bool{2: true}, 1, 300 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, lim := policy(t, 6)
				f := newFake(c.latency, c.fail)
				v, rep, err := hedge.Do(context.Background(), p, "boreal", f.call)
				if err != nil || v != c.want || rep.Winner != c.want || !rep.Hedged {
					t.Fatalf("Do = %d, %+v, %v; want attempt %d's answer", v, rep, err, c.want)
				}
				if took := time.Since(f.start); took != c.at {
					t.Errorf("Do returned at %s, want %s", took, c.at)
				}
				for n, r := range f.runs {
					if r.cancelled {
						t.Errorf("attempt %d was cancelled: a failure of one copy must let the other finish", n)
					}
				}
				if n := lim.InUse(); n != 0 {
					t.Errorf("%d slots held after Do", n)
				}
			})
		})
	}
}

func TestAFailureBeforeTheDelayIsNotHedged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := policy(t, 6)
		f := newFake(map[int]time.Duration{1: 10 * time.Millisecond}, map[int]bool{1: true})
		_, rep, err := hedge.Do(context.Background(), p, "boreal", f.call)
		if !errors.Is(err, errSupplier) || rep.Hedged {
			t.Fatalf("Do = %+v, %v; want the first copy's failure and no hedge (a failure is for the retries)", rep, err)
		}
		if took := time.Since(f.start); took != 10*time.Millisecond {
			t.Errorf("Do returned at %s, want 10ms", took)
		}
	})
}

func TestBothFailingReportsTheFirstCopysFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := policy(t, 6)
		f := newFake(map[int]time.Duration{1: 100 * time.Millisecond, 2: 10 * time.Millisecond}, map[int]bool{1: true, 2: true})
		_, rep, err := hedge.Do(context.Background(), p, "boreal", f.call)
		if !errors.Is(err, errSupplier) || rep.Winner != 0 || rep.Attempts != 2 {
			t.Fatalf("Do = %+v, %v; want both sent, no winner, the supplier's failure", rep, err)
		}
		if took := time.Since(f.start); took != 100*time.Millisecond {
			t.Errorf("Do returned at %s, want 100ms: it waits for the first copy", took)
		}
	})
}

func TestNoHedgeWithLessThanTheFloorLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _ := policy(t, 6)
		p.Floor = 50 * time.Millisecond
		ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond) // 40ms left at the delay
		defer cancel()
		f := newFake(map[int]time.Duration{1: 1200 * time.Millisecond, 2: 5 * time.Millisecond}, nil)
		_, rep, err := hedge.Do(ctx, p, "boreal", f.call)
		if rep.Hedged || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Do = %+v, %v; want no hedge (40ms left, floor 50ms) and the deadline", rep, err)
		}
	})
}

func TestAPanicInACallIsRaisedInDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, lim := policy(t, 6)
		defer func() {
			if recover() == nil {
				t.Error("a panic in the call was swallowed")
			}
			if n := lim.InUse(); n != 0 {
				t.Errorf("%d slots held after a panic", n)
			}
		}()
		hedge.Do(context.Background(), p, "boreal", func(context.Context, int) (int, error) { panic("boom") })
	})
}

// A hedge that never reached the supplier — cut while it waited for room in
// a rate quota when its sibling answered, or refused that room at once — is
// neither counted nor charged: the Report says one copy, no hedge, and its
// token is back in the Budget.
func TestAHedgeNeverSentIsNotCountedAndItsTokenComesBack(t *testing.T) {
	cases := []struct {
		name string
		wait time.Duration // the hedge's wait for room before it would send: 0 refused at once
	}{
		{"cut while it waits for room", time.Second},
		{"refused room at once", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, lim := policy(t, 6)
				start := time.Now()
				var sent atomic.Int64
				call := func(ctx context.Context, attempt int) (int, error) {
					if attempt == 2 {
						if c.wait == 0 {
							return 0, fmt.Errorf("%w: no room in the rate", hedge.ErrNotSent)
						}
						select { // waiting for room in the rate, not yet sent
						case <-time.After(c.wait):
						case <-ctx.Done():
							return 0, fmt.Errorf("%w: %w", hedge.ErrNotSent, ctx.Err())
						}
					}
					sent.Add(1)
					time.Sleep(100 * time.Millisecond) // the first copy answers at 100ms
					return attempt, nil
				}
				v, rep, err := hedge.Do(context.Background(), p, "boreal", call)
				if err != nil || v != 1 {
					t.Fatalf("Do = %d, %v; want the first copy's answer", v, err)
				}
				if took := time.Since(start); took != 100*time.Millisecond {
					t.Errorf("Do returned at %s, want 100ms", took)
				}
				if rep != (hedge.Report{Attempts: 1, Winner: 1}) || sent.Load() != 1 {
					t.Errorf("report %+v with %d copies sent; want 1 attempt, not hedged: the hedge was launched at 40ms and never sent", rep, sent.Load())
				}
				if s := p.Budget.Stats(); s.ExtraCalls != 0 || s.Tokens != hedge.DefaultCap {
					t.Errorf("budget %+v; want no extra call and a full bucket (%g): a token for a hedge never sent is refunded", s, hedge.DefaultCap)
				}
				if n := lim.InUse(); n != 0 {
					t.Errorf("%d slots held after Do", n)
				}
			})
		})
	}
}

package adaptive

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// acquireAsync starts Acquire in a goroutine and returns a channel of its
// answer, with the time it came.
type answer struct {
	tok *Token
	err error
	at  time.Duration
}

func acquireAsync(ctx context.Context, l *Limiter, p Priority, t0 time.Time) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		tok, err := l.Acquire(ctx, p)
		ch <- answer{tok, err, time.Since(t0)}
	}()
	return ch
}

// pending reports whether ch has no answer yet (call after synctest.Wait).
func pending(ch <-chan answer) bool { return len(ch) == 0 }

// A slot given back goes to the highest priority waiting, at that instant;
// within a priority the oldest first.
func TestSlotsGoByPriorityThenAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(Fixed(1), Queue{Target: time.Second, Reserve: time.Millisecond})
		t0 := time.Now()
		holder, err := l.Acquire(t.Context(), Low)
		if err != nil {
			t.Fatal(err)
		}
		low1 := acquireAsync(t.Context(), l, Low, t0)
		synctest.Wait()
		low2 := acquireAsync(t.Context(), l, Low, t0)
		synctest.Wait()
		high := acquireAsync(t.Context(), l, High, t0)
		synctest.Wait()
		if !pending(low1) || !pending(low2) || !pending(high) {
			t.Fatal("a waiter got through while the only slot was held")
		}
		if _, ok := l.TryAcquire(Probe); ok {
			t.Fatal("TryAcquire got a slot that is held")
		}
		time.Sleep(10 * time.Millisecond)
		holder.Done(Success)
		a := <-high
		synctest.Wait()
		if a.err != nil || a.at != 10*time.Millisecond || !pending(low1) {
			t.Fatalf("the slot given back at 10 ms: high %v at %v, low first still waiting %v; want high at 10 ms", a.err, a.at, pending(low1))
		}
		a.tok.Done(Success)
		if a := <-low1; a.err != nil || a.at != 10*time.Millisecond {
			t.Fatalf("then the older low: %v at %v", a.err, a.at)
		} else {
			synctest.Wait()
			if !pending(low2) {
				t.Fatal("the newer low got through with the older one's slot held")
			}
			a.tok.Done(Success)
		}
		b := <-low2
		b.tok.Done(Success)
		if s := l.Stats(); s.InFlight != 0 || s.Waiting != 0 || s.Passed["high"] != 1 || s.Passed["low"] != 3 {
			t.Errorf("stats after: %+v", s)
		}
	})
}

// A waiter waits at most the line's target, and never past its deadline
// minus the reserve; with no time left it is shed at once.
func TestAWaiterIsShedAtItsTargetOrBeforeItsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(Fixed(1), Queue{Target: 50 * time.Millisecond, Reserve: 20 * time.Millisecond})
		holder, _ := l.Acquire(t.Context(), High)
		t0 := time.Now()
		for _, c := range []struct {
			what     string
			deadline time.Duration // 0: none
			want     time.Duration
		}{
			{"no deadline", 0, 50 * time.Millisecond},
			{"a deadline in 60 ms", 60 * time.Millisecond, 40 * time.Millisecond},
			{"a deadline in 20 ms", 20 * time.Millisecond, 0},
			{"a deadline in 5 ms", 5 * time.Millisecond, 0},
		} {
			ctx := t.Context()
			if c.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.deadline)
				defer cancel()
			}
			t0 = time.Now()
			_, err := l.Acquire(ctx, High)
			if took := time.Since(t0); !errors.Is(err, ErrShed) || took != c.want {
				t.Errorf("%s: %v after %v, want ErrShed after %v", c.what, err, took, c.want)
			}
		}
		if s := l.Stats(); s.Shed["high"] != 4 || s.Waiting != 0 {
			t.Errorf("stats: %+v, want 4 high shed, none waiting", s)
		}
		holder.Done(Success)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := l.Acquire(ctx, High); !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled context: %v, want context.Canceled", err)
		}
	})
}

// The line is bounded: when it is full a newcomer takes the place of the
// newest waiter of a lower priority, which is shed at once; a newcomer
// with nobody below it is shed itself.
func TestAFullLineShedsTheLowestPriorityFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(Fixed(1), Queue{Max: 2, Target: time.Second, Reserve: time.Millisecond})
		holder, _ := l.Acquire(t.Context(), High)
		t0 := time.Now()
		low1 := acquireAsync(t.Context(), l, Low, t0)
		synctest.Wait()
		low2 := acquireAsync(t.Context(), l, Low, t0)
		synctest.Wait()
		high := acquireAsync(t.Context(), l, High, t0)
		synctest.Wait()
		if a := <-low2; !errors.Is(a.err, ErrShed) || a.at != 0 {
			t.Errorf("the newest low when a high came to a full line: %v at %v, want ErrShed at once", a.err, a.at)
		}
		if !pending(low1) || !pending(high) {
			t.Fatal("the older low or the high left the line")
		}
		if _, err := l.Acquire(t.Context(), Low); !errors.Is(err, ErrShed) {
			t.Errorf("a low at a full line with nobody below it: %v, want ErrShed at once", err)
		}
		probe := acquireAsync(t.Context(), l, Probe, t0)
		synctest.Wait()
		if a := <-low1; !errors.Is(a.err, ErrShed) {
			t.Errorf("the last low when a probe came: %v, want ErrShed", a.err)
		}
		holder.Done(Success)
		p := <-probe
		synctest.Wait()
		if p.err != nil || !pending(high) {
			t.Fatalf("the slot given back: probe %v, high still waiting %v; want the probe first", p.err, pending(high))
		}
		p.tok.Done(Success)
		h := <-high
		h.tok.Done(Success)
		if s := l.Stats(); s.Shed["low"] != 3 || s.Shed["high"] != 0 {
			t.Errorf("stats: %+v, want 3 low shed, no high", s)
		}
	})
}

// When the limit grows, waiters go through at that instant; a token's
// latency is measured from when it was let through to Done.
func TestAGrowingLimitLetsWaitersThroughAndTokensMeasureLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := New(Config{Initial: 1, Max: 4, Window: 1})
		if err != nil {
			t.Fatal(err)
		}
		l := NewLimiter(lim, Queue{Target: time.Second, Reserve: time.Millisecond})
		t0 := time.Now()
		first, _ := l.Acquire(t.Context(), High)
		waiter := acquireAsync(t.Context(), l, High, t0)
		synctest.Wait()
		time.Sleep(30 * time.Millisecond)
		first.Done(Success) // a window of one call of 30 ms at a busy limit of 1: 1 → 2
		if got := lim.Current(); got != 2 {
			t.Fatalf("after one busy window: limit %d, want 2", got)
		}
		w := <-waiter
		if w.err != nil || w.at != 30*time.Millisecond {
			t.Fatalf("the waiter: %v at %v, want through at 30 ms", w.err, w.at)
		}
		h := lim.History()
		if last := h[len(h)-1]; last.ShortMs != 30 || last.Reason != "grow" {
			t.Errorf("the step: %+v, want a short window of 30 ms, grow", last)
		}
		other := acquireAsync(t.Context(), l, High, t0)
		synctest.Wait()
		o := <-other // the limit is 2, one held: through at once
		time.Sleep(7 * time.Millisecond)
		w.tok.Done(Success)
		w.tok.Done(Dropped) // a second Done does nothing
		o.tok.Done(Ignore)
		h = lim.History()
		if last := h[len(h)-1]; last.ShortMs != 7 || last.Drops != 0 || len(h) != 3 {
			t.Errorf("the step after 7 ms: %+v (%d steps), want short 7 ms, no drop, 3 steps", last, len(h))
		}
		if s := l.Stats(); s.InFlight != 0 {
			t.Errorf("in flight after every Done: %d", s.InFlight)
		}
	})
}

// Under -race: many callers, never more in flight than the limit.
func TestNeverMoreThanTheLimitInFlight(t *testing.T) {
	l := NewLimiter(Fixed(3), Queue{Max: 100, Target: time.Second})
	var now, peak atomic.Int64
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			for range 20 {
				tok, err := l.Acquire(context.Background(), High)
				if err != nil {
					continue
				}
				n := now.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				now.Add(-1)
				tok.Done(Success)
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p > 3 || p < 1 {
		t.Errorf("peak in flight %d, want 1 to 3", p)
	}
}

// A Low call never takes the slots kept for the important ones: of a limit
// of 8 with a quarter kept, six Low calls pass and the seventh waits, while
// two High calls still pass at once; the Low waiter passes only once fewer
// than six calls are in flight, whoever holds them.
func TestLowCallsLeaveTheKeptSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(Fixed(8), Queue{Target: time.Second, Reserve: time.Millisecond, Kept: DefaultKept})
		t0 := time.Now()
		var low, high []*Token
		for range 6 {
			tok, ok := l.TryAcquire(Low)
			if !ok {
				t.Fatalf("Low call %d of 6 refused", len(low)+1)
			}
			low = append(low, tok)
		}
		seventh := acquireAsync(t.Context(), l, Low, t0)
		synctest.Wait()
		if !pending(seventh) {
			t.Fatal("the seventh Low call passed: it took a kept slot")
		}
		for range 2 {
			tok, ok := l.TryAcquire(High)
			if !ok {
				t.Fatalf("High call %d refused with 6 of 8 in flight", len(high)+1)
			}
			high = append(high, tok)
		}
		if _, ok := l.TryAcquire(High); ok {
			t.Fatal("a ninth call passed a limit of 8")
		}
		low[0].Done(Ignore)
		low[1].Done(Ignore)
		synctest.Wait()
		if !pending(seventh) {
			t.Fatal("the Low waiter passed with 6 of 8 in flight (4 Low, 2 High)")
		}
		high[0].Done(Ignore)
		synctest.Wait()
		if a := <-seventh; a.err != nil || a.at != 0 {
			t.Errorf("the Low waiter with 5 in flight: %v at %v, want let through at once", a.err, a.at)
		}
	})
}

// A call let through before the limit's last cut says nothing of the lower
// limit by its latency: it was queued under the higher one. At 20 (its
// maximum; a window of 10, the long average at 50 ms; a step that leaves it
// at 20 is no cut), 20 calls are let
// through at once and all come back at 200 ms (our own process paused,
// say): the first 10 cut the limit to 20 x 0.5 + 2 = 12; the other 10, let
// through before that cut, are no samples (before: a second window at 200
// ms took it to 12 x 0.5 + 2 = 8, and a third would have, for one event).
// Calls let through after the cut count again: 10 at 50 ms grow it to 13.
// A failure is the supplier's own word, whenever its call was let through:
// 13 calls at once, all 503, back it off to 6 after 10; the other 3 and 7
// more failures make the next window: 3.
func TestACallFromBeforeACutIsNoSampleOfItsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := mustNew(t, Config{Initial: 20, Max: 20, Backoff: 0.5})
		l := NewLimiter(lim, Queue{})
		batch := func(n int, rtt time.Duration, o Outcome) {
			toks := make([]*Token, n)
			for i := range toks {
				tok, ok := l.TryAcquire(High)
				if !ok {
					t.Fatalf("call %d of %d: no slot at a limit of %d", i+1, n, lim.Current())
				}
				toks[i] = tok
			}
			time.Sleep(rtt)
			for _, tok := range toks {
				tok.Done(o)
			}
		}
		// The baseline. A step that leaves the limit where it is cuts
		// nothing: 15 calls let through at once, 10 back make a window (20,
		// its maximum, stays), and the other 5 count towards the next with 5
		// more; then one more window: 3 steps.
		toks := make([]*Token, 15)
		for i := range toks {
			toks[i], _ = l.TryAcquire(High)
		}
		time.Sleep(50 * time.Millisecond)
		for _, tok := range toks {
			tok.Done(Success)
		}
		batch(5, 50*time.Millisecond, Success)
		batch(10, 50*time.Millisecond, Success)
		if got, steps := lim.Current(), len(lim.History())-1; got != 20 || steps != 3 {
			t.Fatalf("at the baseline: %d after %d steps, want 20 after 3 (a step that does not lower the limit is no cut)", got, steps)
		}
		batch(20, 200*time.Millisecond, Success)
		if got := lim.Current(); got != 12 {
			t.Errorf("20 calls let through at once, all at 200 ms: %d, want 12 (cut once: the other 10 were let through before the cut)", got)
		}
		batch(10, 50*time.Millisecond, Success)
		if got := lim.Current(); got != 13 {
			t.Errorf("then 10 calls at 50 ms: %d, want 13 (samples again)", got)
		}
		batch(13, time.Millisecond, Dropped)
		if got := lim.Current(); got != 6 {
			t.Errorf("13 calls at once, all failed: %d, want 6 (13 x 0.5, after the first 10)", got)
		}
		batch(6, time.Millisecond, Dropped)
		if got := lim.Current(); got != 6 {
			t.Errorf("6 more failures: %d, want 6 (3 + 6 failures: no window yet)", got)
		}
		batch(1, time.Millisecond, Dropped)
		if got := lim.Current(); got != 3 {
			t.Errorf("a tenth failure: %d, want 3 (6 x 0.5: a failure counts whenever its call was let through)", got)
		}
	})
}

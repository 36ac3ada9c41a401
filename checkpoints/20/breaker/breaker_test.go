package breaker

import (
	"errors"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func mustNew(t *testing.T, cfg Config) *Breaker {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// call lets one call through and records o; it fails the test if refused.
func call(t *testing.T, b *Breaker, o Outcome) {
	t.Helper()
	tk, err := b.Allow()
	if err != nil {
		t.Fatalf("call refused (%v) in state %s", err, b.Stats().State)
	}
	tk.Done(o)
}

func wantState(t *testing.T, b *Breaker, want State, when string) {
	t.Helper()
	if got := b.Stats().State; got != want {
		t.Fatalf("%s: state %s, want %s (%+v)", when, got, want, b.Stats())
	}
}

// Five failures with a minimum of five calls: the fifth opens it, not the
// fourth, and an open breaker refuses at once and counts the refusal.
func TestOpensAtTheMinimumCallsNotOneEarlier(t *testing.T) {
	b := mustNew(t, Config{Window: 10, MinCalls: 5, FailureRate: 0.5})
	for i := 1; i <= 4; i++ {
		call(t, b, Failure)
		wantState(t, b, Closed, "after "+string(rune('0'+i))+" failures")
	}
	call(t, b, Failure)
	wantState(t, b, Open, "after 5 failures")
	if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
		t.Fatalf("open breaker let a call through: %v", err)
	}
	if s := b.Stats(); s.Opened != 1 || s.Refused != 1 {
		t.Errorf("stats %+v, want opened 1, refused 1", s)
	}
}

// The rate is judged over the window: 3 successes then failures open it at
// 3 failures of 6 (50 %), not at 2 of 5 (40 %); older outcomes leave the
// window as new ones come.
func TestOpensAtTheFailureRateOverTheWindow(t *testing.T) {
	b := mustNew(t, Config{Window: 6, MinCalls: 5, FailureRate: 0.5})
	for range 3 {
		call(t, b, Success)
	}
	call(t, b, Failure)
	call(t, b, Failure)
	wantState(t, b, Closed, "2 failures of 5")
	call(t, b, Failure)
	wantState(t, b, Open, "3 failures of 6")

	// A full window slides: 6 outcomes kept, the oldest dropped.
	b = mustNew(t, Config{Window: 4, MinCalls: 4, FailureRate: 0.75})
	for _, o := range []Outcome{Failure, Failure, Success, Success, Success, Failure, Failure} {
		call(t, b, o) // the window ends as S S F F: 50 %
	}
	wantState(t, b, Closed, "2 failures in a window of 4 after 4 failures in all")
	call(t, b, Failure) // S F F F: 75 %
	wantState(t, b, Open, "3 failures of the last 4")
}

// Ignored outcomes and client errors (recorded as Success by the caller)
// never open it.
func TestIgnoredOutcomesDoNotCount(t *testing.T) {
	b := mustNew(t, Config{Window: 5, MinCalls: 2, FailureRate: 0.5})
	for range 50 {
		call(t, b, Ignore)
	}
	if s := b.Stats(); s.Calls != 0 || s.State != Closed {
		t.Fatalf("after 50 ignored: %+v", s)
	}
}

// The cool-down is CoolDown plus Jitter x Rand() of it, to the nanosecond;
// then exactly Probes calls get through, the next is refused; a probe that
// says nothing (Ignore) is given back; Probes successes close it with an
// empty window.
func TestCoolDownProbesAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Window: 4, MinCalls: 2, FailureRate: 0.5, CoolDown: time.Second, Jitter: 0.2, Probes: 2,
			Rand: func() float64 { return 0.5 }})
		call(t, b, Failure)
		call(t, b, Failure)
		opened := time.Now()
		wantState(t, b, Open, "after 2 failures")
		if s := b.Stats(); s.OpenForMs != 1100 {
			t.Errorf("open for %d ms, want 1100 (1 s + 0.2 x 0.5 s)", s.OpenForMs)
		}
		time.Sleep(1100*time.Millisecond - time.Nanosecond)
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Fatalf("1 ns before the cool-down's end: %v, want ErrOpen", err)
		}
		time.Sleep(time.Nanosecond)
		p1, err1 := b.Allow()
		p2, err2 := b.Allow()
		_, err3 := b.Allow()
		if err1 != nil || err2 != nil || !p1.Probe() || !p2.Probe() || !errors.Is(err3, ErrOpen) {
			t.Fatalf("at %v: probes %v %v, third %v; want two probes, the third refused", time.Since(opened), err1, err2, err3)
		}
		wantState(t, b, HalfOpen, "with two probes out")
		p1.Done(Ignore) // given back
		p3, err := b.Allow()
		if err != nil || !p3.Probe() {
			t.Fatalf("a probe given back was not offered again: %v", err)
		}
		p2.Done(Success)
		wantState(t, b, HalfOpen, "one probe of two succeeded")
		p3.Done(Success)
		wantState(t, b, Closed, "both probes succeeded")
		if s := b.Stats(); s.Calls != 0 || s.Failures != 0 {
			t.Errorf("closed with a window of %d calls, %d failures; want it empty", s.Calls, s.Failures)
		}
		call(t, b, Failure)
		wantState(t, b, Closed, "one failure after closing (minimum 2)")
	})
}

// A failed probe opens it again for a new cool-down; a ticket from before
// a state change is ignored.
func TestAFailedProbeReopensAndOldTicketsAreIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Config{Window: 4, MinCalls: 2, FailureRate: 0.5, CoolDown: time.Second, NoJitter: true, Probes: 1})
		late, _ := b.Allow() // a call let through while closed, still running
		call(t, b, Failure)
		call(t, b, Failure)
		time.Sleep(time.Second)
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		late.Done(Success) // from the closed breaker: not a probe's success
		wantState(t, b, HalfOpen, "after an old ticket's success")
		p.Done(Failure)
		wantState(t, b, Open, "after a failed probe")
		if s := b.Stats(); s.OpenForMs != 1000 || s.Opened != 2 {
			t.Errorf("%+v, want open for 1000 ms (no jitter), opened twice", s)
		}
		time.Sleep(time.Second - time.Nanosecond)
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Fatalf("1 ns before the second cool-down's end: %v", err)
		}
	})
}

// With jitter, breakers that opened at the same instant come back at
// different instants, each within [CoolDown, CoolDown·(1+Jitter)].
func TestJitterSpreadsTheCoolDowns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seen := map[int64]bool{}
		for range 20 {
			b := mustNew(t, Config{Window: 2, MinCalls: 1, FailureRate: 1, CoolDown: time.Second, Jitter: 0.5})
			call(t, b, Failure)
			ms := b.Stats().OpenForMs
			if ms < 1000 || ms > 1500 {
				t.Fatalf("open for %d ms, want 1000 to 1500", ms)
			}
			seen[ms] = true
		}
		if len(seen) < 10 {
			t.Errorf("20 breakers opened together come back at only %d distinct ms: %v", len(seen), seen)
		}
	})
}

// Bad numbers are refused by New with a sentence.
func TestConfigRejectsBadNumbers(t *testing.T) {
	for _, c := range []Config{
		{Window: -1}, {Window: MaxWindow + 1}, {Window: 5, MinCalls: 6}, {MinCalls: -1},
		{FailureRate: math.NaN()}, {FailureRate: math.Inf(1)}, {FailureRate: -0.1}, {FailureRate: 1.01},
		{CoolDown: -time.Second}, {CoolDown: MaxCoolDown + 1},
		{Jitter: math.NaN()}, {Jitter: math.Inf(1)}, {Jitter: -0.5}, {Jitter: 1.5},
		{Probes: -1}, {Probes: MaxProbes + 1},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	if _, err := New(Config{}); err != nil {
		t.Errorf("the defaults: %v", err)
	}
}

// Under -race: many callers at once; every call is either let through or
// refused, and the counts add up.
func TestConcurrentCallers(t *testing.T) {
	b := mustNew(t, Config{Window: 50, MinCalls: 10, FailureRate: 0.5, CoolDown: time.Millisecond})
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				tk, err := b.Allow()
				if err != nil {
					mu.Lock()
					refused++
					mu.Unlock()
					continue
				}
				tk.Done(Outcome((g + i) % 3))
			}
		})
	}
	wg.Wait()
	if s := b.Stats(); s.Refused != int64(refused) {
		t.Errorf("stats count %d refused, callers saw %d", s.Refused, refused)
	}
}

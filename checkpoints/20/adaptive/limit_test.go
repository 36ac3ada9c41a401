package adaptive

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

// window feeds one window of n samples of rtt, each with inFlight calls in
// flight, drops of them Dropped, and returns the limit after it.
func window(l *Limit, rtt time.Duration, inFlight, drops int) int {
	n := l.Config().Window
	for i := range n {
		o := Success
		if i < drops {
			o = Dropped
		}
		l.Sample(rtt, inFlight, o)
	}
	return l.Current()
}

// busy feeds windows of rtt, every sample with the limit in flight (a busy
// supplier), and returns the limit after each.
func busy(l *Limit, rtt time.Duration, windows int) []int {
	var got []int
	for range windows {
		got = append(got, window(l, rtt, l.Current(), 0))
	}
	return got
}

func mustNew(t *testing.T, c Config) *Limit {
	t.Helper()
	l, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The limit's steps for a stated latency series, by the defaults (from 4;
// a window of 10 calls; while the window's mean stays within 1.25 x the
// long average, grow by QueueSize 2 x Smoothing 0.5; above it, the new
// limit is limit x 1.25 x long/short + 2, taken whole): 50 ms windows grow
// it by one a window, 5 to 12; 100 ms windows (twice the baseline: a
// queue) shrink it, 12 → 9.5 → 7.94 → 6.96 → 6.35 → 5.97 → 5.73 (12 x
// 0.625 + 2, and so on, towards 2 / (1 - 0.625) = 5.33), and leave the
// long average at 50 ms; back at 50 ms it grows again. A step down is not
// smoothed: taken half, as a step up is, the same windows left it at 10,
// 9, 8, 8, 7, 7, and a supplier whose capacity fell to a third held a
// queue of ours for seconds (lab demo 20 capacity: 3.1 s to a limit of 8).
func TestTheLimitFollowsTheLatencyGradient(t *testing.T) {
	l := mustNew(t, Config{})
	if got := l.Current(); got != 4 {
		t.Fatalf("before any sample: %d, want 4", got)
	}
	if got, want := busy(l, 50*time.Millisecond, 8), []int{5, 6, 7, 8, 9, 10, 11, 12}; !slices.Equal(got, want) {
		t.Fatalf("at the baseline: %v, want %v", got, want)
	}
	if got, want := busy(l, 100*time.Millisecond, 6), []int{9, 7, 6, 6, 5, 5}; !slices.Equal(got, want) {
		t.Errorf("at twice the baseline: %v, want %v (12 x 0.625 + 2 = 9.5 ...)", got, want)
	}
	h := l.History()
	last := h[len(h)-1]
	if last.Reason != "shrink" || last.LongMs != 50 || last.ShortMs != 100 {
		t.Errorf("the last step: %+v, want shrink, long 50 ms (a queue does not move it), short 100 ms", last)
	}
	if got := busy(l, 50*time.Millisecond, 1); got[0] != 6 {
		t.Errorf("back at the baseline: %v, want 6 (5.73 + 1: a step up is taken half)", got)
	}
	if n := len(h); n != 1+14 || h[0].Reason != "start" || h[0].Limit != 4 {
		t.Errorf("history: %d steps from %+v, want the start and 14 windows", n, h[0])
	}
}

// With Allowed (a latency the caller can afford, QuoteFlow's inbound
// limit: half a quote's budget), the gradient is Allowed / the window's
// slowest call, within [0.5, 2], not the baseline's: windows at 50 ms, a
// quarter of Allowed 200 ms (gradient 2), grow it from 4 half-way to
// limit x 2 + 2 each, 7, 11, 18 (without Allowed: 5, 6, 7); windows at
// 200 ms, four times the baseline but within Allowed (gradient 1), grow it
// on by one, 19, 20 (without Allowed they shrank it). One call past
// Allowed and it shrinks, whatever the mean: nine calls at 100 ms and one
// at 300 ms (a mean of 120 ms) take it to 20.25 x 2/3 + 2 = 15.5 at once;
// a window at 400 ms to 15.5 x 0.5 + 2 = 9.75; a window at 800 ms, the
// gradient floored at 0.5, to 6.9. The long average stays at 50 ms.
func TestAnAllowedLatencyIsNoQueue(t *testing.T) {
	l := mustNew(t, Config{Allowed: 200 * time.Millisecond})
	if got, want := busy(l, 50*time.Millisecond, 3), []int{7, 11, 18}; !slices.Equal(got, want) {
		t.Fatalf("at a quarter of Allowed: %v, want %v (gradient 2)", got, want)
	}
	if got, want := busy(l, 200*time.Millisecond, 2), []int{19, 20}; !slices.Equal(got, want) {
		t.Errorf("at Allowed, four times the baseline: %v, want %v (gradient 1: no queue the caller cannot afford)", got, want)
	}
	for i := range l.Config().Window {
		rtt := 100 * time.Millisecond
		if i == 0 {
			rtt = 300 * time.Millisecond
		}
		l.Sample(rtt, l.Current(), Success)
	}
	if got := l.Current(); got != 15 {
		t.Errorf("nine calls at 100 ms and one at 300 ms: %d, want 15 (20.25 x 200/300 + 2 = 15.5: one call past Allowed)", got)
	}
	if got, want := busy(l, 400*time.Millisecond, 1), []int{9}; !slices.Equal(got, want) {
		t.Errorf("at twice Allowed: %v, want %v (15.5 x 0.5 + 2 = 9.75)", got, want)
	}
	if got, want := busy(l, 800*time.Millisecond, 1), []int{6}; !slices.Equal(got, want) {
		t.Errorf("at four times Allowed: %v, want %v (9.75 x 0.5 + 2 = 6.9: the gradient floored at 0.5)", got, want)
	}
	if h := l.History(); h[len(h)-1].Reason != "shrink" || h[len(h)-1].LongMs != 50 {
		t.Errorf("the last step: %+v, want shrink with the long average still 50 ms", h[len(h)-1])
	}
}

// A supplier that serves 8 calls at once at 50 ms and n > 8 in n/8 as
// long: the limit settles where its latency is within the tolerance of the
// baseline (8 x 1.25 + 2 = 12, give or take a window's step), not at its
// maximum, and the long average stays at the baseline. A window a little
// slower than the long average is a queue a little longer: when it moved
// the average, the average crept up a window at a time (here to 51.7 ms in
// 200 windows; in lab demo 20 capacity boreal's limit stood at 15 after
// 30 s at capacity 4, where 7 keeps its latency within the tolerance).
func TestASlowlyGrowingQueueDoesNotMoveTheBaseline(t *testing.T) {
	l := mustNew(t, Config{})
	rtt := func(n int) time.Duration {
		return 50 * time.Millisecond * time.Duration(max(n, 8)) / 8
	}
	var got []int
	for range 200 {
		got = append(got, window(l, rtt(l.Current()), l.Current(), 0))
	}
	if hi := slices.Max(got[100:]); hi > 13 {
		t.Errorf("limits after 100 windows: %v, want at most 13 (the latency within 1.25 x 50 ms)", got[100:])
	}
	if h := l.History(); h[len(h)-1].LongMs != 50 {
		t.Errorf("the long average: %v ms, want the baseline, 50 ms", h[len(h)-1].LongMs)
	}
}

// A window with a failed call (a 503, a timeout) backs off by 0.8 whatever
// its latency; repeated, it stops at the minimum, never 0; growth stops at
// the maximum.
func TestFailuresBackOffToTheMinimumAndGrowthStopsAtTheMaximum(t *testing.T) {
	l := mustNew(t, Config{Initial: 10, Min: 2, Max: 14})
	var got []int
	for range 8 {
		got = append(got, window(l, 10*time.Millisecond, l.Current(), 1))
	}
	// 10 → 8 → 6.4 → 5.12 → 4.096 → 3.28 → 2.62 → 2.1 → 2 (the minimum)
	if want := []int{8, 6, 5, 4, 3, 2, 2, 2}; !slices.Equal(got, want) {
		t.Errorf("a failure in every window: %v, want %v", got, want)
	}
	if h := l.History(); h[len(h)-1].Reason != "backoff" || h[len(h)-1].Drops != 1 || !l.Failing() {
		t.Errorf("the last step: %+v (Failing %v), want backoff with 1 drop, failing", h[len(h)-1], l.Failing())
	}
	got = busy(l, 10*time.Millisecond, 16)
	if l.Failing() {
		t.Error("Failing after windows without a failure, want not")
	}
	if got[len(got)-1] != 14 || slices.Max(got) != 14 {
		t.Errorf("at the baseline for 16 windows: %v, want it to reach 14 and no more", got)
	}
	low := mustNew(t, Config{Initial: 1, Min: 1, Max: 4})
	for range 20 {
		window(low, time.Second, 1, 10)
	}
	if got := low.Current(); got != 1 {
		t.Errorf("only failures from 1: %d, want 1 (never 0: a limit of 0 never asks again)", got)
	}
}

// A window in which fewer than half the limit was ever in flight says
// nothing of a larger limit: the limit holds.
func TestAnIdleWindowHoldsTheLimit(t *testing.T) {
	l := mustNew(t, Config{Initial: 10})
	window(l, 50*time.Millisecond, 10, 0) // 10 → 11
	if got := window(l, 50*time.Millisecond, 5, 0); got != 11 {
		t.Errorf("a window with at most 5 of 11 in flight: %d, want 11", got)
	}
	if h := l.History(); h[len(h)-1].Reason != "hold" {
		t.Errorf("the last step: %+v, want hold", h[len(h)-1])
	}
}

// Calls that say nothing (cancelled, never sent) neither count towards a
// window nor move the limit.
func TestIgnoredCallsAreNotSamples(t *testing.T) {
	l := mustNew(t, Config{})
	for range 100 {
		l.Sample(time.Hour, 4, Ignore)
	}
	if got, h := l.Current(), l.History(); got != 4 || len(h) != 1 {
		t.Errorf("after 100 ignored calls: limit %d, %d steps, want 4 and the start only", got, len(h))
	}
}

// At the minimum the long average follows a slower supplier: the limit is
// not held at its minimum for ever by a baseline it can never meet again.
func TestAtTheMinimumTheBaselineFollowsASlowerSupplier(t *testing.T) {
	l := mustNew(t, Config{Initial: 1, Min: 1, Max: 8})
	busy(l, 50*time.Millisecond, 1)
	got := busy(l, 200*time.Millisecond, 60)
	if got[len(got)-1] < 2 {
		t.Errorf("a supplier four times slower for 60 windows: %v, want the limit off its minimum", got)
	}
}

func TestBadConfigsAreRefused(t *testing.T) {
	for _, c := range []Config{
		{Min: -1}, {Min: 5, Max: 4}, {Initial: 30}, {Initial: 2, Min: 3}, {Window: -1}, {LongWindows: -2},
		{Tolerance: 0.5}, {Tolerance: math.NaN()}, {Tolerance: math.Inf(1)}, {Backoff: 1}, {Backoff: -0.1},
		{Backoff: math.NaN()}, {Smoothing: 1.5}, {Smoothing: math.NaN()}, {QueueSize: -1}, {QueueSize: math.Inf(1)},
		{Allowed: -time.Millisecond},
	} {
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New(%+v): %v, want ErrConfig", c, err)
		}
	}
}

package main

import (
	"net/http"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

// A run of lesson 20's capacity demo, made by hand: the schedule began at
// t0, C 12 from 0 s, 4 from 10 s, 12 from 20 s, a period of 30 s.
func capacityFixture(t0 time.Time) capacityRun {
	return capacityRun{began: t0, sched: provider.CapacitySchedule{
		Steps: []provider.CapacityStep{{FromMs: 0, C: 12}, {FromMs: 10000, C: 4}, {FromMs: 20000, C: 12}}, PeriodMs: 30000}}
}

func capAt(t0 time.Time, startMs, tookMs int, status int, complete bool) capQuote {
	q := capQuote{start: t0.Add(time.Duration(startMs) * time.Millisecond), status: status, complete: complete}
	q.end = q.start.Add(time.Duration(tookMs) * time.Millisecond)
	return q
}

// A quote is good when it is answered 200, complete, within 800 ms; it
// belongs to the phase its start falls in.
func TestCapacityPhasesAndGoodQuotes(t *testing.T) {
	t0 := time.Now()
	r := capacityFixture(t0)
	r.quotes = []capQuote{
		capAt(t0, 0, 800, http.StatusOK, true),      // good: at the deadline
		capAt(t0, 9999, 801, http.StatusOK, true),   // late
		capAt(t0, 10000, 100, http.StatusOK, false), // incomplete, in the second phase
		capAt(t0, 10001, 100, http.StatusServiceUnavailable, false),
		capAt(t0, 25000, 10, http.StatusOK, true),
	}
	for i, want := range []struct{ n, good int }{{2, 1}, {2, 0}, {1, 1}} {
		qs, secs := r.phase(i)
		if len(qs) != want.n || countGood(qs) != want.good || secs != 10 {
			t.Errorf("phase %d: %d quotes, %d good, %g s; want %d, %d, 10 s", i, len(qs), countGood(qs), secs, want.n, want.good)
		}
	}
	if got := p99(r.quotes[:2]); got != int64(801) {
		t.Errorf("p99 of 800 and 801 ms: %v, want 801", got)
	}
}

// The limit's readings: the last one at or before a time, and the time
// from a step to the first reading that meets a bound.
func TestCapacityLimitReadings(t *testing.T) {
	t0 := time.Now()
	r := capacityFixture(t0)
	for i, v := range []int{24, 24, 20, 12, 8, 7} { // one reading every 500 ms from 9 s
		r.trace = append(r.trace, limitSample{at: t0.Add(9*time.Second + time.Duration(i)*500*time.Millisecond),
			limits: map[string]int{"boreal": v}})
	}
	if got := r.limitAt("boreal", 10000); got != 20 {
		t.Errorf("at 10 s: %v, want 20 (the reading at 10.0 s)", got)
	}
	if got := r.until("boreal", 10000, func(v int) bool { return v <= 8 }); got != "1.0" {
		t.Errorf("from 10 s to a limit <= 8: %v, want 1.0 s", got)
	}
	if got := r.until("boreal", 10000, func(v int) bool { return v <= 4 }); got != "never" {
		t.Errorf("to a limit <= 4: %v, want never", got)
	}
	if got := (capacityRun{}).until("boreal", 0, func(int) bool { return true }); got != "-" {
		t.Errorf("without a trace: %v, want -", got)
	}
}

// A call through a limiter is good when it is answered 200 within 800 ms
// of its start; it belongs to the phase its start falls in.
func TestFailsafePhasesAndGoodCalls(t *testing.T) {
	t0 := time.Now()
	c := capacityFixture(t0)
	r := fsRun{began: t0, sched: c.sched}
	at := func(startMs, tookMs, outcome int) fsCall {
		s := t0.Add(time.Duration(startMs) * time.Millisecond)
		return fsCall{start: s, end: s.Add(time.Duration(tookMs) * time.Millisecond), outcome: outcome}
	}
	r.calls = []fsCall{
		at(0, 800, fsOK),       // good: at the deadline
		at(9999, 801, fsOK),    // late
		at(10000, 1, fsShed),   // shed, in the second phase
		at(10001, 100, fsFail), // a 503
		at(25000, 10, fsOK),
	}
	for i, want := range []struct{ n, good int }{{2, 1}, {2, 0}, {1, 1}} {
		cs, secs := r.phase(i)
		good := 0
		for _, c := range cs {
			if c.good() {
				good++
			}
		}
		if len(cs) != want.n || good != want.good || secs != 10 {
			t.Errorf("phase %d: %d calls, %d good, %g s; want %d, %d, 10 s", i, len(cs), good, secs, want.n, want.good)
		}
	}
}

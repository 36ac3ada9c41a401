package provider_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/provider"
)

// capacityStats is /stats' scenarios.capacity as a client reads it.
type capacityStats struct {
	Seed  uint64 `json:"seed"`
	Steps []struct {
		FromMs int64 `json:"from_ms"`
		C      int   `json:"c"`
	} `json:"steps"`
	PeriodMs     int64    `json:"period_ms"`
	BaseMs       [2]int64 `json:"base_ms"`
	ShedBeyond   int      `json:"shed_beyond"`
	LatencyScale float64  `json:"latency_scale"`
	ElapsedMs    *int64   `json:"elapsed_ms"`
	Step         *int     `json:"step"`
	C            *int     `json:"c"`
	InFlight     struct {
		Atlas, Boreal, Cedar int64
	} `json:"in_flight"`
	Queued int64 `json:"queued"`
	Shed   int64 `json:"shed"`
}

func readCapacity(t *testing.T, h http.Handler) capacityStats {
	t.Helper()
	var body struct {
		Scenarios struct {
			Capacity capacityStats `json:"capacity"`
		} `json:"scenarios"`
	}
	getJSON(t, h, "/stats", &body)
	return body.Scenarios.Capacity
}

// hold starts n capacity requests to supplier at once, each with an
// X-Request-ID of its own, and returns when all of them are in flight
// (inside a bubble: blocked in their work); wait waits for their ends.
func hold(h http.Handler, supplier string, n int, tag string) (wait func()) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			serve(h, "GET", "/quotes/"+supplier+"?sku=KB-001&scenario=capacity", "X-Request-ID", fmt.Sprintf("%s-%d", tag, i))
		})
	}
	synctest.Wait()
	return wg.Wait
}

// The schedule and the queue to the nanosecond, in a bubble: C is 12 from
// the first capacity request, 4 from 10 s, 12 from 20 s, and again 12 → 4
// at 30 + 10 s; a call with at most C in flight takes its seeded base
// latency (40-60 ms), the n-th of n > C takes n/C times that, and the one
// beyond 3 × C is answered 503 at once; each supplier has its own C calls;
// /stats shows where the schedule stands and the calls in flight, queued
// and shed; a reset starts it again.
func TestCapacityServesCAtOnceQueuesBeyondAndShedsFarBeyond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := provider.New(provider.Options{LatencyScale: 1, Seed: 7})
		h := p.Routes()
		if c := readCapacity(t, h); c.ElapsedMs != nil || c.C != nil || c.Step != nil || c.PeriodMs != 30000 ||
			c.BaseMs != [2]int64{40, 60} || c.ShedBeyond != 3 || len(c.Steps) != 3 ||
			c.Steps[0].C != 12 || c.Steps[1].FromMs != 10000 || c.Steps[1].C != 4 || c.Steps[2].FromMs != 20000 || c.Steps[2].C != 12 {
			t.Fatalf("before any capacity request: %+v, want the schedule 12 → 4 at 10 s → 12 at 20 s over 30 s, no C yet", c)
		}
		began := time.Now()
		at := func() time.Duration { return time.Since(began) }
		// timed serves one capacity request to atlas with ID id and
		// returns its status and how long it took.
		timed := func(id string) (int, time.Duration) {
			start := time.Now()
			rec := serve(h, "GET", "/quotes/atlas?sku=KB-001&scenario=capacity", "X-Request-ID", id)
			return rec.Code, time.Since(start)
		}
		// The base latency of "probe"'s first request, alone.
		code, base := timed("probe")
		if code != 200 || base < 40*time.Millisecond || base > 60*time.Millisecond {
			t.Fatalf("a call alone: %d in %v, want 200 in 40-60 ms", code, base)
		}
		if c := readCapacity(t, h); c.C == nil || *c.C != 12 || *c.Step != 0 || *c.ElapsedMs != at().Milliseconds() {
			t.Fatalf("after the first request: %+v, want C 12 at step 0", c)
		}
		// A reset forgets "probe": its next request is a first again, the
		// same draw, and starts the schedule again.
		stretched := func(what string, n, capC int) {
			t.Helper()
			p.Reset()
			if capC == 4 {
				start := time.Now()
				hold(h, "cedar", 1, what+"-start")() // begins the schedule
				time.Sleep(10*time.Second - time.Since(start))
			}
			wait := hold(h, "atlas", n-1, what)
			if c := readCapacity(t, h); c.InFlight.Atlas != int64(n-1) || c.InFlight.Cedar != 0 || c.C == nil || *c.C != capC {
				t.Errorf("%s: %+v, want atlas %d in flight, cedar 0, C %d", what, c, n-1, capC)
			}
			code, took := timed("probe")
			want := base
			if n > capC {
				want = time.Duration(float64(base) * float64(n) / float64(capC))
			}
			if code != 200 || took != want {
				t.Errorf("%s: the call %d in flight with C %d: %d in %v, want 200 in %v", what, n, capC, code, took, want)
			}
			wait()
		}
		stretched("at C", 12, 12)
		stretched("one beyond C", 13, 12)
		stretched("three times C", 36, 12)
		stretched("one beyond C 4", 5, 4)
		stretched("three times C 4", 12, 4)

		// The 37th of C = 12 is shed at once; cedar, with none in flight, is not.
		p.Reset()
		began = time.Now()
		wait := hold(h, "atlas", 36, "full")
		if code, took := timed("one-too-many"); code != 503 || took != 0 {
			t.Errorf("the 37th call of C 12: %d in %v, want 503 at once", code, took)
		}
		rec := serve(h, "GET", "/quotes/atlas?sku=KB-001&scenario=capacity")
		wantError(t, recorded(rec), 503, "overloaded")
		if c := readCapacity(t, h); c.Shed != 2 || c.Queued != 24 || c.InFlight.Atlas != 36 {
			t.Errorf("atlas full: %+v, want shed 2, queued 24 (the 13th to 36th), atlas in flight 36", c)
		}
		if rec := serve(h, "GET", "/quotes/cedar?sku=KB-001&scenario=capacity"); rec.Code != 200 {
			t.Errorf("cedar with atlas full: %d, want 200 (each supplier has its own C)", rec.Code)
		}
		wait()
		if c := readCapacity(t, h); c.InFlight.Atlas != 0 {
			t.Errorf("after the calls ended: atlas in flight %d, want 0", c.InFlight.Atlas)
		}

		// The schedule's edges, 1 ms before and at each (boreal before,
		// cedar at: each supplier's calls in flight are its own): 3 x C
		// calls in flight, and the next one is shed at once.
		var waits []func()
		capAt := func(what, supplier string, wantC int) {
			t.Helper()
			waits = append(waits, hold(h, supplier, 3*wantC, what))
			rec := serve(h, "GET", "/quotes/"+supplier+"?sku=KB-001&scenario=capacity")
			if rec.Code != 503 {
				t.Errorf("%s (at %v): %s's call beyond 3 x %d: %d, want 503", what, at(), supplier, wantC, rec.Code)
			}
			if c := readCapacity(t, h); c.C == nil || *c.C != wantC {
				t.Errorf("%s (at %v): /stats says C %v, want %d", what, at(), c.C, wantC)
			}
		}
		p.Reset()
		began = time.Now()
		capAt("the start", "boreal", 12)
		for _, edge := range []struct {
			at     time.Duration
			before int
			after  int
		}{{10 * time.Second, 12, 4}, {20 * time.Second, 4, 12}, {40 * time.Second, 12, 4}} {
			time.Sleep(edge.at - time.Millisecond - at())
			capAt(fmt.Sprintf("1 ms before %v", edge.at), "boreal", edge.before)
			time.Sleep(edge.at - at())
			capAt(fmt.Sprintf("at %v", edge.at), "cedar", edge.after)
		}
		if c := readCapacity(t, h); c.Step == nil || *c.Step != 1 || c.ElapsedMs == nil || *c.ElapsedMs != 10000 {
			t.Errorf("at 40 s: %+v, want step 1, 10000 ms into the period", c)
		}
		for _, w := range waits {
			w()
		}
		p.Reset()
		if c := readCapacity(t, h); c.C != nil || c.Shed != 0 || c.Queued != 0 {
			t.Errorf("after a reset: %+v, want no C, nothing shed or queued", c)
		}
	})
}

// Over real HTTP at --latency-scale 10 (a base latency of 400-600 ms, so
// the calls sent together overlap even on a busy machine): 40 calls at
// once to atlas under C 12 give 36 answers and 4 overloaded 503s at once,
// and the provider counts 24 queued and 4 shed. The only bound is
// generous: every call reaches the lab within the 400 ms the first ones
// take.
func TestCapacityOverHTTPShedsBeyondThreeTimesC(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{LatencyScale: 10, Seed: 3})
	var wg sync.WaitGroup
	results := make([]response, 40)
	start := make(chan struct{})
	for i := range results {
		wg.Go(func() {
			<-start
			results[i] = s.get("/quotes/atlas?sku=KB-001&scenario=capacity", "X-Request-ID", fmt.Sprintf("r%d", i))
		})
	}
	close(start)
	wg.Wait()
	codes := map[int]int{}
	for _, r := range results {
		codes[r.status]++
		if r.status == 503 {
			wantError(t, r, 503, "overloaded")
		}
	}
	if codes[200] != 36 || codes[503] != 4 {
		t.Errorf("40 calls at once under C 12: %v, want 36 x 200 and 4 x 503", codes)
	}
	var st struct {
		Scenarios struct {
			Capacity capacityStats `json:"capacity"`
		} `json:"scenarios"`
	}
	decode(t, s.get("/stats"), 200, &st)
	if c := st.Scenarios.Capacity; c.Queued != 24 || c.Shed != 4 || c.InFlight.Atlas != 0 || c.C == nil || *c.C != 12 {
		t.Errorf("/stats: %+v, want queued 24, shed 4, nothing in flight, C 12", c)
	}
}

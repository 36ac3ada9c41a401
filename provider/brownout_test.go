package provider_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/provider"
)

// brownoutStats is /stats' scenarios.brownout as a client reads it.
type brownoutStats struct {
	Seed         uint64  `json:"seed"`
	Shape        string  `json:"shape"`
	StartMs      int64   `json:"start_ms"`
	EndMs        int64   `json:"end_ms"`
	HangMs       int64   `json:"hang_ms"`
	LatencyScale float64 `json:"latency_scale"`
	ElapsedMs    *int64  `json:"elapsed_ms"`
	Phase        *string `json:"phase"`
	Failed       int64   `json:"failed"`
}

func readBrownout(t *testing.T, h http.Handler) brownoutStats {
	t.Helper()
	var body struct {
		Scenarios struct {
			Brownout brownoutStats `json:"brownout"`
		} `json:"scenarios"`
	}
	getJSON(t, h, "/stats", &body)
	return body.Scenarios.Brownout
}

// The schedule to the millisecond, in a bubble: healthy for 6 s from
// boreal's first brownout request, down until 14 s (503 at once, or a 3 s
// hang then 503; a budget cuts the hang at the budget), healed after; atlas
// and cedar are never down; /stats shows the schedule and where it is; a
// reset starts it again.
func TestBrownoutIsDownFrom6To14sOfItsScheduleInEitherShape(t *testing.T) {
	for _, shape := range []provider.BrownoutShape{provider.Brownout503, provider.BrownoutHang} {
		t.Run(string(shape), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := provider.New(provider.Options{LatencyScale: 1, Seed: 7, BrownoutShape: shape})
				h := p.Routes()
				const path = "/quotes/boreal?sku=KB-001&scenario=brownout"
				if b := readBrownout(t, h); b.ElapsedMs != nil || b.Phase != nil || b.Shape != string(shape) ||
					b.StartMs != 6000 || b.EndMs != 14000 || b.HangMs != 3000 || b.Seed != 7 {
					t.Fatalf("before any brownout request: %+v, want the schedule, no elapsed or phase", b)
				}
				began := time.Now()
				at := func() time.Duration { return time.Since(began) }
				healthy := func(what string) {
					t.Helper()
					start := time.Now()
					rec := serve(h, "GET", path)
					if d := time.Since(start); rec.Code != 200 || d < 20*time.Millisecond || d > 60*time.Millisecond {
						t.Fatalf("%s (at %v): %d in %v, want 200 in 20-60 ms (tail's fast range)", what, at(), rec.Code, d)
					}
				}
				healthy("the first request")
				time.Sleep(6*time.Second - time.Millisecond - at())
				healthy("1 ms before the window")
				time.Sleep(6*time.Second - at())
				start := time.Now()
				rec := serve(h, "GET", path)
				took := time.Since(start)
				wantError(t, recorded(rec), 503, "unavailable")
				if want := map[provider.BrownoutShape]time.Duration{provider.Brownout503: 0, provider.BrownoutHang: 3 * time.Second}[shape]; took != want {
					t.Errorf("inside the window boreal answered 503 after %v, want %v", took, want)
				}
				if rec := serve(h, "GET", "/quotes/atlas?sku=KB-001&scenario=brownout"); rec.Code != 200 {
					t.Errorf("atlas inside the window: %d", rec.Code)
				}
				start = time.Now()
				rec = serve(h, "GET", path, "X-Budget-Ms", "800")
				took = time.Since(start)
				if shape == provider.BrownoutHang {
					wantError(t, recorded(rec), 504, "budget_exhausted")
					if took != 800*time.Millisecond {
						t.Errorf("hang with an 800 ms budget: %v", took)
					}
				} else {
					wantError(t, recorded(rec), 503, "unavailable")
				}
				b := readBrownout(t, h)
				if b.Phase == nil || *b.Phase != "down" || b.ElapsedMs == nil || *b.ElapsedMs != at().Milliseconds() || b.Failed != 2 {
					t.Errorf("inside the window: %+v, want phase down, elapsed %d, failed 2", b, at().Milliseconds())
				}
				time.Sleep(14*time.Second - time.Millisecond - at())
				if rec := serve(h, "GET", path); rec.Code != 503 {
					t.Errorf("1 ms before the end: %d, want 503", rec.Code)
				}
				time.Sleep(14*time.Second - at())
				healthy("at the end of the window")
				if b := readBrownout(t, h); b.Phase == nil || *b.Phase != "healed" {
					t.Errorf("after the window: %+v, want phase healed", b)
				}
				p.Reset()
				if b := readBrownout(t, h); b.Phase != nil || b.Failed != 0 {
					t.Errorf("after a reset: %+v, want no phase, failed 0", b)
				}
				healthy("the first request after a reset")
			})
		})
	}
}

// Over real HTTP, a tenth of the schedule (--latency-scale 0.1: down from
// 600 to 1400 ms, a hang of 300 ms) against a client whose read limit is
// 150 ms: every request well before the window is quoted, every one well
// inside it fails (503, or the client's timeout for the hang), every one
// well after it is quoted again. Bounds are generous: 150 ms either side
// of each edge is not judged.
func TestBrownoutOverHTTPFailsInsideItsWindowThenHeals(t *testing.T) {
	for _, shape := range []provider.BrownoutShape{provider.Brownout503, provider.BrownoutHang} {
		t.Run(string(shape), func(t *testing.T) {
			t.Parallel()
			s := newTestServer(t, provider.Options{LatencyScale: 0.1, BrownoutShape: shape})
			const (
				start, end = 600 * time.Millisecond, 1400 * time.Millisecond
				slack      = 150 * time.Millisecond
				readLimit  = 150 * time.Millisecond
			)
			type outcome struct {
				at     time.Duration
				status int
				err    error
			}
			var got []outcome
			began := time.Now()
			for time.Since(began) < end+400*time.Millisecond {
				at := time.Since(began)
				// The read limit only where a hang may come (the window and its
				// edges); elsewhere a bound that a busy machine's slow request
				// (the first one, under -race) stays far inside: a CI run's
				// first request took over 150 ms to answer 200.
				limit := readLimit
				if at < start-slack || at > end+slack {
					limit = 5 * time.Second
				}
				ctx, cancel := context.WithTimeout(context.Background(), limit)
				r, err := s.do(ctx, http.MethodGet, "/quotes/boreal?sku=KB-001&scenario=brownout")
				cancel()
				got = append(got, outcome{at, r.status, err})
				time.Sleep(10 * time.Millisecond)
			}
			var before, inside, after int
			for _, o := range got {
				failed := o.status == 503 && o.err == nil // shape 503: at once
				if shape == provider.BrownoutHang {
					failed = errors.Is(o.err, context.DeadlineExceeded) // hung past the read limit
				}
				switch {
				case o.at < start-slack:
					before++
					if o.status != 200 {
						t.Errorf("%v (before the window): %d %v, want 200", o.at, o.status, o.err)
					}
				case o.at > start+slack && o.at < end-slack:
					inside++
					if !failed {
						t.Errorf("%v (inside the window): %d %v, want it to fail (shape %s)", o.at, o.status, o.err, shape)
					}
				case o.at > end+slack:
					after++
					if o.status != 200 {
						t.Errorf("%v (after the window): %d %v, want 200", o.at, o.status, o.err)
					}
				}
			}
			if before == 0 || inside == 0 || after == 0 {
				t.Fatalf("judged %d before, %d inside, %d after the window: too few to judge", before, inside, after)
			}
			var st struct {
				Scenarios struct {
					Brownout brownoutStats `json:"brownout"`
				} `json:"scenarios"`
			}
			decode(t, s.get("/stats"), 200, &st)
			b := st.Scenarios.Brownout
			if b.StartMs != 600 || b.EndMs != 1400 || b.HangMs != 300 || b.Shape != string(shape) ||
				b.Phase == nil || *b.Phase != "healed" || b.Failed < int64(inside) {
				t.Errorf("/stats brownout %+v, want 600-1400 ms, hang 300, shape %s, healed, failed ≥ %d", b, shape, inside)
			}
		})
	}
}

// Only a checkpoint of lesson 19 or later is offered brownout, and an
// unknown scenario's message names it.
func TestBrownoutArrivesInLesson19(t *testing.T) {
	if has := strings.Join(provider.ScenariosUpTo(18), ","); strings.Contains(has, "brownout") {
		t.Errorf("checkpoint 18 is offered %s", has)
	}
	if has := strings.Join(provider.ScenariosUpTo(19), ","); !strings.Contains(has, "brownout") {
		t.Errorf("checkpoint 19 is not offered brownout: %s", has)
	}
}

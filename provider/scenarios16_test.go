package provider_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/provider"
)

// The shapes of /stats/requests?id= as a client reads them.
type attemptEntry struct {
	ArrivalMs    float64 `json:"arrival_ms"`
	Status       int     `json:"status"`
	End          string  `json:"end"`
	DurationMs   float64 `json:"duration_ms"`
	RetryAfterMs *int64  `json:"retry_after_ms"`
}

type requestLog struct {
	ID         string                    `json:"id"`
	Attempts   map[string]int64          `json:"attempts"`
	Log        map[string][]attemptEntry `json:"log"`
	LogDropped int64                     `json:"log_dropped"`
}

// getJSON serves a GET in process and decodes a 200 body into v.
func getJSON(t *testing.T, h http.Handler, target string, v any) {
	t.Helper()
	decode(t, recorded(serve(h, "GET", target)), 200, v)
}

// statsMap is /stats as a generic map, for fields a test reads by name.
func statsMap(t *testing.T, h http.Handler) map[string]any {
	t.Helper()
	var m map[string]any
	getJSON(t, h, "/stats", &m)
	return m
}

func TestRatelimitedAdmitsFiveIn200msAndTellsWhenASlotFrees(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := provider.New(provider.Options{LatencyScale: 0})
		h := p.Routes()
		const path = "/quotes/boreal?sku=KB-001&scenario=ratelimited"
		for i := range 5 {
			if rec := serve(h, "GET", path); rec.Code != 200 {
				t.Fatalf("request %d at t=0: %d %s, want 200", i+1, rec.Code, rec.Body)
			}
		}
		// atlas and cedar are not limited and take no slot.
		for _, sup := range []string{"atlas", "cedar"} {
			if rec := serve(h, "GET", "/quotes/"+sup+"?sku=KB-001&scenario=ratelimited"); rec.Code != 200 {
				t.Fatalf("%s: %d", sup, rec.Code)
			}
		}
		limited := func(id, wantMs string) {
			t.Helper()
			rec := serve(h, "GET", path, "X-Request-ID", id)
			wantError(t, recorded(rec), http.StatusTooManyRequests, "rate_limited")
			if ra, ram := rec.Header().Get("Retry-After"), rec.Header().Get("Retry-After-Ms"); ra != "1" || ram != wantMs {
				t.Errorf("Retry-After %q, Retry-After-Ms %q; want 1 and %s", ra, ram, wantMs)
			}
		}
		limited("e", "200") // the sixth at t=0: the first slot frees at t=200
		time.Sleep(50 * time.Millisecond)
		limited("e", "150") // back early: 150 ms before its slot
		time.Sleep(150 * time.Millisecond)
		// t=200: the five from t=0 have left the window.
		if rec := serve(h, "GET", path, "X-Request-ID", "e"); rec.Code != 200 {
			t.Fatalf("at t=200: %d %s, want 200", rec.Code, rec.Body)
		}
		for range 4 {
			serve(h, "GET", path)
		}
		time.Sleep(100 * time.Millisecond)
		limited("f", "100") // sliding: the window (100, 300] holds five

		st := statsMap(t, h)
		if st["rate_limited"] != 3.0 || st["early_retries"] != 1.0 {
			t.Errorf("rate_limited %v, early_retries %v; want 3 and 1", st["rate_limited"], st["early_retries"])
		}
		var rl requestLog
		getJSON(t, h, "/stats/requests?id=e", &rl)
		b := rl.Log["boreal"]
		if rl.Attempts["boreal"] != 3 || len(b) != 3 {
			t.Fatalf("id e: %+v, want 3 boreal attempts logged", rl)
		}
		for i, want := range []struct {
			arrival float64
			status  int
			retry   int64
		}{{0, 429, 200}, {50, 429, 150}, {200, 200, 0}} {
			got := b[i]
			if got.ArrivalMs != want.arrival || got.Status != want.status || got.End != "done" {
				t.Errorf("attempt %d: %+v, want arrival_ms %v, status %d, end done", i+1, got, want.arrival, want.status)
			}
			if (want.retry == 0) != (got.RetryAfterMs == nil) || (got.RetryAfterMs != nil && *got.RetryAfterMs != want.retry) {
				t.Errorf("attempt %d: retry_after_ms %v, want %d (none for 200)", i+1, got.RetryAfterMs, want.retry)
			}
		}
		// A reset empties the window.
		p.Reset()
		for range 5 {
			if rec := serve(h, "GET", path); rec.Code != 200 {
				t.Fatalf("after reset: %d", rec.Code)
			}
		}
	})
}

func TestOutageIs503For1500msFromTheFirstRequestAfterAReset(t *testing.T) {
	for _, tc := range []struct {
		scale float64
		down  time.Duration
	}{{1, 1500 * time.Millisecond}, {0.5, 750 * time.Millisecond}} {
		synctest.Test(t, func(t *testing.T) {
			p := provider.New(provider.Options{LatencyScale: tc.scale})
			h := p.Routes()
			const path = "/quotes/boreal?sku=KB-001&scenario=outage"
			// Before its first outage request boreal is fine in other scenarios.
			if rec := serve(h, "GET", "/quotes/boreal?sku=KB-001"); rec.Code != 200 {
				t.Fatal(rec.Code)
			}
			start := time.Now()
			wantError(t, recorded(serve(h, "GET", path)), 503, "unavailable")
			if rec := serve(h, "GET", "/quotes/atlas?sku=KB-001&scenario=outage"); rec.Code != 200 {
				t.Errorf("atlas in outage: %d", rec.Code)
			}
			time.Sleep(tc.down - time.Millisecond - time.Since(start))
			wantError(t, recorded(serve(h, "GET", path)), 503, "unavailable")
			time.Sleep(time.Millisecond)
			if rec := serve(h, "GET", path); rec.Code != 200 {
				t.Errorf("scale %v: at %v: %d %s, want recovered", tc.scale, time.Since(start), rec.Code, rec.Body)
			}
			p.Reset() // the next outage request starts a new outage
			wantError(t, recorded(serve(h, "GET", path)), 503, "unavailable")
		})
	}
}

func TestRequestLogShowsArrivalStatusEndAndDurationPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := provider.New(provider.Options{LatencyScale: 1})
		h := p.Routes()
		const id = "L"
		serve(h, "GET", "/quotes/boreal?sku=KB-001", "X-Request-ID", id)                                     // t 0-30: done
		serve(h, "GET", "/quotes/boreal?sku=KB-001&scenario=slow", "X-Request-ID", id, "X-Budget-Ms", "100") // 30-130: abandoned
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(200 * time.Millisecond)
			cancel()
		}()
		req := httptest.NewRequestWithContext(ctx, "GET", "/quotes/boreal?sku=KB-001&scenario=slow", nil)
		req.Header.Set("X-Request-ID", id)
		h.ServeHTTP(httptest.NewRecorder(), req) // 130-330: client_gone
		// One still running when the log is read.
		running, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			req := httptest.NewRequestWithContext(running, "GET", "/quotes/cedar?sku=KB-001&scenario=slow", nil)
			req.Header.Set("X-Request-ID", id)
			h.ServeHTTP(httptest.NewRecorder(), req)
		}()
		defer func() { stop(); <-done }()
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		var rl requestLog
		getJSON(t, h, "/stats/requests?id="+id, &rl)
		want := []attemptEntry{
			{ArrivalMs: 0, Status: 200, End: "done", DurationMs: 30},
			{ArrivalMs: 30, Status: 504, End: "abandoned", DurationMs: 100},
			{ArrivalMs: 130, Status: 0, End: "client_gone", DurationMs: 200},
		}
		b := rl.Log["boreal"]
		if len(b) != len(want) {
			t.Fatalf("boreal log %+v, want %d attempts", b, len(want))
		}
		for i := range want {
			if b[i].ArrivalMs != want[i].ArrivalMs || b[i].Status != want[i].Status || b[i].End != want[i].End ||
				b[i].DurationMs != want[i].DurationMs || b[i].RetryAfterMs != nil {
				t.Errorf("boreal attempt %d: %+v, want %+v", i+1, b[i], want[i])
			}
		}
		if c := rl.Log["cedar"]; len(c) != 1 || c[0].End != "running" || c[0].ArrivalMs != 330 || c[0].DurationMs != 10 {
			t.Errorf("cedar log %+v, want one attempt running since 330 ms (10 ms so far)", c)
		}
		if a := rl.Log["atlas"]; a == nil || len(a) != 0 {
			t.Errorf("atlas log %v, want [] (present, empty)", a)
		}
		stop()
		<-done

		// The log keeps at most 32 attempts per id; the counts keep counting.
		for range 40 {
			serve(h, "GET", "/quotes/atlas?sku=KB-001", "X-Request-ID", id, "X-Budget-Ms", "0")
		}
		getJSON(t, h, "/stats/requests?id="+id, &rl)
		kept := len(rl.Log["atlas"]) + len(rl.Log["boreal"]) + len(rl.Log["cedar"])
		if rl.Attempts["atlas"] != 40 || kept != 32 || rl.LogDropped != 44-32 {
			t.Errorf("after 44 attempts: counts %v, %d logged, log_dropped %d; want atlas 40, 32 logged, 12 dropped",
				rl.Attempts, kept, rl.LogDropped)
		}
	})
}

func TestUnknownScenarioNamesEveryScenario(t *testing.T) {
	h := provider.New(provider.Options{}).Routes()
	r := recorded(serve(h, "GET", "/quotes/atlas?sku=KB-001&scenario=sleepy"))
	wantError(t, r, 400, "unknown_scenario")
	var body struct{ Detail string }
	json.Unmarshal([]byte(r.body), &body)
	for _, name := range []string{"normal", "slow", "broken", "malformed", "flaky", "gzip", "reset", "mismatch", "ratelimited", "outage"} {
		if !strings.Contains(body.Detail, name) {
			t.Errorf("detail %q does not name %s", body.Detail, name)
		}
	}
}

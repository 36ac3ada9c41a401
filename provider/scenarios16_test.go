package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	for _, name := range []string{"normal", "slow", "broken", "malformed", "flaky", "gzip", "reset", "mismatch", "ratelimited", "outage", "costlimited"} {
		if !strings.Contains(body.Detail, name) {
			t.Errorf("detail %q does not name %s", body.Detail, name)
		}
	}
}

func TestCostlimitedAdmits100UnitsOfQtyIn1sAndTellsWhenTheyFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := provider.New(provider.Options{LatencyScale: 0})
		h := p.Routes()
		path := func(qty int) string {
			return fmt.Sprintf("/quotes/boreal?sku=KB-001&scenario=costlimited&qty=%d", qty)
		}
		ok := func(target string) {
			t.Helper()
			if rec := serve(h, "GET", target); rec.Code != 200 {
				t.Fatalf("%s: %d %s, want 200", target, rec.Code, rec.Body)
			}
		}
		limited := func(target, id, wantMs, wantRA string) {
			t.Helper()
			rec := serve(h, "GET", target, "X-Request-ID", id)
			wantError(t, recorded(rec), http.StatusTooManyRequests, "cost_limited")
			if ra, ram := rec.Header().Get("Retry-After"), rec.Header().Get("Retry-After-Ms"); ra != wantRA || ram != wantMs {
				t.Errorf("%s: Retry-After %q, Retry-After-Ms %q; want %s and %s", target, ra, ram, wantRA, wantMs)
			}
		}
		// t=0: 40 + 40 units; a third order of 40 would make 120.
		ok(path(40))
		ok(path(40))
		// Few calls, but big ones: the third call is refused where a limit
		// of calls (ratelimited admits 5 in 200 ms) would let it through.
		limited(path(40), "big", "1000", "1") // both 40s must leave: at t=1000
		ok(path(20))                          // 100 exactly: admitted
		limited(path(1), "one", "1000", "1")  // not even one unit more
		// atlas and cedar are never limited.
		for _, sup := range []string{"atlas", "cedar"} {
			if rec := serve(h, "GET", "/quotes/"+sup+"?sku=KB-001&scenario=costlimited&qty=100"); rec.Code != 200 {
				t.Fatalf("%s: %d", sup, rec.Code)
			}
		}
		time.Sleep(300 * time.Millisecond)
		limited(path(40), "big", "700", "1") // back early: 700 ms before it fits
		time.Sleep(700 * time.Millisecond)
		// t=1000: the first three admissions (100 units) leave together.
		ok(path(100))
		time.Sleep(400 * time.Millisecond)
		limited(path(1), "late", "600", "1") // sliding: (400, 1400] holds the 100
		// No qty costs 1; qty is the order's quantity, 1 to 100.
		time.Sleep(600 * time.Millisecond)
		ok("/quotes/boreal?sku=KB-001&scenario=costlimited")
		for _, bad := range []string{"0", "101", "-1", "2.5", "+3", "", "1e2"} {
			wantError(t, recorded(serve(h, "GET", "/quotes/boreal?sku=KB-001&scenario=costlimited&qty="+bad)), 400, "bad_parameter")
		}
		wantError(t, recorded(serve(h, "GET", "/quotes/atlas?sku=KB-001&qty=3&qty=3")), 400, "bad_parameter")

		var st provider.Stats
		getJSON(t, h, "/stats", &st)
		if st.CostLimited != 4 || st.RateLimited != 0 || st.PerStatus["429"] != 4 || st.EarlyRetries != 1 {
			t.Errorf("cost_limited %d, rate_limited %d, 429s %d, early_retries %d; want 4, 0, 4 and 1",
				st.CostLimited, st.RateLimited, st.PerStatus["429"], st.EarlyRetries)
		}
		if st.CostAdmitted != 40+40+20+100+1 {
			t.Errorf("cost_admitted %d, want 201 (boreal's admitted qty)", st.CostAdmitted)
		}
		if c := st.Scenarios.CostLimited; c.MaxCost != 100 || c.WindowMs != 1000 || c.MaxQty != 100 {
			t.Errorf("scenarios.costlimited %+v, want max_cost 100, window_ms 1000, max_qty 100", c)
		}
		var rl requestLog
		getJSON(t, h, "/stats/requests?id=big", &rl)
		if b := rl.Log["boreal"]; len(b) != 2 || b[0].RetryAfterMs == nil || *b[0].RetryAfterMs != 1000 || b[1].RetryAfterMs == nil || *b[1].RetryAfterMs != 700 {
			t.Errorf("id big: log %+v, want two 429s with retry_after_ms 1000 and 700", b)
		}
		// A reset empties the window.
		p.Reset()
		ok(path(100))
	})
}

// The window holds at most costMax admissions (every cost is at least 1):
// a flood of qty=1 requests keeps it at its bound, never growing it.
func TestCostlimitedWindowIsBoundedUnderAFlood(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		h := provider.New(provider.Options{LatencyScale: 0}).Routes()
		admitted := 0
		for range 10 {
			for range 1000 {
				if serve(h, "GET", "/quotes/boreal?sku=KB-001&scenario=costlimited").Code == 200 {
					admitted++
				}
			}
			time.Sleep(1000 * time.Millisecond)
		}
		if admitted != 10*100 {
			t.Errorf("admitted %d of 10 000 unit requests over 10 windows, want exactly 1000", admitted)
		}
	})
}

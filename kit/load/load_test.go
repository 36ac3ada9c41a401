package load

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

// fakeQuoteFlow answers every quote after 20 ms with boreal failed
// (timeout) and counts the requests in flight at once.
type fakeQuoteFlow struct {
	inFlight, peak, total atomic.Int64
	calls                 *atomic.Int64 // the fake provider's call counter
}

func (f *fakeQuoteFlow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
	f.total.Add(1)
	f.calls.Add(3)
	time.Sleep(20 * time.Millisecond)
	if r.URL.Path == "/api/baskets" {
		json.NewEncoder(w).Encode(map[string]any{"pending": 1, "items": []any{
			map[string]any{"status": "complete", "failures": []any{}},
			map[string]any{"status": "partial", "failures": []any{map[string]string{"supplier": "boreal", "code": "rate_limited"}}},
		}})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"failures": []any{map[string]string{"supplier": "boreal", "code": "timeout"}}})
}

func fakeProvider(calls *atomic.Int64) *httptest.Server {
	var mu sync.Mutex
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		json.NewEncoder(w).Encode(provider.Stats{Total: calls.Load(), PerSupplier: provider.PerSupplier{Boreal: calls.Load() / 3}, RateLimited: calls.Load() / 3})
	}))
}

func TestConcurrencyRunSendsExactlyNAndCountsWhatCameBack(t *testing.T) {
	var calls atomic.Int64
	calls.Store(30) // counted before the run: not in the difference
	qf := &fakeQuoteFlow{calls: &calls}
	srv := httptest.NewServer(qf)
	defer srv.Close()
	prov := fakeProvider(&calls)
	defer prov.Close()

	r, err := Run(context.Background(), Config{Targets: []string{srv.URL}, Request: "quote", Concurrency: 4, Requests: 20, Provider: prov.URL})
	if err != nil {
		t.Fatal(err)
	}
	if got := qf.total.Load(); got != 20 || r.Requests != 20 {
		t.Errorf("QuoteFlow saw %d requests, report says %d; want 20", got, r.Requests)
	}
	if p := qf.peak.Load(); p != 4 {
		t.Errorf("peak in flight at QuoteFlow = %d, want 4 (--concurrency 4)", p)
	}
	if r.Statuses["200"] != 20 || r.Failures["timeout"] != 20 {
		t.Errorf("statuses %v failures %v; want 200: 20 and timeout: 20", r.Statuses, r.Failures)
	}
	if r.LatencyMs.P50 < 20 || r.LatencyMs.Max < r.LatencyMs.P99 || r.LatencyMs.P99 < r.LatencyMs.P50 {
		t.Errorf("latency %+v: want p50 >= 20 ms (the fake's delay) and p50 <= p99 <= max", r.LatencyMs)
	}
	var inHist uint64
	for _, b := range r.Histogram {
		inHist += b.Count
	}
	if inHist != 20 {
		t.Errorf("histogram holds %d requests, want 20", inHist)
	}
	if r.Provider == nil || r.Provider.Calls != 60 || r.Provider.RateLimited != 20 || r.Provider.PerSupplier["boreal"] != 20 {
		t.Errorf("provider difference %+v: want 60 calls (3 per quote), 20 429s, boreal 20", r.Provider)
	}
}

func TestBasketRunCountsLinesAndRoundRobins(t *testing.T) {
	var calls atomic.Int64
	a, b := &fakeQuoteFlow{calls: &calls}, &fakeQuoteFlow{calls: &calls}
	sa, sb := httptest.NewServer(a), httptest.NewServer(b)
	defer sa.Close()
	defer sb.Close()
	r, err := Run(context.Background(), Config{Targets: []string{sa.URL, sb.URL}, Request: "basket", Lines: 2, Rate: 200, Requests: 10})
	if err != nil {
		t.Fatal(err)
	}
	if a.total.Load() != 5 || b.total.Load() != 5 {
		t.Errorf("round robin: %d and %d requests, want 5 and 5", a.total.Load(), b.total.Load())
	}
	if r.Lines["complete"] != 10 || r.Lines["partial"] != 10 || r.Failures["rate_limited"] != 10 || r.Pending != 10 {
		t.Errorf("lines %v failures %v pending %d", r.Lines, r.Failures, r.Pending)
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Targets: []string{"http://127.0.0.1:9100"}, Request: "quote", Concurrency: 1, Requests: 1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]Config{
		"remote target":   {Targets: []string{"http://192.0.2.1:9100"}, Request: "quote", Concurrency: 1, Requests: 1},
		"no end":          {Targets: ok.Targets, Request: "quote", Concurrency: 1},
		"rate and conc":   {Targets: ok.Targets, Request: "quote", Concurrency: 1, Rate: 2, Requests: 1},
		"51 lines":        {Targets: ok.Targets, Request: "basket", Lines: 51, Concurrency: 1, Requests: 1},
		"remote provider": {Targets: ok.Targets, Request: "quote", Concurrency: 1, Requests: 1, Provider: "http://192.0.2.1:9101"},
		"rate 0.0001":     {Targets: ok.Targets, Request: "quote", Rate: 0.0001, Requests: 1}, // was rounded to 0: no pacing
		"rate 1e10":       {Targets: ok.Targets, Request: "quote", Rate: 1e10, Requests: 1},   // panicked
		"rate NaN":        {Targets: ok.Targets, Request: "quote", Rate: math.NaN(), Requests: 1},
		"rate +Inf":       {Targets: ok.Targets, Request: "quote", Rate: math.Inf(1), Requests: 1},
		"rate -1":         {Targets: ok.Targets, Request: "quote", Rate: -1, Requests: 1},
		"first too late":  {Targets: ok.Targets, Request: "quote", Rate: 0.1, Duration: 5 * time.Second},
		"negative conc":   {Targets: ok.Targets, Request: "quote", Rate: 1, Concurrency: -1, Requests: 1},
		"conc 1001":       {Targets: ok.Targets, Request: "quote", Concurrency: MaxConcurrency + 1, Requests: 1},
		"timeout -1s":     {Targets: ok.Targets, Request: "quote", Concurrency: 1, Requests: 1, Timeout: -time.Second},
		"query":           {Targets: []string{"http://127.0.0.1:9100?x=1"}, Request: "quote", Concurrency: 1, Requests: 1},
		"empty query":     {Targets: []string{"http://127.0.0.1:9100/?"}, Request: "quote", Concurrency: 1, Requests: 1},
		"fragment":        {Targets: []string{"http://127.0.0.1:9100#x"}, Request: "quote", Concurrency: 1, Requests: 1},
		"user":            {Targets: []string{"http://me@127.0.0.1:9100"}, Request: "quote", Concurrency: 1, Requests: 1},
		"path":            {Targets: []string{"http://127.0.0.1:9100/api"}, Request: "quote", Concurrency: 1, Requests: 1},
	} {
		if c.Validate() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A rate is kept to the nanosecond, however slow: 0.0125/s is one request
// every 80 s (three decimals made it 13 per 1000 s, one every 76.9 s; and
// anything under 0.0005/s no pacing at all).
func TestRatePacesAsAsked(t *testing.T) {
	for _, r := range []float64{MinRate, 0.0125, 0.37, 3, 333, MaxRate} {
		p := Config{Rate: r}.pacer()
		want := float64(time.Second) / r
		for _, hits := range []uint64{0, 9} {
			wait, stop := p.Pace(0, hits)
			if stop || math.Abs(float64(wait)-want*float64(hits+1)) > float64(hits+1) {
				t.Errorf("rate %g: after %d requests the next waits %v (stop %v), want %v", r, hits, wait, stop, time.Duration(want*float64(hits+1)))
			}
		}
	}
	if _, stop := (Config{Concurrency: 2, Requests: 3}).pacer().Pace(0, 3); !stop {
		t.Error("--requests 3: the pacer does not stop after 3")
	}
}

// Once the run stops sending, Progress says so and how many are in flight.
func TestProgressTellsSendingFromWaiting(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	defer close(release) // before Close: the handlers must end
	seen := make(chan Progress, 100)
	var once sync.Once
	done := make(chan Report, 1)
	go func() {
		r, _ := Run(context.Background(), Config{Targets: []string{srv.URL}, Request: "quote", Concurrency: 2, Requests: 2,
			Progress: func(p Progress) {
				if !p.Sending && p.Sent == 2 {
					once.Do(func() { seen <- p })
				}
			}})
		done <- r
	}()
	select {
	case p := <-seen:
		if p.Answered != 0 {
			t.Errorf("progress %+v: want 0 answered while both wait", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no progress said sending had stopped with 2 in flight within 10 s")
	}
	release <- struct{}{}
	release <- struct{}{}
	if r := <-done; r.Requests != 2 {
		t.Errorf("report says %d requests, want 2", r.Requests)
	}
}

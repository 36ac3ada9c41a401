package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"
)

// The tail distribution over many keys: about 2 % stragglers, every
// latency inside its range, and both ranges covered end to end.
func TestTailDrawsAbout2PercentStragglersInTheirRanges(t *testing.T) {
	p := New(Options{LatencyScale: 1, Seed: DefaultSeed})
	st := p.state.Load()
	const n = 200000
	slow := 0
	lo := [2]time.Duration{time.Hour, time.Hour}
	var hi [2]time.Duration
	for i := range n {
		c := &supplierCall{call: call{st: st}, supplier: i % 3, id: fmt.Sprintf("req-%d", i/3), nth: int64(i % 2)}
		d := tailLatency(p, c)
		k := 0
		if d >= tailSlowMin {
			k = 1
			slow++
		}
		lo[k], hi[k] = min(lo[k], d), max(hi[k], d)
		if (k == 0 && (d < tailFastMin || d >= tailFastMax)) || (k == 1 && d >= tailSlowMax) {
			t.Fatalf("draw %d: %v, outside 20-60 ms and 1000-1500 ms", i, d)
		}
	}
	if pct := float64(slow) / n * 100; pct < 1.85 || pct > 2.15 {
		t.Errorf("%.2f %% stragglers over %d draws, want about 2 %%", pct, n)
	}
	if lo[0] > 21*time.Millisecond || hi[0] < 59*time.Millisecond || lo[1] > 1010*time.Millisecond || hi[1] < 1490*time.Millisecond {
		t.Errorf("fast draws span %v-%v, stragglers %v-%v; want each range covered", lo[0], hi[0], lo[1], hi[1])
	}
	if got := st.stragglers.Load(); got != int64(slow) {
		t.Errorf("stragglers counter %d, want %d", got, slow)
	}
}

// tailID finds an X-Request-ID whose first draw at supplier is slow (or
// not) and whose second draw is slow (or not), for the seed.
func tailID(t *testing.T, seed uint64, supplier int, firstSlow, secondSlow bool) string {
	t.Helper()
	for i := range 100000 {
		id := fmt.Sprintf("hedge-%d", i)
		a, _ := tailDraw(seed, supplier, id, 0)
		b, _ := tailDraw(seed, supplier, id, 1)
		if a == firstSlow && b == secondSlow {
			return id
		}
	}
	t.Fatal("no such ID in 100000")
	return ""
}

// get serves one GET in process from a loopback client.
func get(h http.Handler, ctx context.Context, target, id string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:9101"+target, nil)
	req.RemoteAddr = "127.0.0.1:40000"
	if id != "" {
		req.Header.Set("X-Request-ID", id)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// A hedged pair at the provider: the first request of an ID straggles, a
// second copy starts 100 ms later and answers after its own (fast) draw,
// and the caller hangs up on the first the moment the second answers. The
// lab counts the second as hedged and the first as lost_cancelled, logs
// both, and every latency is the draw, to the millisecond.
func TestTailHedgedPairAndTheLoserCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const seed = 42
		p := New(Options{LatencyScale: 1, Seed: seed})
		h := p.Routes()
		boreal := supplierIndex("boreal")
		id := tailID(t, seed, boreal, true, false)
		st := p.state.Load()
		first := tailLatency(p, &supplierCall{call: call{st: st}, supplier: boreal, id: id, nth: 0})
		second := tailLatency(p, &supplierCall{call: call{st: st}, supplier: boreal, id: id, nth: 1})
		st.stragglers.Store(0) // the two draws above were only a preview
		const path = "/quotes/boreal?sku=KB-001&scenario=tail"

		ctx, hangUp := context.WithCancel(context.Background())
		firstDone := make(chan int)
		go func() { firstDone <- get(h, ctx, path, id).Code }()
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		if rec := get(h, context.Background(), path, id); rec.Code != 200 {
			t.Fatalf("the hedge: %d %s", rec.Code, rec.Body)
		}
		if took := time.Since(start); took != second {
			t.Errorf("the hedge took %v, want its own draw %v", took, second)
		}
		hangUp() // the caller cancels the loser at once
		<-firstDone

		s := p.Snapshot()
		if s.Hedged != 1 || s.LostCancelled != 1 || s.ClientGone != 1 || s.Stragglers != 1 {
			t.Errorf("hedged %d, lost_cancelled %d, client_gone %d, stragglers %d; want 1 each", s.Hedged, s.LostCancelled, s.ClientGone, s.Stragglers)
		}
		var rl RequestStats
		json.Unmarshal(get(h, context.Background(), "/stats/requests?id="+id, "").Body.Bytes(), &rl)
		b := rl.Log.Boreal
		if len(b) != 2 {
			t.Fatalf("log %+v, want two boreal attempts", rl.Log)
		}
		wantFirst := Attempt{ArrivalMs: 0, Status: 0, End: "client_gone", DurationMs: durationMs(100*time.Millisecond + second), LostCancelled: true}
		wantSecond := Attempt{ArrivalMs: 100, Status: 200, End: "done", DurationMs: durationMs(second), Hedged: true}
		if b[0] != wantFirst || b[1] != wantSecond {
			t.Errorf("log\n%+v\n%+v\nwant\n%+v\n%+v", b[0], b[1], wantFirst, wantSecond)
		}
		if first < tailSlowMin || b[0].DurationMs >= durationMs(first) {
			t.Errorf("the straggler's draw %v; it was cut at %v ms", first, b[0].DurationMs)
		}
	})
}

// What is not a lost hedge: a retry after the first answered (not hedged
// at all), a pair whose loser is left to finish (hedged, not lost), and a
// request whose caller gives up with no sibling answered (client_gone only).
func TestTailRetriesAndUncancelledPairsAreNotLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Options{LatencyScale: 1, Seed: 7})
		h := p.Routes()
		boreal := supplierIndex("boreal")
		const path = "/quotes/boreal?sku=KB-001&scenario=tail"
		// A retry: one after the other.
		get(h, context.Background(), path, "seq")
		get(h, context.Background(), path, "seq")
		// A pair, both left to answer.
		id := tailID(t, 7, boreal, true, false)
		done := make(chan struct{})
		go func() { get(h, context.Background(), path, id); close(done) }()
		time.Sleep(10 * time.Millisecond)
		get(h, context.Background(), path, id)
		<-done
		// A caller that gives up alone.
		alone := tailID(t, 7, boreal, true, true)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		get(h, ctx, path, alone)
		cancel()
		s := p.Snapshot()
		if s.Hedged != 1 || s.LostCancelled != 0 || s.ClientGone != 1 {
			t.Errorf("hedged %d, lost_cancelled %d, client_gone %d; want 1, 0, 1", s.Hedged, s.LostCancelled, s.ClientGone)
		}
	})
}

// The same seed and the same requests give the same latencies; another
// seed other ones; a hedge (the ID's second request) its own draw; atlas
// and cedar have tails too.
func TestTailIsReproducibleAndKeyedByEachPart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		run := func(seed uint64) []time.Duration {
			h := New(Options{LatencyScale: 1, Seed: seed}).Routes()
			var out []time.Duration
			for i := range 60 {
				for _, sup := range Suppliers {
					start := time.Now()
					if rec := get(h, context.Background(), "/quotes/"+sup+"?sku=KB-001&scenario=tail", fmt.Sprintf("r-%d", i/2)); rec.Code != 200 {
						t.Fatalf("%d %s", rec.Code, rec.Body)
					}
					out = append(out, time.Since(start))
				}
			}
			return out
		}
		a, b, c := run(1), run(1), run(2)
		same, diffSeed, diffSupplier, diffNth := 0, 0, 0, 0
		for i := range a {
			if a[i] == b[i] {
				same++
			}
			if a[i] != c[i] {
				diffSeed++
			}
			if i%3 != 0 && a[i] != a[i-1] {
				diffSupplier++
			}
			if i%6 >= 3 && a[i] != a[i-3] {
				diffNth++
			}
		}
		if same != len(a) {
			t.Errorf("seed 1 twice: %d of %d latencies equal, want all", same, len(a))
		}
		if diffSeed < len(a)*9/10 || diffSupplier < len(a)*2/3*9/10 || diffNth < len(a)/2*9/10 {
			t.Errorf("differences: seed %d/%d, supplier %d/%d, request number %d/%d; want nearly all",
				diffSeed, len(a), diffSupplier, len(a)*2/3, diffNth, len(a)/2)
		}
	})
}

// The same pair as a QuoteFlow sends it, each copy with X-Budget-Ms: the
// straggler's plan overruns its budget (counted abandoned), but its caller
// hangs up long before the budget runs out, the moment the hedge answers:
// it ended client_gone, a lost hedge, not work the lab stopped at the budget.
func TestTailLostHedgeWithABudgetEndsClientGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const seed = 42
		p := New(Options{LatencyScale: 1, Seed: seed})
		h := p.Routes()
		boreal := supplierIndex("boreal")
		id := tailID(t, seed, boreal, true, false)
		const path = "/quotes/boreal?sku=KB-001&scenario=tail"
		getBudget := func(ctx context.Context) int {
			req := httptest.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:9101"+path, nil)
			req.RemoteAddr = "127.0.0.1:40000"
			req.Header.Set("X-Request-ID", id)
			req.Header.Set("X-Budget-Ms", "700")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code
		}
		ctx, hangUp := context.WithCancel(context.Background())
		firstDone := make(chan int)
		go func() { firstDone <- getBudget(ctx) }()
		time.Sleep(100 * time.Millisecond)
		if code := getBudget(context.Background()); code != 200 {
			t.Fatalf("the hedge answered %d", code)
		}
		hangUp()
		<-firstDone

		s := p.Snapshot()
		if s.Hedged != 1 || s.LostCancelled != 1 || s.ClientGone != 1 || s.Abandoned != 1 {
			t.Errorf("hedged %d, lost_cancelled %d, client_gone %d, abandoned %d; want 1 each", s.Hedged, s.LostCancelled, s.ClientGone, s.Abandoned)
		}
		var rl RequestStats
		json.Unmarshal(get(h, context.Background(), "/stats/requests?id="+id, "").Body.Bytes(), &rl)
		if b := rl.Log.Boreal; len(b) != 2 || b[0].End != "client_gone" || !b[0].LostCancelled {
			t.Errorf("boreal log %+v: want the straggler ended client_gone, lost_cancelled", b)
		}
	})
}

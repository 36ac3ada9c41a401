package quoteflow

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/checkpoints/20/hedge"
	"quoteflowlab.dev/checkpoints/20/quota"
)

// straggler answers a first copy (no X-Attempt) never — it waits for its
// context and notes when that ended — and a hedge (X-Attempt: 2) after
// 20 ms with a normal quote. It keeps the headers of every call.
type straggler struct {
	start time.Time
	mu    sync.Mutex
	cut   []time.Duration // when each first copy saw its context end
	seen  []http.Header
}

func (s *straggler) reply(r *http.Request, _ int) (*http.Response, error) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Header.Clone())
	s.mu.Unlock()
	if r.Header.Get("X-Attempt") == "" {
		<-r.Context().Done()
		s.mu.Lock()
		s.cut = append(s.cut, time.Since(s.start))
		s.mu.Unlock()
		return nil, r.Context().Err()
	}
	return after(20*time.Millisecond, normal)(r, 0)
}

// fixedDelay hedges every call at exactly d.
func fixedDelay(d time.Duration) hedge.DelayConfig { return hedge.DelayConfig{Floor: d, Ceiling: d} }

func callsOf(calls []Calls, supplier string) Calls {
	for _, c := range calls {
		if c.Supplier == supplier {
			return c
		}
	}
	return Calls{}
}

func TestAStragglingSupplierIsHedgedWithTheSameIDAndTheLoserCutAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &straggler{start: time.Now()}
		fake := newFake(map[string]reply{"boreal": st.reply})
		s := newService(t, Config{Transport: fake, Hedge: fixedDelay(60 * time.Millisecond)})
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(st.start); got != 80*time.Millisecond {
			t.Errorf("the quote answered after %v, want exactly 80ms (hedge at 60ms + its 20ms)", got)
		}
		if got := codes(res)["boreal"]; got != "" {
			t.Errorf("boreal failed with %q; the hedge had answered", got)
		}
		if c := callsOf(res.Calls, "boreal"); c.Attempts != 2 || !c.Hedged {
			t.Errorf("boreal's calls %+v, want 2 attempts, hedged", c)
		}
		if c := callsOf(res.Calls, "atlas"); c.Attempts != 1 || c.Hedged {
			t.Errorf("atlas's calls %+v, want 1 attempt, not hedged", c)
		}
		ids := fake.IDs("boreal")
		if len(ids) != 2 || ids[0] != res.RequestID || ids[1] != res.RequestID {
			t.Errorf("boreal saw X-Request-IDs %v, want the quote's %s twice", ids, res.RequestID)
		}
		if len(st.seen) != 2 || st.seen[0].Get("X-Attempt") != "" || st.seen[1].Get("X-Attempt") != "2" {
			t.Errorf("X-Attempt headers %q, %q; want none on the first copy and 2 on the hedge",
				st.seen[0].Get("X-Attempt"), st.seen[len(st.seen)-1].Get("X-Attempt"))
		}
		if len(st.cut) != 1 || st.cut[0] != 80*time.Millisecond {
			t.Errorf("the first copy was cut at %v, want once, at 80ms: the instant the hedge answered", st.cut)
		}
		if n, open, held := fake.InFlight(), fake.OpenBodies(), s.outboundInUse.Load(); n != 0 || open != 0 || held != 0 {
			t.Errorf("after the quote: %d calls at the supplier, %d bodies open, %d slots held; want 0, 0, 0", n, open, held)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/budget", nil))
		var b ExtraStats
		if err := json.Unmarshal(rec.Body.Bytes(), &b); err != nil || rec.Code != http.StatusOK {
			t.Fatalf("GET /api/budget: %d %s", rec.Code, rec.Body)
		}
		if b.ExtraCalls != 1 || b.Hedges != 1 || b.Retries != 0 || b.FirstCalls != 3 {
			t.Errorf("GET /api/budget = %+v, want 3 first calls, 1 extra: the hedge", b)
		}
		if want := hedge.DefaultCap - 1; b.Tokens < want || b.Tokens > want+0.01 {
			t.Errorf("tokens %g, want %g (a full bucket, capped, less the hedge; plus the minimum rate of 80ms)", b.Tokens, want)
		}
	})
}

func TestHedgesNeverTakeMoreThanTheOutboundLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &straggler{start: time.Now()}
		fake := newFake(map[string]reply{"atlas": st.reply, "boreal": st.reply, "cedar": st.reply})
		s := newService(t, Config{Transport: fake, OutboundLimit: 3, Hedge: fixedDelay(60 * time.Millisecond)})
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if p := fake.Peak(); p != 3 {
			t.Errorf("peak calls at the suppliers = %d, want 3: the limit, no hedge beside it", p)
		}
		for _, c := range res.Calls {
			if c.Hedged || c.Attempts != 1 {
				t.Errorf("%s: %+v; want no hedge, every slot was taken", c.Supplier, c)
			}
		}
		if st := s.ExtraStats(); st.ExtraCalls != 0 {
			t.Errorf("hedges never sent spent %d tokens", st.ExtraCalls)
		}
	})
}

func TestRetriesAndHedgesPayFromOneBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &straggler{start: time.Now()}
		first := true
		var mu sync.Mutex
		boreal := func(r *http.Request, n int) (*http.Response, error) {
			mu.Lock()
			flaky := first
			first = false
			mu.Unlock()
			if flaky { // the first quote: a 503, retried
				return status(503)(r, n)
			}
			return st.reply(r, n) // the second: a straggler, which a token would hedge
		}
		fake := newFake(map[string]reply{"boreal": boreal})
		s := newService(t, Config{Transport: fake, Hedge: fixedDelay(60 * time.Millisecond),
			ExtraConfig: hedge.BudgetConfig{Cap: 1, MinPerSecond: 0.001},
			MaxStale:    -1}) // the straggler's timeout, not lesson 19's stale answer
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if c := callsOf(res.Calls, "boreal"); c.Attempts != 2 || c.Hedged {
			t.Fatalf("first quote, boreal %+v: want the retry, paid with the only token", c)
		}
		res, err = s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if c := callsOf(res.Calls, "boreal"); c.Attempts != 1 || c.Hedged {
			t.Errorf("second quote, boreal %+v: want no hedge, the retry spent the budget's one token", c)
		}
		if got := codes(res)["boreal"]; got != CodeTimeout {
			t.Errorf("boreal = %q, want timeout: the straggler, unhedged", got)
		}
	})
}

func TestABasketLineIsHedgedAndTheBasketCountsItsExtraCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &straggler{start: time.Now()}
		fake := newFake(map[string]reply{"boreal": st.reply})
		s := basketService(t, fake, newData(t), Config{Hedge: fixedDelay(60 * time.Millisecond)})
		b, err := s.Basket(t.Context(), lines(2))
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(st.start); got != 80*time.Millisecond {
			t.Errorf("the basket answered after %v, want exactly 80ms", got)
		}
		for _, l := range b.Items {
			if l.Status != LineComplete {
				t.Errorf("line %d is %s, want complete: its boreal hedge answered", l.Index, l.Status)
			}
			if c := callsOf(l.Calls, "boreal"); c.Attempts != 2 || !c.Hedged {
				t.Errorf("line %d boreal %+v, want 2 attempts, hedged", l.Index, c)
			}
		}
		if b.ExtraCalls != 2 {
			t.Errorf("extra_calls = %d, want 2 (a hedge per line)", b.ExtraCalls)
		}
		if want := hedge.DefaultCap - 2; b.BudgetTokens < want || b.BudgetTokens > want+0.01 {
			t.Errorf("budget_tokens = %g, want %g", b.BudgetTokens, want)
		}
		if len(st.cut) != 2 {
			t.Errorf("%d first copies cut, want 2", len(st.cut))
		}
		if fake.InFlight() != 0 || s.outboundInUse.Load() != 0 {
			t.Errorf("calls or slots left after the basket: %d, %d", fake.InFlight(), s.outboundInUse.Load())
		}
	})
}

// A hedge is counted and charged only when it is sent. Boreal's first copy
// answers at 100 ms; its hedge, launched at 60 ms, must first find room in
// boreal's rate quota (one call per window, the first copy's): with a window
// of 300 ms it waits and is cut when the first copy answers; with one of
// 1 s the room comes after the deadline and it is refused at once. Either
// way it never reaches boreal: one attempt, not hedged, no extra call in
// /api/budget, its token back.
func TestAHedgeThatNeverLeftIsNeitherCountedNorCharged(t *testing.T) {
	for _, c := range []struct {
		name   string
		window time.Duration
	}{
		{"cut while it waits for the rate", 300 * time.Millisecond},
		{"refused by the rate", time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fake := newFake(map[string]reply{"boreal": after(100*time.Millisecond, normal)})
				q, err := quota.NewLocal(DefaultOutbound, quota.Rate{N: 1, Per: c.window})
				if err != nil {
					t.Fatal(err)
				}
				s := newService(t, Config{Transport: fake, Quota: q, Hedge: fixedDelay(60 * time.Millisecond)})
				start := time.Now()
				res, err := s.Quote(t.Context(), kb(1))
				if err != nil {
					t.Fatal(err)
				}
				if got := time.Since(start); got != 100*time.Millisecond {
					t.Errorf("the quote answered after %v, want 100ms: boreal's first copy", got)
				}
				if got := codes(res)["boreal"]; got != "" {
					t.Errorf("boreal failed with %q; its first copy answered", got)
				}
				if n := fake.Calls("boreal"); n != 1 {
					t.Fatalf("boreal saw %d calls, want 1: the hedge never left", n)
				}
				if c := callsOf(res.Calls, "boreal"); c.Attempts != 1 || c.Hedged {
					t.Errorf("boreal's calls %+v, want 1 attempt, not hedged: one call reached boreal", c)
				}
				b := s.ExtraStats()
				if b.Hedges != 0 || b.ExtraCalls != 0 || b.Tokens != hedge.DefaultCap {
					t.Errorf("budget %+v; want 0 hedges, 0 extra calls and a full bucket (%g): a hedge never sent is refunded", b, hedge.DefaultCap)
				}
			})
		})
	}
}

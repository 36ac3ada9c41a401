package quoteflow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/checkpoints/20/breaker"
	"quoteflowlab.dev/checkpoints/20/fanout"
)

// countingLimiter counts the slots taken.
type countingLimiter struct {
	*fanout.Local
	acquired atomic.Int64
}

func (c *countingLimiter) Acquire(ctx context.Context) error {
	c.acquired.Add(1)
	return c.Local.Acquire(ctx)
}

func (c *countingLimiter) TryAcquire(ctx context.Context) (bool, error) {
	ok, err := c.Local.TryAcquire(ctx)
	if ok {
		c.acquired.Add(1)
	}
	return ok, err
}

// switchable answers with whatever reply it holds now.
type switchable struct{ r atomic.Value }

func (s *switchable) set(r reply) { s.r.Store(r) }
func (s *switchable) reply(r *http.Request, n int) (*http.Response, error) {
	return s.r.Load().(reply)(r, n)
}

// The breaker of these tests: opens at 2 failures of at least 4 outcomes,
// open for exactly 1 s, one probe.
var testBreaker = breaker.Config{Window: 10, MinCalls: 4, FailureRate: 0.5, CoolDown: time.Second, NoJitter: true, Probes: 1}

func lineFailure(b Basket, line int, supplier string) *LineFailure {
	for _, f := range b.Items[line].Failures {
		if f.Supplier == supplier {
			return &f
		}
	}
	return nil
}

// Boreal answers 503: two quotes (a call and its retry each) open its
// breaker at the fourth failure. The third quote's boreal fails at once
// with circuit_open: no call, no slot, no budget token, no retry or
// hedge, while atlas and cedar are asked as before. A basket line then
// meets the same breaker (one per supplier) and its boreal is queued for
// the compensation queue. After exactly 1 s one probe goes through;
// boreal healthy again, it closes.
func TestAnOpenBreakerRefusesAtOnceWithoutASlotOrAToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := &switchable{}
		sw.set(status(503))
		fake := newFake(map[string]reply{"boreal": sw.reply})
		lim := &countingLimiter{Local: fanout.NewLocal(6)}
		d := newData(t)
		s := basketService(t, fake, d, Config{Limiter: lim, Breaker: testBreaker, MaxStale: -1})
		for i := range 2 {
			res, err := s.Quote(t.Context(), kb(1))
			if err != nil {
				t.Fatal(err)
			}
			if got := codes(res)["boreal"]; got != "http_503" {
				t.Fatalf("quote %d: boreal %q, want http_503", i+1, got)
			}
		}
		if st := s.BreakerStats().Breakers["boreal"]; st.State != breaker.Open || st.Failures != 0 || st.Opened != 1 {
			t.Fatalf("after 4 failures: boreal's breaker %+v, want open once", st)
		}
		calls, slots, extra := fake.Calls("boreal"), lim.acquired.Load(), s.ExtraStats().ExtraCalls
		start := time.Now()
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if got := codes(res)["boreal"]; got != CodeCircuitOpen {
			t.Errorf("boreal %q, want circuit_open", got)
		}
		if c := callsOf(res.Calls, "boreal"); c.Attempts != 0 || c.Hedged {
			t.Errorf("boreal's calls %+v, want none", c)
		}
		if got := fake.Calls("boreal") - calls; got != 0 {
			t.Errorf("boreal called %d times while open", got)
		}
		if got := lim.acquired.Load() - slots; got != 2 {
			t.Errorf("%d slots taken, want 2 (atlas and cedar only)", got)
		}
		if got := s.ExtraStats().ExtraCalls - extra; got != 0 {
			t.Errorf("%d extra calls paid while open, want 0", got)
		}
		if len(res.Quotes) != 2 || time.Since(start) != 0 {
			t.Errorf("quotes %v after %v; want atlas and cedar at once (the fake answers at once)", quoted(res), time.Since(start))
		}

		b, err := s.Basket(t.Context(), lines(2))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			f := lineFailure(b, i, "boreal")
			if f == nil || f.Code != CodeCircuitOpen || !f.Queued || f.Attempts != 0 {
				t.Errorf("basket line %d: boreal %+v, want circuit_open, queued, 0 attempts", i, f)
			}
		}
		if got := fake.Calls("boreal") - calls; got != 0 {
			t.Errorf("boreal called %d times by a basket while open", got)
		}

		time.Sleep(time.Second - time.Since(start) - time.Nanosecond)
		if res, _ := s.Quote(t.Context(), kb(1)); codes(res)["boreal"] != CodeCircuitOpen {
			t.Fatalf("1 ns before the cool-down's end: boreal %q", codes(res)["boreal"])
		}
		time.Sleep(time.Nanosecond)
		sw.set(normal)
		res, err = s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if got := codes(res)["boreal"]; got != "" || fake.Calls("boreal")-calls != 1 {
			t.Errorf("at the cool-down's end: boreal %q after %d calls, want quoted by one probe", got, fake.Calls("boreal")-calls)
		}
		if st := s.BreakerStats().Breakers["boreal"]; st.State != breaker.Closed {
			t.Errorf("after a good probe: %+v, want closed", st)
		}
		if st := s.BreakerStats().Breakers["atlas"]; st.State != breaker.Closed || st.Refused != 0 {
			t.Errorf("atlas's breaker %+v: boreal's failures must not refuse atlas", st)
		}
	})
}

// A retry never goes into an open breaker: the first failure stands and
// the retry's token is given back.
func TestARetryIsNotSentIntoAnOpenBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": status(503)})
		// Opens at the first failure of one outcome: the retry meets it open.
		s := newService(t, Config{Transport: fake, MaxStale: -1,
			Breaker: breaker.Config{Window: 2, MinCalls: 1, FailureRate: 1, CoolDown: time.Second}})
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if got := codes(res)["boreal"]; got != "http_503" || fake.Calls("boreal") != 1 {
			t.Errorf("boreal %q after %d calls, want http_503 after 1 (no retry into the open breaker)", got, fake.Calls("boreal"))
		}
		if e := s.ExtraStats(); e.ExtraCalls != 0 {
			t.Errorf("extra calls %d, want 0: the retry's token given back", e.ExtraCalls)
		}
	})
}

// Client errors and bad data say the supplier is up: forty quotes of 404s
// and invalid data never open it; five timeouts in a row do.
func TestOnlyOutagesCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": status(404), "cedar": body(`{"supplier":"cedar"}`), "atlas": hang})
		s := newService(t, Config{Transport: fake, Breaker: testBreaker, NoHedge: true, MaxStale: -1})
		for range 20 {
			if _, err := s.Quote(t.Context(), kb(1)); err != nil {
				t.Fatal(err)
			}
		}
		st := s.BreakerStats().Breakers
		if st["boreal"].State != breaker.Closed || st["cedar"].State != breaker.Closed || fake.Calls("boreal") != 20 || fake.Calls("cedar") != 20 {
			t.Errorf("404s and invalid data: boreal %+v (%d calls), cedar %+v (%d calls); want closed, every call made",
				st["boreal"], fake.Calls("boreal"), st["cedar"], fake.Calls("cedar"))
		}
		if st["atlas"].State != breaker.Open || fake.Calls("atlas") != 4 {
			t.Errorf("timeouts: atlas %+v after %d calls, want open after 4", st["atlas"], fake.Calls("atlas"))
		}
	})
}

// The fallback: boreal's last good quote answers for it while it is down,
// marked stale with its age to the millisecond, and ranked like any quote;
// past MaxStale the failure stands. A 404 is never answered stale.
func TestAStaleQuoteAnswersWhileDownNeverPastMaxStale(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sw := &switchable{}
		sw.set(normal)
		fake := newFake(map[string]reply{"boreal": sw.reply})
		s := newService(t, Config{Transport: fake, Breaker: testBreaker, MaxStale: 5 * time.Second})
		if _, err := s.Quote(t.Context(), kb(2)); err != nil {
			t.Fatal(err)
		}
		good := time.Now()
		sw.set(status(503))
		time.Sleep(1500 * time.Millisecond)
		res, err := s.Quote(t.Context(), kb(2))
		if err != nil {
			t.Fatal(err)
		}
		age := millis(time.Since(good)) // 1.5 s and the retry's pause
		if len(res.Failures) != 0 || res.Best == nil || res.Best.Supplier != "boreal" || !res.Best.Stale ||
			res.Best.AgeMS == nil || *res.Best.AgeMS != age || res.Best.TotalCents != 2600 {
			t.Fatalf("1.5 s after boreal's last good quote: best %+v, failures %v; want boreal's, stale, age %v ms, 2600", res.Best, res.Failures, age)
		}
		for _, q := range res.Quotes {
			if q.Supplier != "boreal" && (q.Stale || q.AgeMS != nil) {
				t.Errorf("%s is fresh but marked %+v", q.Supplier, q)
			}
		}
		out, _ := json.Marshal(res.Best)
		var m map[string]any
		json.Unmarshal(out, &m)
		if m["stale"] != true || m["age_ms"] != float64(age) {
			t.Errorf("best as JSON %s, want stale true and age_ms %v", out, age)
		}
		time.Sleep(4900*time.Millisecond - time.Since(good))
		if res, _ := s.Quote(t.Context(), kb(2)); codes(res)["boreal"] != "" || !res.Best.Stale {
			t.Errorf("at 4.9 s of a MaxStale of 5 s: boreal %q, want the stale quote still", codes(res)["boreal"])
		}
		time.Sleep(5001*time.Millisecond - time.Since(good))
		res, _ = s.Quote(t.Context(), kb(2))
		if got := codes(res)["boreal"]; got != CodeCircuitOpen && got != "http_503" {
			t.Errorf("past MaxStale: boreal %q (quotes %v), want the failure to stand", got, quoted(res))
		}

		sw.set(status(404)) // an answer, not an outage: never covered by a stale quote
		time.Sleep(2 * time.Second)
		s2 := newService(t, Config{Transport: newFake(map[string]reply{"boreal": status(404)}), Breaker: testBreaker})
		s2.lastGood.put(&Quote{Supplier: "boreal", SKU: "KB-001", UnitCents: 1, Stock: 10})
		if res, _ := s2.Quote(t.Context(), kb(2)); codes(res)["boreal"] != "http_404" {
			t.Errorf("a 404 answered %q, want http_404 standing", codes(res)["boreal"])
		}
	})
}

// GET /api/breakers shows every supplier's breaker.
func TestBreakersEndpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": status(503)}), Breaker: testBreaker, MaxStale: -1})
		for range 2 {
			s.Quote(t.Context(), kb(1))
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/breakers", nil))
		var got struct {
			Enabled  bool
			Breakers map[string]struct {
				State     string `json:"state"`
				OpenForMs int64  `json:"open_for_ms"`
				Opened    int64  `json:"opened"`
				Calls     int    `json:"calls"`
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
			t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
		}
		b := got.Breakers["boreal"]
		if !got.Enabled || len(got.Breakers) != 3 || b.State != "open" || b.OpenForMs != 1000 || b.Opened != 1 ||
			got.Breakers["atlas"].State != "closed" || got.Breakers["atlas"].Calls != 2 {
			t.Errorf("GET /api/breakers: %s", rec.Body)
		}
	})
}

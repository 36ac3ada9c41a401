package quoteflow

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/checkpoints/20/adaptive"
)

// quotesAtOnce sends n quotes at once and waits for all of them.
func quotesAtOnce(t *testing.T, s *Service, n int) {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { s.Quote(t.Context(), kb(1)) })
	}
	wg.Wait()
}

// Each supplier's limit is its own: boreal answering 503 backs its limit
// off to the minimum while atlas and cedar, answering at their baseline,
// grow theirs; /api/limits shows each with its history.
func TestEachSupplierHasAnAdaptiveLimitOfItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": status(503)})
		fake.latency = 50 * time.Millisecond
		s := newService(t, Config{Transport: fake, NoHedge: true, NoBreaker: true, MaxStale: -1, InboundLimit: 100,
			Adaptive: &adaptive.Config{Initial: 4, Min: 1, Max: 12, Window: 4}})
		for range 6 {
			quotesAtOnce(t, s, 4)
		}
		st := s.LimitStats()
		if !st.Adaptive || st.Suppliers["boreal"].Limit != 1 {
			t.Errorf("boreal after 6 rounds of 503s: %+v, want its minimum, 1", st.Suppliers["boreal"].Stats)
		}
		for _, name := range []string{"atlas", "cedar"} {
			if got := st.Suppliers[name].Limit; got <= 4 {
				t.Errorf("%s after 6 rounds of 4 quotes at its baseline: limit %d, want above 4 (boreal's failures are not its own)", name, got)
			}
		}
		if h := st.Suppliers["boreal"].History; len(h) < 2 || h[len(h)-1].Reason != "backoff" {
			t.Errorf("boreal's history: %+v, want steps ending in a backoff", h)
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/limits", nil))
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"adaptive":true`) || !strings.Contains(rec.Body.String(), `"history":[`) {
			t.Errorf("GET /api/limits: %d %s", rec.Code, rec.Body.String())
		}
	})
}

// A supplier's limit bounds its calls in flight: with a limit of 2 each
// (and a shared limit that does not bind), 6 quotes at once put exactly
// 2 calls at a time to each supplier, 6 in all; the others wait their turn
// in line and every quote is answered.
func TestASuppliersLimitBoundsItsCallsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		fake.latency = 50 * time.Millisecond
		s := newService(t, Config{Transport: fake, NoHedge: true, InboundLimit: 100, OutboundLimit: 100,
			Adaptive: &adaptive.Config{Initial: 2, Min: 2, Max: 2}, SupplierQueue: adaptive.Queue{Target: time.Second}})
		start := time.Now()
		quotesAtOnce(t, s, 6)
		if p := fake.Peak(); p != 6 {
			t.Errorf("peak in flight %d, want 6 (2 per supplier)", p)
		}
		if took := time.Since(start); took != 150*time.Millisecond {
			t.Errorf("6 quotes at 2 at a time per supplier took %v, want 150 ms (three turns of 50 ms)", took)
		}
		if n := fake.TotalCalls(); n != 18 {
			t.Errorf("%d calls, want 18 (every quote answered by every supplier)", n)
		}
	})
}

// Inbound shedding, by priority and queue time: with one slot held and a
// line of one, a waiting basket is shed at once when a single quote comes
// (503 + Retry-After from the handler); the quote waits its target (100
// ms) and is shed then, at once; with a target longer than its budget it
// waits until its deadline less the floor (800 - 50 ms), and no longer.
func TestInboundShedsBasketsFirstAndNobodyWaitsPastItsTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		d := newData(t)
		s := basketService(t, fake, d, Config{InboundLimit: 1, InboundQueue: &adaptive.Queue{Max: 1, Target: 100 * time.Millisecond}})
		release, err := s.Admit()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		basket := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, "/api/baskets", strings.NewReader(`{"items":[{"sku":"KB-001","quantity":1}]}`))
			s.Handler().ServeHTTP(rec, req)
			basket <- rec
		}()
		synctest.Wait()
		if len(basket) != 0 {
			t.Fatal("the basket was answered while it should wait in line")
		}
		quote := make(chan error, 1)
		go func() {
			_, err := s.Quote(t.Context(), kb(1))
			quote <- err
		}()
		synctest.Wait()
		rec := <-basket
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(rec.Body.String(), "capacity_exhausted") || time.Since(start) != 0 {
			t.Errorf("the basket when a quote came to a full line: %d %q %s after %v, want 503, Retry-After 1, at once",
				rec.Code, rec.Header().Get("Retry-After"), rec.Body.String(), time.Since(start))
		}
		if err := <-quote; !errors.Is(err, ErrBusy) || time.Since(start) != 100*time.Millisecond {
			t.Errorf("the quote: %v after %v, want ErrBusy at its 100 ms target", err, time.Since(start))
		}
		if fake.TotalCalls() != 0 {
			t.Errorf("%d supplier calls, want none", fake.TotalCalls())
		}

		long := newService(t, Config{Transport: fake, InboundLimit: 1, InboundQueue: &adaptive.Queue{Target: 5 * time.Second}})
		held, _ := long.Admit()
		start = time.Now()
		if _, err := long.Quote(t.Context(), kb(1)); !errors.Is(err, ErrBusy) || time.Since(start) != 750*time.Millisecond {
			t.Errorf("a quote with a 5 s target: %v after %v, want ErrBusy at 750 ms (its 800 ms deadline less the 50 ms floor)", err, time.Since(start))
		}
		held()
		release()
		if st := s.LimitStats(); st.Inbound.Shed["low"] != 1 || st.Inbound.Shed["high"] != 1 || st.Adaptive {
			t.Errorf("inbound: %+v, want one basket and one quote shed, no adaptive limits", st)
		}
	})
}

// A 404 and invalid data are answers: their latency is a sample like any
// other, and they never shrink a limit.
func TestClientErrorsAreSamplesNotFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": status(404), "cedar": body(`{"supplier":"cedar"}`)})
		fake.latency = 50 * time.Millisecond
		s := newService(t, Config{Transport: fake, NoHedge: true, NoBreaker: true, MaxStale: -1, InboundLimit: 100,
			Adaptive: &adaptive.Config{Initial: 4, Min: 1, Max: 12, Window: 4}})
		for range 6 {
			quotesAtOnce(t, s, 4)
		}
		st := s.LimitStats()
		for _, name := range []string{"atlas", "boreal", "cedar"} {
			l := st.Suppliers[name]
			if l.Limit != st.Suppliers["atlas"].Limit || l.Limit <= 4 {
				t.Errorf("%s after 6 rounds: limit %d (atlas %d), want every supplier grown alike above 4", name, l.Limit, st.Suppliers["atlas"].Limit)
			}
			for _, step := range l.History {
				if step.Reason == "backoff" || step.Reason == "shrink" {
					t.Errorf("%s: a step %+v; a 404 or invalid data never shrinks a limit", name, step)
				}
			}
		}
	})
}

// With adaptive limits the inbound limit adapts too, to whole quotes: a
// supplier that fails at once (boreal's 503s) is no sign of too many quotes
// at once, so while atlas and cedar answer at their baseline it grows; a
// quote no supplier answered is no sample (its latency is nobody's); when
// a supplier's line sheds a quote's call (limits of 2, 8 quotes at once),
// it backs off, and the quotes it no longer lets in are refused whole, at
// once, instead of coming back with a price missing.
func TestTheInboundLimitAdaptsToWholeQuotes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": status(503)})
		fake.latency = 50 * time.Millisecond
		s := newService(t, Config{Transport: fake, NoHedge: true, NoBreaker: true, MaxStale: -1,
			Adaptive: &adaptive.Config{Initial: 4, Min: 1, Max: 12, Window: 4}})
		for range 6 {
			quotesAtOnce(t, s, 4)
		}
		if in := s.LimitStats().Inbound; in.Limit <= 4 || in.Max != 12 || len(in.History) < 2 {
			t.Errorf("inbound after 6 rounds of 4 quotes, boreal failing at once: %+v, want above its start of 4, up to 12", in)
		}

		fake = newFake(map[string]reply{"atlas": status(503), "boreal": status(503), "cedar": status(503)})
		s = newService(t, Config{Transport: fake, NoHedge: true, NoBreaker: true, MaxStale: -1,
			Adaptive: &adaptive.Config{Initial: 4, Min: 1, Max: 12, Window: 4}})
		for range 6 {
			quotesAtOnce(t, s, 4)
		}
		if in := s.LimitStats().Inbound; in.Limit != 4 || len(in.History) != 1 {
			t.Errorf("inbound after 6 rounds of 4 quotes no supplier answered (503 at once): %+v, want 4 and no step (no sample)", in)
		}

		fake = newFake(nil)
		fake.latency = 50 * time.Millisecond
		s = newService(t, Config{Transport: fake, NoHedge: true, NoBreaker: true, MaxStale: -1, InboundLimit: 8,
			Adaptive:      &adaptive.Config{Initial: 2, Min: 2, Max: 2, Window: 4},
			SupplierQueue: adaptive.Queue{Target: 10 * time.Millisecond}})
		quotesAtOnce(t, s, 8)
		in := s.LimitStats().Inbound
		backoff := slices.ContainsFunc(in.History, func(st adaptive.Step) bool { return st.Reason == "backoff" })
		if in.Limit >= 8 || !backoff {
			t.Errorf("inbound after 8 quotes at once with each supplier's line shedding: %+v, want backed off from 8", in)
		}
		var wg sync.WaitGroup
		busy := make([]bool, 8)
		for i := range busy {
			wg.Go(func() { _, err := s.Quote(t.Context(), kb(1)); busy[i] = errors.Is(err, ErrBusy) })
		}
		wg.Wait()
		refused := 0
		for _, b := range busy {
			if b {
				refused++
			}
		}
		if refused != 8-in.Limit {
			t.Errorf("8 quotes at once with an inbound limit of %d: %d refused (ErrBusy), want %d", in.Limit, refused, 8-in.Limit)
		}
	})
}

// The inbound limit shrinks for the latency the deadline cannot afford,
// not for any queue: 6 quotes at once (InboundLimit 6, a window of 6), 3
// rounds at 50 ms, then 2 at 150 ms (three times the baseline: the
// suppliers' limits, from 12, shrink 8, 6 as their gradient says), then
// one at 700 ms. The inbound limit holds 6 through the 150 ms rounds (a
// quote in 150 ms of its 800 ms waited in a queue its deadline allows; by
// the baseline's gradient it shrank to 5 at once) and shrinks at 700 ms,
// past half the budget, as the baseline's gradient says: 6 x 0.5 + 2 = 5. Before, the inbound
// limit read the suppliers' queues as its own and refused quotes that
// would have been answered in time (lab load --rates, lesson 20: 2-3 %
// below a fixed 24 from 80 quotes a second on).
func TestTheInboundLimitShrinksOnlyForWhatTheDeadlineCannotAfford(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		s := newService(t, Config{Transport: fake, NoHedge: true, NoBreaker: true, MaxStale: -1, InboundLimit: 6,
			Adaptive: &adaptive.Config{Initial: 12, Min: 1, Max: 12, Window: 6}})
		for _, round := range []time.Duration{50, 50, 50, 150, 150, 700} {
			fake.latency = round * time.Millisecond
			quotesAtOnce(t, s, 6)
		}
		steps := func(h []adaptive.Step) (limits []int, reasons []string) {
			for _, st := range h[1:] {
				limits, reasons = append(limits, st.Limit), append(reasons, st.Reason)
			}
			return limits, reasons
		}
		st := s.LimitStats()
		limits, reasons := steps(st.Inbound.History)
		if want := []int{6, 6, 6, 6, 6, 5}; !slices.Equal(limits, want) || reasons[3] != "grow" || reasons[4] != "grow" || reasons[5] != "shrink" {
			t.Errorf("inbound steps: %v %v, want %v, grown at 150 ms, shrunk at 700 ms", limits, reasons, want)
		}
		limits, reasons = steps(st.Suppliers["atlas"].History)
		if want := []int{12, 12, 12, 8, 6, 5}; !slices.Equal(limits, want) || reasons[3] != "shrink" {
			t.Errorf("atlas's steps: %v %v, want %v (a supplier's limit reads 150 ms, three times its baseline, as a queue)", limits, reasons, want)
		}
		if n := fake.TotalCalls(); n != 6*6*3 {
			t.Errorf("%d supplier calls, want %d (every quote answered by every supplier)", n, 6*6*3)
		}
	})
}

// A call in its supplier's line belongs to a quote already let in: it
// waits up to half the budget (400 ms), not the inbound line's 50 ms, and
// never past its deadline less the floor. Each supplier serves one call at
// once (a limit of 1; the shared limit does not bind), 300 ms a call, 3
// quotes at once: the first is
// answered at 300 ms, the second waits 300 ms in every line and is
// answered at 600 ms (before, its calls were shed at 50 ms and the
// quotes atlas and cedar answered were made for nothing), the third is
// shed at every supplier's line at 400 ms.
func TestACallWaitsInItsSuppliersLineWhileTheBudgetAllows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		fake.latency = 300 * time.Millisecond
		s := newService(t, Config{Transport: fake, NoHedge: true, NoBreaker: true, MaxStale: -1, InboundLimit: 3, OutboundLimit: 100,
			Adaptive: &adaptive.Config{Initial: 1, Min: 1, Max: 1}})
		type answer struct {
			took  time.Duration
			codes map[string]Code
			n     int
		}
		answers := make(chan answer, 3)
		start := time.Now()
		for range 3 {
			go func() {
				res, err := s.Quote(t.Context(), kb(1))
				if err != nil {
					t.Errorf("a quote: %v", err)
				}
				answers <- answer{time.Since(start), codes(res), len(res.Quotes)}
			}()
			synctest.Wait() // its calls sent or in line: the next one comes after it at every supplier
		}
		var got []answer
		for range 3 {
			got = append(got, <-answers)
		}
		slices.SortFunc(got, func(a, b answer) int { return int(a.took - b.took) })
		shed := map[string]Code{"atlas": CodeShed, "boreal": CodeShed, "cedar": CodeShed}
		if got[0].took != 300*time.Millisecond || got[0].n != 3 ||
			got[1].took != 400*time.Millisecond || !maps.Equal(got[1].codes, shed) ||
			got[2].took != 600*time.Millisecond || got[2].n != 3 {
			t.Errorf("3 quotes at once, one call at a time per supplier, 300 ms a call: %+v; want answered at 300 ms, shed at every line at 400 ms, answered at 600 ms", got)
		}
	})
}

// A call waits in its supplier's line only while half its budget is left
// (SupplierQueue.Reserve, half the budget): let through later, it would
// time out and halve its supplier's limit. With the line's target out of
// the way (5 s), one call at a time per supplier and 700 ms a call, the
// first quote is answered at 700 ms; the second's calls wait and are shed
// at 400 ms, when 400 ms of its 800 are left (with the floor alone as
// the reserve they waited until 700 ms, were let through with 100 ms
// left and timed out at 800).
func TestACallLeavesItsSuppliersLineWhenHalfTheBudgetIsGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		fake.latency = 700 * time.Millisecond
		s := newService(t, Config{Transport: fake, NoHedge: true, NoBreaker: true, MaxStale: -1, InboundLimit: 2, OutboundLimit: 100,
			Adaptive: &adaptive.Config{Initial: 1, Min: 1, Max: 1}, SupplierQueue: adaptive.Queue{Target: 5 * time.Second}})
		type answer struct {
			took  time.Duration
			codes map[string]Code
			n     int
		}
		answers := make(chan answer, 2)
		start := time.Now()
		for range 2 {
			go func() {
				res, err := s.Quote(t.Context(), kb(1))
				if err != nil {
					t.Errorf("a quote: %v", err)
				}
				answers <- answer{time.Since(start), codes(res), len(res.Quotes)}
			}()
			synctest.Wait() // its calls sent or in line
		}
		early, late := <-answers, <-answers
		if early.took > late.took {
			early, late = late, early
		}
		shed := map[string]Code{"atlas": CodeShed, "boreal": CodeShed, "cedar": CodeShed}
		if early.took != 400*time.Millisecond || !maps.Equal(early.codes, shed) || late.took != 700*time.Millisecond || late.n != 3 {
			t.Errorf("2 quotes at once, one call at a time per supplier, 700 ms a call: %+v, then %+v; want one shed at every line at 400 ms (half its budget left), the other answered at 700 ms", early, late)
		}
		if n := fake.TotalCalls(); n != 3 {
			t.Errorf("%d supplier calls, want 3 (none let through with less than half the budget left)", n)
		}
	})
}

// The connection pool the service owns holds at least the outbound limit:
// a pool of 6 under limits of up to 24 a supplier would be the real limit.
func TestThePoolIsAtLeastTheOutboundLimit(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		want int
	}{
		{"fixed, as lesson 19", Config{}, DefaultPoolSize},
		// Every supplier's limit at its maximum and its full line: the
		// shared limit never binds before the suppliers' lines, which serve
		// single quotes first (at 3 x 24, 72, lab demo 20 priority's
		// quotes waited for it behind basket lines, first come first
		// served, past their deadline).
		{"adaptive, 3 x (24 + 16)", Config{Adaptive: &adaptive.Config{}}, 3 * (adaptive.DefaultMax + adaptive.DefaultQueueMax)},
		{"adaptive, a line of 4", Config{Adaptive: &adaptive.Config{Max: 10}, SupplierQueue: adaptive.Queue{Max: 4}}, 3 * (10 + 4)},
		{"adaptive, --outbound 40", Config{Adaptive: &adaptive.Config{}, OutboundLimit: 40}, 40},
		{"adaptive, a pool set", Config{Adaptive: &adaptive.Config{}, PoolSize: 10}, 10},
	} {
		s := newService(t, c.cfg)
		if got := s.client.Transport.(*http.Transport).MaxConnsPerHost; got != c.want {
			t.Errorf("%s: a pool of %d, want %d", c.name, got, c.want)
		}
	}
}

// With adaptive limits baskets have a door of their own, a fixed number at
// once: eight baskets in progress and a ninth waiting take no place of a
// single quote's (four quotes, the inbound limit's start, go through at
// once, with an inbound limit of 4), and the ninth is shed at its target.
func TestBasketsNeverTakeASingleQuotesPlaceAtTheDoor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		fake.latency = 100 * time.Millisecond
		d := newData(t)
		s := basketService(t, fake, d, Config{NoHedge: true, InboundLimit: 4, Adaptive: &adaptive.Config{Initial: 24, Min: 1, Max: 24},
			InboundQueue: &adaptive.Queue{Target: 50 * time.Millisecond}})
		start := time.Now()
		baskets := make([]error, DefaultInbound+1)
		var wg sync.WaitGroup
		for i := range baskets {
			wg.Go(func() { _, baskets[i] = s.BasketOnce(t.Context(), lines(1), "") })
		}
		synctest.Wait()
		quotes := make([]error, 4)
		took := make([]time.Duration, 4)
		for i := range quotes {
			wg.Go(func() {
				var res QuoteResult
				res, quotes[i] = s.Quote(t.Context(), kb(1))
				if quotes[i] == nil && len(res.Failures) > 0 {
					quotes[i] = fmt.Errorf("failures %v", res.Failures)
				}
				took[i] = time.Since(start)
			})
		}
		wg.Wait()
		for i, err := range quotes {
			if err != nil || took[i] != 100*time.Millisecond {
				t.Errorf("quote %d with %d baskets in progress: %v after %v, want answered at 100 ms", i, DefaultInbound, err, took[i])
			}
		}
		busy := 0
		for _, err := range baskets {
			if errors.Is(err, ErrBusy) {
				busy++
			}
		}
		if st := s.LimitStats(); busy != 1 || st.Baskets == nil || st.Baskets.Limit != DefaultInbound || st.Baskets.Shed["low"] != 1 {
			t.Errorf("%d of %d baskets refused, baskets' door %+v; want 1, a fixed %d", busy, len(baskets), st.Baskets, DefaultInbound)
		}
	})
}

// A line the compensation queue runs again is still a basket's line: it
// takes its supplier's slot as a low-priority call, so it waits behind
// single quotes and is shed first. Run at high priority, the queued lines
// of shed baskets came back as single quotes' rivals (lab demo 20
// priority: 369 of 863 single quotes' calls to atlas shed, 635 of 800
// quotes refused at the door).
func TestAQueuedLineRunsAgainAsABasketsLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": outage(time.Now().Add(100 * time.Millisecond))})
		d := newData(t)
		s := basketService(t, fake, d, Config{NoHedge: true, NoBreaker: true, MaxStale: -1,
			Adaptive: &adaptive.Config{Initial: 4, Min: 1, Max: 12}})
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil || b.Pending != 1 {
			t.Fatalf("basket %+v, %v; want boreal queued", b, err)
		}
		before := s.LimitStats().Suppliers["boreal"].Passed
		time.Sleep(time.Second)
		if n, err := s.CompensateOnce(t.Context()); n != 1 || err != nil {
			t.Fatalf("compensation: %d jobs, %v; want boreal's line", n, err)
		}
		after := s.LimitStats().Suppliers["boreal"].Passed
		if after["low"] != before["low"]+1 || after["high"] != before["high"] {
			t.Errorf("boreal's line passed low %d → %d, high %d → %d; want the queued line let through as low, once",
				before["low"], after["low"], before["high"], after["high"])
		}
	})
}

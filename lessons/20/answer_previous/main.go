// Reference answer to E19 (lesson 19): checkpoint 19's circuit breakers
// open only past their minimum of calls, on the failures among their last
// Window outcomes, and only on outages (a 500 too; never a 404 or invalid
// data, which never answer stale either); they refuse at once (no call, no
// slot, no retry) and only for their own supplier; after the cool-down they
// let a few probes through, one at a time or at once, reopen on a failed
// one, give back one never sent, close on Probes good ones with an empty
// window that no older call counts in, and probe afresh at every opening;
// the last good quote answers while a supplier is down, marked stale,
// never past MaxStale.
//
// Every check runs a quoteflow.Service in this process on a fake supplier
// (an http.RoundTripper) that is the witness: it records every call, when
// it arrived and ended, and the calls of each supplier in flight at once;
// a Limiter of its own (Config.Limiter) counts the outbound slots taken.
// Each check sets its own breaker (Config.Breaker): the numbers are ours,
// not the defaults. Every wait is bounded: a quote that does not answer
// (a lock never given back) fails its check instead of hanging it.
//
// Run it:  go run ./lessons/20/answer_previous
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"quoteflowlab.dev/checkpoints/19/breaker"
	"quoteflowlab.dev/checkpoints/19/fanout"
	"quoteflowlab.dev/checkpoints/19/hedge"
	"quoteflowlab.dev/checkpoints/19/quoteflow"
)

func main() {
	// Two lanes of checks run side by side, each in its order: every check
	// has a service and a fake of its own, and most of their time is
	// waiting out cool-downs and ages. The first check that fails, in the
	// order below, is the answer, said as soon as every check before it
	// has passed.
	checks := []struct {
		name string
		run  func() (string, error)
		lane int
	}{
		{"minimum", openOnlyPastTheMinimum, 0},
		{"open", openRefusesAtOnce, 0},
		{"outages", onlyOutagesCount, 0},
		{"half-open", probesThenClosed, 0},
		{"probes", probesOneAtATime, 0},
		{"window", windowSlides, 0},
		{"older calls", olderCallsIgnored, 1},
		{"stale", staleWhileDown, 1},
		{"timeouts", timeoutsCount, 1},
		{"jitter", coolDownsSpread, 1},
	}
	type result struct {
		what string
		err  error
	}
	done := make([]chan result, len(checks))
	for i := range done {
		done[i] = make(chan result, 1)
	}
	for lane := range 2 {
		go func() {
			for i, c := range checks {
				if c.lane != lane {
					continue
				}
				what, err := bounded(c.run)
				done[i] <- result{what, err}
				if err != nil {
					return // the lane's later checks come after this failure
				}
			}
		}()
	}
	said := make([]string, len(checks))
	for i, c := range checks {
		r := <-done[i] // every check before it passed: its lane ran it
		if r.err != nil {
			fmt.Printf("E19 failed (%s): %v\n", c.name, r.err)
			os.Exit(1)
		}
		said[i] = r.what
	}
	fmt.Printf("E19 passed: %s\n", strings.Join(said, "; "))
}

// checkBound is the longest a check may take: one that does not finish
// (a lock never given back, outside a quote) fails instead of hanging.
const checkBound = 12 * time.Second

func bounded(run func() (string, error)) (string, error) {
	type result struct {
		what string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		what, err := run()
		done <- result{what, err}
	}()
	t := time.NewTimer(checkBound)
	defer t.Stop()
	select {
	case r := <-done:
		return r.what, r.err
	case <-t.C:
		return "", fmt.Errorf("the check did not finish within %v", checkBound)
	}
}

// A call is one request the fake supplier saw.
type call struct {
	supplier string
	arrived  time.Time
	ended    time.Time
}

// A plan says what the fake does with one request: answer after d with
// status (0: 200 with a quote of price cents; a body of "bad" is a quote
// with no price), or, with hang, wait until the request's context ends.
// With until, it answers once that many calls of its supplier have been in
// flight at once (its peak since resetPeak), or after d; with release,
// once release is closed.
type plan struct {
	d       time.Duration
	hang    bool
	status  int
	price   int
	bad     bool
	until   int
	release <-chan struct{}
}

// script is what one supplier does, call after call: the next plans in
// order, then the same one.
type script struct {
	mu   sync.Mutex
	next []plan
	then plan
}

func (s *script) set(then plan, next ...plan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next, s.then = next, then
}

func (s *script) take() plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.next) > 0 {
		p := s.next[0]
		s.next = s.next[1:]
		return p
	}
	return s.then
}

// fake is the suppliers: plan says what each call does; every call is
// recorded, with the peak of each supplier's calls in flight at once.
type fake struct {
	mu      sync.Mutex
	plan    func(supplier string, n int) plan // n: the supplier's call number, from 1
	calls   []call
	running map[string]int
	peak    map[string]int
}

func newFake(plan func(supplier string, n int) plan) *fake {
	return &fake{plan: plan, running: map[string]int{}, peak: map[string]int{}}
}

func (f *fake) RoundTrip(r *http.Request) (*http.Response, error) {
	s := path.Base(r.URL.Path)
	f.mu.Lock()
	n := 1
	for _, c := range f.calls {
		if c.supplier == s {
			n++
		}
	}
	i := len(f.calls)
	f.calls = append(f.calls, call{supplier: s, arrived: time.Now()})
	f.running[s]++
	f.peak[s] = max(f.peak[s], f.running[s])
	p := f.plan(s, n)
	f.mu.Unlock()
	end := func() {
		f.mu.Lock()
		f.calls[i].ended = time.Now()
		f.running[s]--
		f.mu.Unlock()
	}
	if err := f.wait(r.Context(), s, p); err != nil {
		end()
		return nil, err
	}
	end()
	if p.status != 0 && p.status != http.StatusOK {
		return &http.Response{StatusCode: p.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	}
	price := p.price
	if price == 0 {
		price = 1000
	}
	body := fmt.Sprintf(`{"supplier":%q,"sku":%q,"unit_cents":%d,"shipping_cents":100,"stock":50}`, s, r.URL.Query().Get("sku"), price)
	if p.bad {
		body = fmt.Sprintf(`{"supplier":%q}`, s)
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// wait is p's delay: until its context ends (hang), release is closed,
// until calls of supplier have been in flight at once (at most d), or d.
func (f *fake) wait(ctx context.Context, supplier string, p plan) error {
	wait := p.d
	if p.hang || p.release != nil {
		wait = 10 * time.Second
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-t.C:
			return nil
		case <-p.release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if p.until > 0 && f.peakOf(supplier) >= p.until {
				return nil
			}
		}
	}
}

func (f *fake) inFlight(supplier string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[supplier]
}

// count is the calls supplier has seen.
func (f *fake) count(supplier string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.supplier == supplier {
			n++
		}
	}
	return n
}

// last is supplier's latest call.
func (f *fake) last(supplier string) call {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].supplier == supplier {
			return f.calls[i]
		}
	}
	return call{}
}

func (f *fake) peakOf(supplier string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak[supplier]
}

func (f *fake) resetPeak(supplier string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.peak[supplier] = f.running[supplier]
}

// slots is an outbound limit that counts the slots taken.
type slots struct {
	*fanout.Local
	taken atomic.Int64
}

func (l *slots) Acquire(ctx context.Context) error {
	l.taken.Add(1)
	return l.Local.Acquire(ctx)
}

// ours is a breaker of our numbers: open at half of at least min outcomes
// (a window of 10), for exactly coolDown, probes calls let through half-open.
func ours(min int, coolDown time.Duration, probes int) breaker.Config {
	return breaker.Config{Window: 10, MinCalls: min, FailureRate: 0.5, CoolDown: coolDown, NoJitter: true, Probes: probes}
}

func newService(f *fake, cfg quoteflow.Config) (*quoteflow.Service, error) {
	cfg.Transport = f
	// One call is one call: the counts are the breaker's. Only a check
	// that sets its hedge delay hedges.
	cfg.NoHedge = cfg.Hedge == (hedge.DelayConfig{})
	if cfg.Budget == 0 {
		cfg.Budget = 3 * time.Second
	}
	return quoteflow.New(cfg)
}

// quoteBound is the longest a quote may take: every budget here is at most
// 3 s, and a quote that has not answered 2 s after it is a service that
// hangs (a lock never given back).
const quoteBound = 5 * time.Second

func quote(svc *quoteflow.Service) (quoteflow.QuoteResult, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return quoteCtx(ctx, svc)
}

// quoteCtx asks for a quote with ctx, and waits for it no longer than
// quoteBound.
func quoteCtx(ctx context.Context, svc *quoteflow.Service) (quoteflow.QuoteResult, time.Duration, error) {
	type answer struct {
		res quoteflow.QuoteResult
		err error
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		res, err := svc.Quote(ctx, quoteflow.QuoteRequest{SKU: "KB-001", Quantity: 1, Scenario: "normal"})
		done <- answer{res, err}
	}()
	t := time.NewTimer(quoteBound)
	defer t.Stop()
	select {
	case a := <-done:
		return a.res, time.Since(start), a.err
	case <-t.C:
		return quoteflow.QuoteResult{}, time.Since(start), fmt.Errorf("a quote did not answer within %v (its budget is at most 3s): the service hangs", quoteBound)
	}
}

// quoteNone is a quote of a service whose MaxStale is -1: no supplier may
// be answered from its last good quote.
func quoteNone(svc *quoteflow.Service) (quoteflow.QuoteResult, time.Duration, error) {
	res, d, err := quote(svc)
	if err != nil {
		return res, d, err
	}
	for i, q := range res.Quotes {
		if q.Stale {
			return res, d, fmt.Errorf("%s was answered from its last good quote (stale, age_ms %s) with MaxStale -1; want no stale answer: a negative MaxStale answers none", q.Supplier, ageOf(&res.Quotes[i]))
		}
	}
	return res, d, nil
}

// quotesAtOnce asks n quotes at once and waits for them all.
func quotesAtOnce(svc *quoteflow.Service, n int) ([]quoteflow.QuoteResult, error) {
	results := make([]quoteflow.QuoteResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i], _, errs[i] = quoteNone(svc) })
	}
	wg.Wait()
	return results, first(errs)
}

// first is the first error of errs, or nil: one line to say.
func first(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// sleepUntil waits until t.
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// code is supplier's failure code in res ("" when it is quoted).
func code(res quoteflow.QuoteResult, supplier string) quoteflow.Code {
	for _, f := range res.Failures {
		if f.Supplier == supplier {
			return f.Code
		}
	}
	return ""
}

func quoted(res quoteflow.QuoteResult, supplier string) *quoteflow.Quote {
	for i, q := range res.Quotes {
		if q.Supplier == supplier {
			return &res.Quotes[i]
		}
	}
	return nil
}

// bothQuoted says which of atlas and cedar (never failing) is missing.
func bothQuoted(res quoteflow.QuoteResult, when string) error {
	for _, s := range []string{"atlas", "cedar"} {
		if quoted(res, s) == nil {
			return fmt.Errorf("%s: %s answered and was not quoted (%q): only boreal fails, and boreal's breaker must refuse boreal only", when, s, code(res, s))
		}
	}
	return nil
}

// 1. A breaker opens only past its minimum of calls: boreal fails its first
// four calls (two quotes and their retries) and answers after; with a
// minimum of 5 the next quote must still ask it.
func openOnlyPastTheMinimum() (string, error) {
	f := newFake(func(s string, n int) plan {
		if s == "boreal" && n <= 4 {
			return plan{status: http.StatusServiceUnavailable}
		}
		return plan{}
	})
	svc, err := newService(f, quoteflow.Config{Breaker: ours(5, 5*time.Second, 1), MaxStale: -1})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	for range 2 {
		if _, _, err := quote(svc); err != nil {
			return "", err
		}
	}
	first := f.count("boreal")
	res, _, err := quote(svc)
	if err != nil {
		return "", err
	}
	if quoted(res, "boreal") == nil || f.count("boreal") != 5 {
		return "", fmt.Errorf("boreal failed %d call(s), fewer than the minimum of 5 outcomes, then answers: the next quote says boreal %q after %d calls in all; want quoted by a fifth call (a breaker opens only once it holds its minimum of calls)",
			first, code(res, "boreal"), f.count("boreal"))
	}
	return fmt.Sprintf("%d failures of a minimum of 5: still asked", first), nil
}

// 2. Open, a breaker refuses at once: boreal answers 503; with a minimum of
// 3 the first call of the second quote is the third failure and opens it,
// so its retry is not sent (3 calls, not 4). The third quote sends boreal
// nothing and takes 2 outbound slots (atlas and cedar), not 3; atlas and
// cedar are quoted in every quote.
func openRefusesAtOnce() (string, error) {
	f := newFake(func(s string, _ int) plan {
		if s == "boreal" {
			return plan{status: http.StatusServiceUnavailable}
		}
		return plan{}
	})
	lim := &slots{Local: fanout.NewLocal(6)}
	svc, err := newService(f, quoteflow.Config{Limiter: lim, Breaker: ours(3, 5*time.Second, 1), MaxStale: -1})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	for i := range 2 {
		res, _, err := quote(svc)
		if err != nil {
			return "", err
		}
		if err := bothQuoted(res, fmt.Sprintf("quote %d", i+1)); err != nil {
			return "", err
		}
	}
	if n := f.count("boreal"); n != 3 {
		return "", fmt.Errorf("boreal answers 503 and its breaker opens at 2 failures of at least 3 outcomes: two quotes sent boreal %d calls; want 3 (a call and its retry, then a call that opens it and no retry into the open breaker)", n)
	}
	taken := lim.taken.Load()
	res, took, err := quote(svc)
	if err != nil {
		return "", err
	}
	if err := bothQuoted(res, "quote 3"); err != nil {
		return "", err
	}
	if c, n := code(res, "boreal"), f.count("boreal"); c != quoteflow.CodeCircuitOpen || n != 3 {
		return "", fmt.Errorf("the breaker open: boreal %q, %d calls in all; want circuit_open and no new call", c, n)
	}
	if got := lim.taken.Load() - taken; got != 2 {
		return "", fmt.Errorf("the breaker open: the quote took %d outbound slots; want 2 (atlas and cedar): a refused call takes no slot", got)
	}
	return fmt.Sprintf("open at the third failure: no retry sent into it, then circuit_open with 0 calls and 2 slots of 3 (%v), atlas and cedar quoted", took.Round(10*time.Microsecond)), nil
}

// 3. Only outages count: 404s (boreal) and invalid data (cedar) never open
// a breaker that opens at 2 failures of 3, nor answer from the last good
// quote (each gave one first, and MaxStale is a minute): they are answers.
// A 500 is an outage like a 503: atlas, answering 500, is refused after
// its third.
func onlyOutagesCount() (string, error) {
	f := newFake(func(s string, n int) plan {
		switch {
		case s == "atlas":
			return plan{status: http.StatusInternalServerError}
		case n == 1:
			return plan{} // a good quote first
		case s == "boreal":
			return plan{status: http.StatusNotFound}
		}
		return plan{bad: true}
	})
	svc, err := newService(f, quoteflow.Config{Breaker: ours(3, 5*time.Second, 1), MaxStale: time.Minute})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	const quotes = 13
	var res quoteflow.QuoteResult
	for i := range quotes {
		if res, _, err = quote(svc); err != nil {
			return "", err
		}
		for _, s := range []string{"boreal", "cedar"} {
			if n := f.count(s); n != i+1 {
				return "", fmt.Errorf("quote %d: %s, answering %s after a good first quote, has seen %d calls; want %d: an answer is no outage, it never opens the breaker", i+1, s, answer(s), n, i+1)
			}
		}
		if i == 0 {
			continue
		}
		if c := code(res, "boreal"); c != "http_404" || quoted(res, "boreal") != nil {
			return "", fmt.Errorf("quote %d: boreal answered 404 and the quote says %q, quoted %s; want http_404 and no quote: a 404 is an answer, not an outage: it never answers stale", i+1, c, staleOf(quoted(res, "boreal")))
		}
		if c := code(res, "cedar"); c != quoteflow.CodeInvalidData || quoted(res, "cedar") != nil {
			return "", fmt.Errorf("quote %d: cedar answered invalid data and the quote says %q, quoted %s; want invalid_data and no quote: invalid data is an answer, not an outage: it never answers stale", i+1, c, staleOf(quoted(res, "cedar")))
		}
	}
	if n, c := f.count("atlas"), code(res, "atlas"); n != 3 || c != quoteflow.CodeCircuitOpen {
		return "", fmt.Errorf("atlas answered 500 every time: %d quotes sent it %d calls, the last said %q; want 3 calls, then circuit_open: a 500 is an outage like a 503, and the third of a minimum of 3 opens its breaker", quotes, n, c)
	}
	return fmt.Sprintf("%d 404s and %d invalid answers: every call made, none answered stale; 500s open it at the third", quotes-1, quotes-1), nil
}

func answer(supplier string) string {
	if supplier == "boreal" {
		return "404"
	}
	return "invalid data"
}

// staleOf says how q answered ("no" when it did not).
func staleOf(q *quoteflow.Quote) string {
	if q == nil {
		return "no"
	}
	return fmt.Sprintf("(stale %v, age_ms %s)", q.Stale, ageOf(q))
}

// 4. After its cool-down a breaker lets Probes calls through, no more at
// once, and closes when they succeed: boreal down opens it; healed, and
// slow (400 ms), eight quotes at once after the cool-down send it at most
// two calls at once; then it is closed and asked. Hedging is on here, a
// hedge due 20 ms into a call: a probe is never hedged (a hedge would be a
// third call at once).
func probesThenClosed() (string, error) {
	var healed atomic.Bool
	f := newFake(func(s string, _ int) plan {
		if s != "boreal" {
			return plan{}
		}
		if !healed.Load() {
			return plan{status: http.StatusServiceUnavailable}
		}
		return plan{d: 400 * time.Millisecond}
	})
	const coolDown = 300 * time.Millisecond
	svc, err := newService(f, quoteflow.Config{Limiter: &slots{Local: fanout.NewLocal(32)}, Breaker: ours(3, coolDown, 2), MaxStale: -1,
		Hedge: hedge.DelayConfig{Floor: 20 * time.Millisecond, Ceiling: 20 * time.Millisecond}})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	for range 2 {
		if _, _, err := quoteNone(svc); err != nil {
			return "", err
		}
	}
	opened := f.last("boreal").ended // the call that opened it
	res, _, err := quoteNone(svc)
	if err != nil {
		return "", err
	}
	if c := code(res, "boreal"); c != quoteflow.CodeCircuitOpen {
		return "", fmt.Errorf("after three 503 answers of a minimum of 3: boreal %q; want circuit_open", c)
	}
	healed.Store(true)
	// The cool-down, and room: no promise says how soon after it a probe
	// may go.
	sleepUntil(opened.Add(coolDown + 200*time.Millisecond))
	before := f.count("boreal")
	f.resetPeak("boreal")
	results, err := quotesAtOnce(svc, 8)
	if err != nil {
		return "", err
	}
	probes, fresh := f.count("boreal")-before, 0
	for _, r := range results {
		if q := quoted(r, "boreal"); q != nil && !q.Stale {
			fresh++
		}
	}
	if peak := f.peakOf("boreal"); peak > 2 {
		return "", fmt.Errorf("half-open with 2 probes (hedging on): eight quotes at once sent boreal %d calls, %d at once; want at most 2 at once (nor is a probe hedged)", probes, peak)
	}
	if probes == 0 || fresh == 0 {
		return "", fmt.Errorf("%v after the breaker opened (a cool-down of %v), boreal healed: eight quotes sent it %d calls and %d quoted it; want a probe let through, and quoted", time.Since(opened).Round(time.Millisecond), coolDown, probes, fresh)
	}
	res, _, err = quoteNone(svc)
	if err != nil {
		return "", err
	}
	if q := quoted(res, "boreal"); q == nil || q.Stale {
		return "", fmt.Errorf("after %d good probe(s) of 2: boreal %q; want the breaker closed and boreal quoted", probes, code(res, "boreal"))
	}
	return fmt.Sprintf("half-open: %d probe(s), at most 2 at once, none hedged, then closed", probes), nil
}

// 4b. Probes one at a time, and every opening: boreal down opens a
// breaker of a minimum of 4 (a window of 10, half of it failed, 2
// probes). After the cool-down its probe fails: it opens again at once,
// and refuses. After the new one, two quotes that never send the probe (no
// free slot before their deadline; no time left for a call) give it back:
// the next quote probes, boreal healed. After that one good probe of 2 it
// is still half-open: four quotes at once send at most 2 calls at once,
// and the second probe goes. Then it is closed, with an empty window: 3
// failures, fewer than the minimum of 4, open nothing; the fourth outcome
// opens it. At that next opening its probes start afresh and close it
// again, with an empty window: 1 failure in 5 outcomes opens nothing; and
// closed, four quotes at once all ask boreal.
func probesOneAtATime() (string, error) {
	sc := &script{}
	f := newFake(func(s string, _ int) plan {
		if s == "boreal" {
			return sc.take()
		}
		return plan{}
	})
	const coolDown, room = 250 * time.Millisecond, 150 * time.Millisecond
	lim := &slots{Local: fanout.NewLocal(16)}
	// A floor of 300 ms for a call: a quote with 200 ms left makes none.
	svc, err := newService(f, quoteflow.Config{Limiter: lim, MaxStale: -1, MinAttempt: 300 * time.Millisecond,
		Breaker: breaker.Config{Window: 10, MinCalls: 4, FailureRate: 0.5, CoolDown: coolDown, NoJitter: true, Probes: 2}})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	down, up := plan{status: http.StatusServiceUnavailable}, plan{}

	// Open: two quotes, each a 503 and its retry.
	sc.set(down)
	opened, err := openBoreal(svc, f, 4)
	if err != nil {
		return "", err
	}

	// A failed probe opens it again.
	sleepUntil(opened.Add(coolDown + room))
	before := f.count("boreal")
	if _, _, err := quoteNone(svc); err != nil {
		return "", err
	}
	if n := f.count("boreal") - before; n != 1 {
		return "", fmt.Errorf("after its cool-down, boreal still down: one quote sent boreal %d calls; want 1, the probe: a failed probe opens the breaker again, and refuses the retry", n)
	}
	reopened := f.last("boreal").ended
	res, _, err := quoteNone(svc)
	if err != nil {
		return "", err
	}
	if c, n := code(res, "boreal"), f.count("boreal")-before; c != quoteflow.CodeCircuitOpen || n != 1 {
		return "", fmt.Errorf("right after a failed probe, the next quote: boreal %q, %d calls since the probe went; want circuit_open and no call: a failed probe opens the breaker again, for a new cool-down", c, n-1)
	}

	// Probes never sent are given back.
	sc.set(up)
	sleepUntil(reopened.Add(coolDown + room))
	before = f.count("boreal")
	if err := quoteWithoutASlot(svc, lim); err != nil {
		return "", err
	}
	if err := quoteWithoutTime(svc); err != nil {
		return "", err
	}
	if n := f.count("boreal") - before; n != 0 {
		return "", fmt.Errorf("two quotes with no free slot and no time left sent boreal %d calls; want none", n)
	}
	res, _, err = quoteNone(svc)
	if err != nil {
		return "", err
	}
	if q, n := quoted(res, "boreal"), f.count("boreal")-before; q == nil || q.Stale || n != 1 {
		return "", fmt.Errorf("after its cool-down, two quotes that had no free slot and no time left for a call made none; the next: boreal %q, %d call(s); want 1 call, a probe, quoted: a probe never sent is given back", code(res, "boreal"), n)
	}

	// One good probe of 2: still half-open, the second probe goes.
	sc.set(plan{until: 3, d: 300 * time.Millisecond})
	before = f.count("boreal")
	f.resetPeak("boreal")
	if _, err := quotesAtOnce(svc, 4); err != nil {
		return "", err
	}
	if n, peak := f.count("boreal")-before, f.peakOf("boreal"); peak > 2 || n == 0 {
		return "", fmt.Errorf("after one good probe of 2, four quotes at once sent boreal %d calls, %d at once; want the second probe, and at most 2 at once: Probes good probes close the breaker, not fewer, and a probe that ended is given back", n, peak)
	}

	// Two good probes closed it, with an empty window: 3 failures, fewer
	// than the minimum of 4, open nothing; the fourth outcome, with them,
	// opens it.
	sc.set(up, down, down, down)
	if err := stillAsked(svc, f, 4, 4, "3 failures, fewer than the minimum of 4"); err != nil {
		return "", err
	}
	opened = f.last("boreal").ended
	before = f.count("boreal")
	if res, _, err = quoteNone(svc); err != nil {
		return "", err
	}
	if c, n := code(res, "boreal"), f.count("boreal")-before; c != quoteflow.CodeCircuitOpen || n != 0 {
		return "", fmt.Errorf("since the breaker closed, boreal failed 3 of 4 calls, the minimum: the next quote said boreal %q after %d call(s); want circuit_open and no call", c, n)
	}

	// Its third opening starts its probes afresh: two good ones, one at a
	// time, close it again, with an empty window: 1 failure in 5 outcomes
	// opens nothing.
	sleepUntil(opened.Add(coolDown + room))
	for i := range 2 {
		before = f.count("boreal")
		res, _, err := quoteNone(svc)
		if err != nil {
			return "", err
		}
		if q, n := quoted(res, "boreal"), f.count("boreal")-before; q == nil || q.Stale || n != 1 {
			return "", fmt.Errorf("boreal's breaker opened a third time (it had closed on 2 probes before); after its cool-down, quote %d: boreal %q, %d call(s); want a probe, quoted: every opening starts its probes afresh", i+1, code(res, "boreal"), n)
		}
	}
	sc.set(up, down)
	if err := stillAsked(svc, f, 5, 6, "1 failure in 5 outcomes, under half"); err != nil {
		return "", err
	}

	// Closed: four calls at once.
	sc.set(plan{until: 4, d: time.Second})
	before = f.count("boreal")
	f.resetPeak("boreal")
	if _, err := quotesAtOnce(svc, 4); err != nil {
		return "", err
	}
	if n, peak := f.count("boreal")-before, f.peakOf("boreal"); peak != 4 {
		return "", fmt.Errorf("closed on 2 good probes (one at a time), four quotes at once sent boreal %d calls, %d at once; want 4 at once: Probes good probes close the breaker", n, peak)
	}
	return "a failed probe reopened it; probes never sent given back; 2 good probes one at a time closed it, with an empty window (3 failures of a minimum of 4 still asked; 1 in 5), and probes afresh at its next opening; then 4 calls at once", nil
}

// openBoreal asks quotes (at most 6) until boreal, answering 503, is
// refused: want calls failures first; it returns when the last ended.
func openBoreal(svc *quoteflow.Service, f *fake, want int) (time.Time, error) {
	before := f.count("boreal")
	for range 6 {
		res, _, err := quoteNone(svc)
		if err != nil {
			return time.Time{}, err
		}
		if code(res, "boreal") == quoteflow.CodeCircuitOpen {
			if n := f.count("boreal") - before; n != want {
				return time.Time{}, fmt.Errorf("boreal answering 503 was refused after %d failures; want %d (the minimum, all failed)", n, want)
			}
			return f.last("boreal").ended, nil
		}
	}
	return time.Time{}, fmt.Errorf("boreal answered 503 to %d calls of 6 quotes and its breaker never opened (a minimum of %d)", f.count("boreal")-before, want)
}

// stillAsked asks quotes (at most quotes) until boreal has seen calls more
// calls, each quote asking it: its breaker, just closed, must not refuse.
func stillAsked(svc *quoteflow.Service, f *fake, calls, quotes int, what string) error {
	before := f.count("boreal")
	for range quotes {
		if f.count("boreal")-before >= calls {
			return nil
		}
		res, _, err := quoteNone(svc)
		if err != nil {
			return err
		}
		if c := code(res, "boreal"); c == quoteflow.CodeCircuitOpen {
			return fmt.Errorf("after 2 good probes, boreal had %d call(s) since (%s) and the next was refused (%s): Probes good probes close the breaker, with an empty window: the failures before count no more", f.count("boreal")-before, what, c)
		}
	}
	if n := f.count("boreal") - before; n < calls {
		return fmt.Errorf("after 2 good probes, %d quotes sent boreal %d calls; want %d", quotes, n, calls)
	}
	return nil
}

// quoteWithoutASlot asks a quote with every slot of lim taken, for 150 ms:
// no call can be made.
func quoteWithoutASlot(svc *quoteflow.Service, lim *slots) error {
	taken := 0
	defer func() {
		for range taken {
			lim.Local.Release()
		}
	}()
	for taken < lim.Limit() {
		if ok, _ := lim.Local.TryAcquire(context.Background()); !ok {
			return fmt.Errorf("a slot of our limiter was still taken before the quote without a slot (%d in use)", lim.Limit()-taken)
		}
		taken++
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if _, _, err := quoteCtx(ctx, svc); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// quoteWithoutTime asks a quote with 200 ms left, less than the 300 ms a
// call needs (the service's Config.MinAttempt): no call can be made.
func quoteWithoutTime(svc *quoteflow.Service) error {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, _, err := quoteCtx(ctx, svc); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// Closed, a breaker's window holds no call from before: boreal's calls 1
// and 2 start while it is closed and are held; calls 3 and 4 fail and open
// it (a minimum of 2); after the cool-down a probe closes it; then calls 1
// and 2 end in a 503 each. They started before the breaker changed state: they
// count no more, and the next quote asks boreal.
func olderCallsIgnored() (string, error) {
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	down := plan{status: http.StatusServiceUnavailable}
	held := plan{status: http.StatusServiceUnavailable, release: release}
	sc := &script{}
	sc.set(plan{}, held, held, down, down)
	f := newFake(func(s string, _ int) plan {
		if s == "boreal" {
			return sc.take()
		}
		return plan{}
	})
	const coolDown, room = 200 * time.Millisecond, 150 * time.Millisecond
	svc, err := newService(f, quoteflow.Config{Limiter: &slots{Local: fanout.NewLocal(16)}, MaxStale: -1,
		Breaker: breaker.Config{Window: 10, MinCalls: 2, FailureRate: 0.5, CoolDown: coolDown, NoJitter: true, Probes: 1}})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = quoteNone(svc) })
	}
	for deadline := time.Now().Add(3 * time.Second); f.inFlight("boreal") < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			wg.Wait()
			return "", fmt.Errorf("two quotes at once: boreal has %d calls in flight after 3s; want 2", f.inFlight("boreal"))
		}
	}
	opened, err := openBoreal(svc, f, 2)
	if err != nil {
		return "", err
	}
	sleepUntil(opened.Add(coolDown + room))
	res, _, err := quoteNone(svc)
	if err != nil {
		return "", err
	}
	if q := quoted(res, "boreal"); q == nil {
		return "", fmt.Errorf("after its cool-down, boreal healed: boreal %q; want a probe, quoted", code(res, "boreal"))
	}
	close(release)
	wg.Wait()
	if err := first(errs); err != nil {
		return "", err
	}
	before := f.count("boreal")
	res, _, err = quoteNone(svc)
	if err != nil {
		return "", err
	}
	if q, n := quoted(res, "boreal"), f.count("boreal")-before; q == nil || n != 1 {
		return "", fmt.Errorf("two calls that boreal's breaker let through while closed each ended in a 503 after it opened and a probe closed it; the next quote: boreal %q, %d call(s); want 1 call, quoted: the outcome of a call let through before the breaker last changed state counts no more", code(res, "boreal"), n)
	}
	return "two failed calls from before it opened and closed again: not counted", nil
}

// The window slides: a breaker of a window of 10, a minimum of 10 and a
// rate of 0.5 sees boreal fail its calls 1-4, answer 5-14 and fail from
// 15 on. The first 4 failures are pushed out of its window by call 14:
// until call 19 its last 10 outcomes hold fewer than 5 failures, and at
// call 19 they hold 5: it opens then, not before, not after.
func windowSlides() (string, error) {
	failing := func(n int) bool { return n <= 4 || n >= 15 }
	f := newFake(func(s string, n int) plan {
		if s == "boreal" && failing(n) {
			return plan{status: http.StatusServiceUnavailable}
		}
		return plan{}
	})
	svc, err := newService(f, quoteflow.Config{MaxStale: -1,
		Breaker: breaker.Config{Window: 10, MinCalls: 10, FailureRate: 0.5, CoolDown: 10 * time.Second, NoJitter: true, Probes: 1}})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	inWindow := func(last int) int { // failures among calls last-9..last
		n := 0
		for c := max(1, last-9); c <= last; c++ {
			if failing(c) {
				n++
			}
		}
		return n
	}
	for range 30 {
		if f.count("boreal") >= 19 {
			break
		}
		res, _, err := quoteNone(svc)
		if err != nil {
			return "", err
		}
		if c := code(res, "boreal"); c == quoteflow.CodeCircuitOpen {
			n := f.count("boreal")
			return "", fmt.Errorf("boreal failed calls 1-4, answered 5-14 and fails from 15 on: its breaker (the last 10 outcomes, at least 10, a rate of 0.5) refused it after %d calls, when the last 10 held %d failures; want it asked until they hold 5: a failure pushed out of the window counts no more", n, inWindow(n))
		}
	}
	if n := f.count("boreal"); n < 19 {
		return "", fmt.Errorf("30 quotes sent boreal %d calls; want 19", n)
	}
	res, _, err := quoteNone(svc)
	if err != nil {
		return "", err
	}
	if c, n := code(res, "boreal"), f.count("boreal"); c != quoteflow.CodeCircuitOpen || n != 19 {
		return "", fmt.Errorf("boreal failed calls 1-4, answered 5-14 and failed 15-19: its last 10 outcomes held 5 failures, half of them, and the next quote said boreal %q after %d calls; want circuit_open and 19 calls: the breaker counts the failures among its last Window outcomes", c, n)
	}
	return "4 failures pushed out of a window of 10 by 10 answers count no more; 5 of the last 10 open it", nil
}

// 5. While boreal is down its last good quote answers, marked stale with
// its age, and never past MaxStale.
func staleWhileDown() (string, error) {
	var down atomic.Bool
	f := newFake(func(s string, _ int) plan {
		if s == "boreal" && down.Load() {
			return plan{status: http.StatusServiceUnavailable}
		}
		if s == "boreal" {
			return plan{price: 777}
		}
		return plan{price: 2000}
	})
	const maxStale = 1500 * time.Millisecond
	svc, err := newService(f, quoteflow.Config{Breaker: ours(3, 10*time.Second, 1), MaxStale: maxStale})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	if _, _, err := quote(svc); err != nil {
		return "", err
	}
	answered, q1End := f.last("boreal").ended, time.Now()
	down.Store(true)
	// The last good quote grows 200 ms old before boreal is asked again: an
	// age_ms that says less (0, or counted from the wrong moment) is wrong.
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	res, _, err := quote(svc)
	if err != nil {
		return "", err
	}
	end := time.Now()
	if end.Sub(answered) > maxStale {
		return "", fmt.Errorf("the machine is too slow for this check: %v between boreal's good answer and the next quote's end, past MaxStale (%v)", end.Sub(answered).Round(time.Millisecond), maxStale)
	}
	q := quoted(res, "boreal")
	if q == nil || q.UnitCents != 777 {
		return "", fmt.Errorf("boreal down %v after its good answer of 777 (MaxStale %v): boreal %q; want its last good quote", start.Sub(answered).Round(time.Millisecond), maxStale, code(res, "boreal"))
	}
	lo, hi := float64(start.Sub(q1End))/1e6-0.01, float64(end.Sub(answered))/1e6 // age_ms is in µs
	if !q.Stale || q.AgeMS == nil || float64(*q.AgeMS) < lo || float64(*q.AgeMS) > hi {
		return "", fmt.Errorf("boreal's last good quote answered with stale %v, age_ms %s; want stale true and age_ms between %.1f and %.1f (when it was got and now)", q.Stale, ageOf(q), max(lo, 0), hi)
	}
	age := *q.AgeMS
	for _, s := range []string{"atlas", "cedar"} {
		if q := quoted(res, s); q == nil || q.Stale || q.AgeMS != nil {
			return "", fmt.Errorf("%s answered now and is quoted %v (stale %v, age_ms %s); want a fresh quote, not marked stale", s, q != nil, q != nil && q.Stale, ageOf(q))
		}
	}
	time.Sleep(time.Until(answered.Add(maxStale + 300*time.Millisecond)))
	res, _, err = quote(svc)
	if err != nil {
		return "", err
	}
	if q := quoted(res, "boreal"); q != nil {
		return "", fmt.Errorf("%v after boreal's last good quote, MaxStale %v: it still answered (%d cents, stale %v, age_ms %s); want the failure to stand", time.Since(answered).Round(time.Millisecond), maxStale, q.UnitCents, q.Stale, ageOf(q))
	}
	return fmt.Sprintf("boreal down: its last good quote, stale, age_ms %v; past MaxStale, %s", age, code(res, "boreal")), nil
}

// ageOf is q's age_ms as the JSON says it ("none" when absent).
func ageOf(q *quoteflow.Quote) string {
	if q == nil || q.AgeMS == nil {
		return "none"
	}
	return fmt.Sprint(float64(*q.AgeMS))
}

// Bonus: a timeout is a failure: atlas hangs past a 300 ms budget; its
// breaker opens at the third of a minimum of 3, and the quotes after it
// answer at once without it.
func timeoutsCount() (string, error) {
	f := newFake(func(s string, _ int) plan {
		if s == "atlas" {
			return plan{hang: true}
		}
		return plan{}
	})
	svc, err := newService(f, quoteflow.Config{Breaker: ours(3, 10*time.Second, 1), MaxStale: -1, Budget: 300 * time.Millisecond})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	var took time.Duration
	for range 6 {
		res, d, err := quote(svc)
		if err != nil {
			return "", err
		}
		if code(res, "atlas") == quoteflow.CodeCircuitOpen {
			took = d
		}
	}
	if n := f.count("atlas"); n != 3 {
		return "", fmt.Errorf("atlas hangs past every 300ms budget: six quotes sent it %d calls; want 3 (a timeout is a failure: the third opens its breaker)", n)
	}
	return fmt.Sprintf("three timeouts open it, then circuit_open in %v", took.Round(10*time.Microsecond)), nil
}

// Bonus: cool-downs are jittered. Twenty breakers (package breaker, as a
// process each would hold) opened together with a cool-down of 200 ms and
// a jitter of 0.5 let their first probe through no earlier than 200 ms and
// spread over at least 25 ms: without jitter, all at once.
func coolDownsSpread() (string, error) {
	const n, coolDown = 20, 200 * time.Millisecond
	bs := make([]*breaker.Breaker, n)
	opened := make([]time.Time, n)
	for i := range bs {
		b, err := breaker.New(breaker.Config{Window: 1, MinCalls: 1, FailureRate: 1, CoolDown: coolDown, Jitter: 0.5, Probes: 1})
		if err != nil {
			return "", err
		}
		t, err := b.Allow()
		if err != nil {
			return "", err
		}
		t.Done(breaker.Failure)
		bs[i], opened[i] = b, time.Now()
	}
	after := make([]time.Duration, n)
	left := n
	deadline := time.Now().Add(5 * time.Second)
	for left > 0 && time.Now().Before(deadline) {
		for i, b := range bs {
			if after[i] != 0 {
				continue
			}
			if t, err := b.Allow(); err == nil {
				after[i] = time.Since(opened[i])
				t.Done(breaker.Success)
				left--
			}
		}
		time.Sleep(time.Millisecond)
	}
	if left > 0 {
		return "", fmt.Errorf("%d of %d breakers let no probe through within 5s of a cool-down of %v", left, n, coolDown)
	}
	lo, hi := after[0], after[0]
	for _, d := range after {
		lo, hi = min(lo, d), max(hi, d)
	}
	// opened[i] is taken just after the breaker opened: a probe at its
	// cool-down's end comes no sooner than coolDown after it, less the
	// instant between them.
	if lo < coolDown-time.Millisecond {
		return "", fmt.Errorf("a breaker let a probe through %v after it opened, before its cool-down of %v", lo.Round(time.Millisecond), coolDown)
	}
	if hi-lo < 25*time.Millisecond {
		return "", fmt.Errorf("20 breakers opened together with a cool-down of %v and a jitter of 0.5 probed within %v of each other (%v to %v): the cool-down is not jittered", coolDown, (hi - lo).Round(time.Millisecond), lo.Round(time.Millisecond), hi.Round(time.Millisecond))
	}
	return fmt.Sprintf("20 cool-downs of 200ms, jitter 0.5: first probes %v to %v", lo.Round(time.Millisecond), hi.Round(time.Millisecond)), nil
}

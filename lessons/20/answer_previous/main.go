// Reference answer to E19 (lesson 19): checkpoint 19's circuit breakers
// open only past their minimum of calls and only on outages, refuse at once
// (no call, no slot, no retry) and only for their own supplier, let a few
// probes through after the cool-down and close on them, and the last good
// quote answers while a supplier is down, marked stale, never past MaxStale.
//
// Every check runs a quoteflow.Service in this process on a fake supplier
// (an http.RoundTripper) that is the witness: it records every call, when
// it arrived and ended, and the calls of each supplier in flight at once;
// a Limiter of its own (Config.Limiter) counts the outbound slots taken.
// Each check sets its own breaker (Config.Breaker): the numbers are ours,
// not the defaults.
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
	"quoteflowlab.dev/checkpoints/19/quoteflow"
)

func main() {
	checks := []struct {
		name string
		run  func() (string, error)
	}{
		{"minimum", openOnlyPastTheMinimum},
		{"open", openRefusesAtOnce},
		{"outages", onlyOutagesCount},
		{"half-open", probesThenClosed},
		{"stale", staleWhileDown},
		{"timeouts", timeoutsCount},
		{"jitter", coolDownsSpread},
	}
	var said []string
	for _, c := range checks {
		what, err := c.run()
		if err != nil {
			fmt.Printf("E19 failed (%s): %v\n", c.name, err)
			os.Exit(1)
		}
		said = append(said, what)
	}
	fmt.Printf("E19 passed: %s\n", strings.Join(said, "; "))
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
type plan struct {
	d      time.Duration
	hang   bool
	status int
	price  int
	bad    bool
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
	wait := p.d
	if p.hang {
		wait = 10 * time.Second
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		end()
		return nil, r.Context().Err()
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
	cfg.NoHedge = true // one call is one call: the counts are the breaker's
	if cfg.Budget == 0 {
		cfg.Budget = 3 * time.Second
	}
	return quoteflow.New(cfg)
}

func quote(svc *quoteflow.Service) (quoteflow.QuoteResult, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	res, err := svc.Quote(ctx, quoteflow.QuoteRequest{SKU: "KB-001", Quantity: 1, Scenario: "normal"})
	return res, time.Since(start), err
}

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
// a breaker that opens at 2 failures of 3.
func onlyOutagesCount() (string, error) {
	f := newFake(func(s string, _ int) plan {
		switch s {
		case "boreal":
			return plan{status: http.StatusNotFound}
		case "cedar":
			return plan{bad: true}
		}
		return plan{}
	})
	svc, err := newService(f, quoteflow.Config{Breaker: ours(3, 5*time.Second, 1), MaxStale: -1})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	const quotes = 12
	for i := range quotes {
		res, _, err := quote(svc)
		if err != nil {
			return "", err
		}
		if c := code(res, "boreal"); c != "http_404" {
			return "", fmt.Errorf("quote %d: boreal %q; want http_404: a 404 is an answer, it never opens the breaker", i+1, c)
		}
		if c := code(res, "cedar"); c != quoteflow.CodeInvalidData {
			return "", fmt.Errorf("quote %d: cedar %q; want invalid_data: invalid data is an answer, it never opens the breaker", i+1, c)
		}
	}
	if b, c := f.count("boreal"), f.count("cedar"); b != quotes || c != quotes {
		return "", fmt.Errorf("%d quotes: boreal (404s) saw %d calls, cedar (invalid data) %d; want %d each", quotes, b, c, quotes)
	}
	return fmt.Sprintf("%d 404s and %d invalid answers: every call made", quotes, quotes), nil
}

// 4. After its cool-down a breaker lets Probes calls through, no more at
// once, and closes when they succeed: boreal down opens it; healed, and
// slow (400 ms), eight quotes at once after the cool-down send it at most
// two calls at once; then it is closed and asked.
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
	svc, err := newService(f, quoteflow.Config{Breaker: ours(3, coolDown, 2), MaxStale: -1})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	for range 2 {
		if _, _, err := quote(svc); err != nil {
			return "", err
		}
	}
	opened := f.last("boreal").ended // the call that opened it
	res, _, err := quote(svc)
	if err != nil {
		return "", err
	}
	if c := code(res, "boreal"); c != quoteflow.CodeCircuitOpen {
		return "", fmt.Errorf("after three 503s of a minimum of 3: boreal %q; want circuit_open", c)
	}
	healed.Store(true)
	// The cool-down, and room: no promise says how soon after it a probe
	// may go.
	time.Sleep(time.Until(opened.Add(coolDown + 200*time.Millisecond)))
	before := f.count("boreal")
	f.resetPeak("boreal")
	results := make([]quoteflow.QuoteResult, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i], _, errs[i] = quote(svc) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	probes, fresh := f.count("boreal")-before, 0
	for _, r := range results {
		if q := quoted(r, "boreal"); q != nil && !q.Stale {
			fresh++
		}
	}
	if peak := f.peakOf("boreal"); peak > 2 {
		return "", fmt.Errorf("half-open with 2 probes: eight quotes at once sent boreal %d calls, %d at once; want at most 2 at once", probes, peak)
	}
	if probes == 0 || fresh == 0 {
		return "", fmt.Errorf("%v after the breaker opened (a cool-down of %v), boreal healed: eight quotes sent it %d calls and %d quoted it; want a probe let through, and quoted", time.Since(opened).Round(time.Millisecond), coolDown, probes, fresh)
	}
	res, _, err = quote(svc)
	if err != nil {
		return "", err
	}
	if q := quoted(res, "boreal"); q == nil || q.Stale {
		return "", fmt.Errorf("after %d good probe(s) of 2: boreal %q; want the breaker closed and boreal quoted", probes, code(res, "boreal"))
	}
	return fmt.Sprintf("half-open: %d probe(s), at most 2 at once, then closed", probes), nil
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

// Reference answer to E18 (lesson 18): checkpoint 18 hedges a straggler and
// cancels the loser, keeps extra calls within its budget, keeps hedges
// inside the outbound limit, and hedges no call before the supplier's
// recent p95.
//
// Every check runs a quoteflow.Service in this process on a fake supplier
// (an http.RoundTripper) that is the witness: it records every call's
// X-Request-ID and X-Attempt, when it arrived and ended, whether it ended
// because its context was cancelled, and the calls in flight at once.
//
// Run it:  go run ./lessons/19/answer_previous
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
	"time"

	"quoteflowlab.dev/checkpoints/18/hedge"
	"quoteflowlab.dev/checkpoints/18/quoteflow"
)

func main() {
	checks := []struct {
		name string
		run  func() (string, error)
	}{
		{"loser", loserCancelled},
		{"budget", extraWithinBudget},
		{"limit", hedgesInsideLimit},
		{"delay", noHedgeBeforeP95},
		{"first answer", firstAnswerWins},
		{"one budget", oneBudget},
	}
	var said []string
	for _, c := range checks {
		what, err := c.run()
		if err != nil {
			fmt.Printf("E18 failed (%s): %v\n", c.name, err)
			os.Exit(1)
		}
		said = append(said, what)
	}
	fmt.Printf("E18 passed: %s\n", strings.Join(said, "; "))
}

// A call is one request the fake supplier saw.
type call struct {
	supplier, id string
	attempt      int
	arrived      time.Time
	ended        time.Time
	cancelled    bool // it ended because its context was cancelled
}

// A plan says what the fake does with one request: wait for d (0: answer
// at once), or, with stall, until the request's context is cancelled (at
// most 5 s); deaf answers at d even when cancelled; price is the unit
// price it quotes; status other than 200 is answered without a body.
type plan struct {
	d      time.Duration
	stall  bool
	deaf   bool
	price  int
	status int
}

// fake is the suppliers: every request goes through plan, and is recorded.
type fake struct {
	plan func(supplier, id string, attempt int) plan

	mu      sync.Mutex
	calls   []*call
	running int
	peak    int
}

func (f *fake) RoundTrip(r *http.Request) (*http.Response, error) {
	c := &call{supplier: path.Base(r.URL.Path), id: r.Header.Get("X-Request-ID"), attempt: 1, arrived: time.Now()}
	if a := r.Header.Get("X-Attempt"); a != "" {
		fmt.Sscan(a, &c.attempt)
	}
	p := f.plan(c.supplier, c.id, c.attempt)
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.running++
	f.peak = max(f.peak, f.running)
	f.mu.Unlock()
	end := func(cancelled bool) {
		f.mu.Lock()
		c.ended, c.cancelled = time.Now(), cancelled
		f.running--
		f.mu.Unlock()
	}
	wait := p.d
	if p.stall {
		wait = 5 * time.Second
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	done := r.Context().Done()
	if p.deaf {
		done = nil
	}
	select {
	case <-t.C:
	case <-done:
		end(true)
		return nil, r.Context().Err()
	}
	end(false)
	if p.status != 0 && p.status != http.StatusOK {
		return &http.Response{StatusCode: p.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	}
	price := p.price
	if price == 0 {
		price = 1000
	}
	body := fmt.Sprintf(`{"supplier":%q,"sku":%q,"unit_cents":%d,"shipping_cents":100,"stock":50}`, c.supplier, r.URL.Query().Get("sku"), price)
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// snapshot returns a copy of the calls seen, and the peak in flight.
func (f *fake) snapshot() ([]call, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]call, len(f.calls))
	for i, c := range f.calls {
		out[i] = *c
	}
	return out, f.peak
}

// hedges counts the calls with X-Attempt 2 (of supplier, or all for "").
func hedges(calls []call, supplier string) (n, firsts int) {
	for _, c := range calls {
		if supplier != "" && c.supplier != supplier {
			continue
		}
		if c.attempt >= 2 {
			n++
		} else {
			firsts++
		}
	}
	return n, firsts
}

func newService(f *fake, cfg quoteflow.Config) (*quoteflow.Service, error) {
	cfg.Transport = f
	return quoteflow.New(cfg)
}

func quote(svc *quoteflow.Service) (quoteflow.QuoteResult, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	res, err := svc.Quote(ctx, quoteflow.QuoteRequest{SKU: "KB-001", Quantity: 1, Scenario: "normal"})
	return res, time.Since(start), err
}

// fixed is a hedge delay of exactly d.
func fixed(d time.Duration) hedge.DelayConfig { return hedge.DelayConfig{Floor: d, Ceiling: d} }

// 1. A straggler is hedged and the loser cancelled.
func loserCancelled() (string, error) {
	f := &fake{plan: func(s, _ string, attempt int) plan {
		if s == "atlas" && attempt == 1 {
			return plan{stall: true}
		}
		return plan{d: 5 * time.Millisecond}
	}}
	svc, err := newService(f, quoteflow.Config{Hedge: fixed(30 * time.Millisecond), Budget: 3 * time.Second})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	res, took, err := quote(svc)
	if err != nil {
		return "", fmt.Errorf("the quote: %w", err)
	}
	if took > time.Second {
		return "", fmt.Errorf("the quote took %v with atlas's first copy stalled and a hedge due at 30ms: the straggler was not hedged (or its loser was waited for)", took.Round(time.Millisecond))
	}
	if !hasQuote(res, "atlas") {
		return "", fmt.Errorf("the quote has no atlas price (failures %+v): the hedge's answer was not used", res.Failures)
	}
	time.Sleep(100 * time.Millisecond) // a loser left running has time to show it
	calls, _ := f.snapshot()
	var first, second *call
	for i := range calls {
		if calls[i].supplier != "atlas" {
			continue
		}
		switch c := &calls[i]; c.attempt {
		case 1:
			first = c
		case 2:
			second = c
		}
	}
	if first == nil || second == nil {
		return "", fmt.Errorf("atlas saw first copy %v, hedge (X-Attempt: 2) %v: want both", first != nil, second != nil)
	}
	if second.id != first.id {
		return "", fmt.Errorf("the hedge carried X-Request-ID %q, its first copy %q: a hedge is the same request, with the same ID", second.id, first.id)
	}
	if first.ended.IsZero() {
		return "", errors.New("atlas's first copy was still running 100ms after the quote answered: the loser was not cancelled")
	}
	if gap := first.ended.Sub(second.ended); !first.cancelled || gap > 50*time.Millisecond {
		return "", fmt.Errorf("atlas's first copy ended %v after the hedge answered (cancelled: %v): the loser must be cancelled within 50ms", gap.Round(time.Millisecond), first.cancelled)
	}
	return fmt.Sprintf("a stalled call hedged at 30ms, the quote answered in %v, the loser cancelled with the same X-Request-ID", took.Round(time.Millisecond)), nil
}

// 2. Extra calls stay within the budget when every call of boreal is slow.
func extraWithinBudget() (string, error) {
	f := &fake{plan: func(s, _ string, _ int) plan {
		if s == "boreal" {
			return plan{d: 100 * time.Millisecond}
		}
		return plan{d: 2 * time.Millisecond}
	}}
	cfg := hedge.BudgetConfig{Cap: 5}
	// A limit of 12: every slow call finds a free slot for its hedge, so
	// only the budget stands between them and one hedge per call.
	svc, err := newService(f, quoteflow.Config{Hedge: fixed(30 * time.Millisecond), ExtraConfig: cfg, OutboundLimit: 12, Budget: 3 * time.Second})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	start := time.Now()
	if err := many(svc, 40, 4); err != nil {
		return "", err
	}
	took := time.Since(start)
	calls, _ := f.snapshot()
	n, _ := hedges(calls, "")
	_, firsts := hedges(calls, "")
	// Ratio 0.1 per first call, the cap it starts with, MinPerSecond 0.1
	// over the run, and one for rounding.
	allowed := int(0.1*float64(firsts) + 5 + 0.1*took.Seconds() + 1)
	if n > allowed {
		return "", fmt.Errorf("40 quotes with every boreal call slow sent %d hedges for %d first calls: a budget of 0.1 per first call and a cap of 5 allows %d", n, firsts, allowed)
	}
	return fmt.Sprintf("every boreal call slow: %d hedges for %d first calls (budget allows %d)", n, firsts, allowed), nil
}

// many sends n quotes, workers at a time.
func many(svc *quoteflow.Service, n, workers int) error {
	next := make(chan struct{})
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range next {
				if _, _, err := quote(svc); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
	for range n {
		select {
		case next <- struct{}{}:
		case err = <-errs:
		}
		if err != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	return err
}

// 3. Never more calls in flight than the outbound limit, hedges included.
func hedgesInsideLimit() (string, error) {
	f := &fake{plan: func(string, string, int) plan { return plan{d: 200 * time.Millisecond} }}
	svc, err := newService(f, quoteflow.Config{Hedge: fixed(30 * time.Millisecond), OutboundLimit: 6, Budget: 3 * time.Second})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	for range 3 {
		if err := many(svc, 2, 2); err != nil {
			return "", err
		}
	}
	calls, peak := f.snapshot()
	if peak > 6 {
		n, _ := hedges(calls, "")
		return "", fmt.Errorf("two quotes at once, every call slow: %d calls in flight at the suppliers at once (%d hedges), over the outbound limit of 6: hedges must take a slot, and only a free one", peak, n)
	}
	return fmt.Sprintf("slow calls filling the limit: at most %d in flight, hedges included", peak), nil
}

// 4. No hedge before the supplier's recent p95.
func noHedgeBeforeP95() (string, error) {
	var mu sync.Mutex
	seq := uint64(1)
	f := &fake{plan: func(string, string, int) plan {
		mu.Lock()
		defer mu.Unlock()
		seq = seq*6364136223846793005 + 1442695040888963407
		return plan{d: 20*time.Millisecond + time.Duration(seq>>33%41)*time.Millisecond} // 20-60 ms
	}}
	svc, err := newService(f, quoteflow.Config{Budget: 3 * time.Second})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	if err := many(svc, 20, 2); err != nil { // warm up: 20 latencies per supplier
		return "", err
	}
	warm, _ := f.snapshot()
	if err := many(svc, 40, 2); err != nil {
		return "", err
	}
	calls, _ := f.snapshot()
	calls = calls[len(warm):]
	firstAt := map[string]time.Time{}
	for _, c := range calls {
		if c.attempt == 1 {
			firstAt[c.supplier+" "+c.id] = c.arrived
		}
	}
	n, firsts := hedges(calls, "")
	for _, c := range calls {
		if c.attempt < 2 {
			continue
		}
		at, ok := firstAt[c.supplier+" "+c.id]
		if !ok {
			continue
		}
		if gap := c.arrived.Sub(at); gap < 15*time.Millisecond {
			return "", fmt.Errorf("with every call taking 20-60ms, a hedge of %s arrived %v after its first copy: a hedge before the fastest calls answer is a hedge at a fixed, early delay, not at the recent p95", c.supplier, gap.Round(time.Millisecond))
		}
	}
	if n*4 > firsts {
		return "", fmt.Errorf("with every call taking 20-60ms, %d of %d calls were hedged: at the recent p95, about 1 in 20", n, firsts)
	}
	return fmt.Sprintf("calls of 20-60ms: %d hedges for %d calls, none before 15ms", n, firsts), nil
}

// Bonus: the first answer wins.
func firstAnswerWins() (string, error) {
	f := &fake{plan: func(s, _ string, attempt int) plan {
		if s == "atlas" && attempt == 1 {
			return plan{d: 120 * time.Millisecond, deaf: true, price: 1111}
		}
		if s == "atlas" {
			return plan{d: 5 * time.Millisecond, price: 2222}
		}
		return plan{d: 5 * time.Millisecond}
	}}
	svc, err := newService(f, quoteflow.Config{Hedge: fixed(30 * time.Millisecond), Budget: 3 * time.Second})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	res, _, err := quote(svc)
	if err != nil {
		return "", err
	}
	for _, q := range res.Quotes {
		if q.Supplier == "atlas" && q.UnitCents != 2222 {
			return "", fmt.Errorf("atlas's hedge answered first with 2222, its first copy later with 1111, and the quote shows %d: the later answer replaced the first", q.UnitCents)
		}
	}
	if !hasQuote(res, "atlas") {
		return "", fmt.Errorf("no atlas price: failures %+v", res.Failures)
	}
	return "the first answer wins over a later one", nil
}

// Bonus: retries and hedges are paid from one budget. The other calls
// answer at once and the hedge is due late (100ms), so that on a busy
// machine no hedge of a fast call spends a token meant for this check.
func oneBudget() (string, error) {
	var flaky bool
	var mu sync.Mutex
	f := &fake{plan: func(s, _ string, attempt int) plan {
		mu.Lock()
		defer mu.Unlock()
		if s == "boreal" && flaky && attempt == 1 {
			return plan{status: http.StatusServiceUnavailable}
		}
		if s == "boreal" && !flaky {
			return plan{d: 250 * time.Millisecond}
		}
		return plan{}
	}}
	mu.Lock()
	flaky = true
	mu.Unlock()
	svc, err := newService(f, quoteflow.Config{Hedge: fixed(100 * time.Millisecond),
		ExtraConfig: hedge.BudgetConfig{Ratio: 0.001, Cap: 4}, Budget: 3 * time.Second})
	if err != nil {
		return "", err
	}
	defer svc.Close()
	for range 6 { // retries spend the 4 tokens
		if _, _, err := quote(svc); err != nil {
			return "", err
		}
	}
	before, _ := f.snapshot()
	mu.Lock()
	flaky = false
	mu.Unlock()
	start := time.Now()
	for range 6 {
		if _, _, err := quote(svc); err != nil {
			return "", err
		}
	}
	calls, _ := f.snapshot()
	n, _ := hedges(calls[len(before):], "")
	// What the bucket's minimum rate (0.1 a second) gave back meanwhile, and
	// one for rounding; a budget of its own for hedges would send 4.
	allowed := int(0.1*time.Since(start).Seconds()) + 1
	if n > allowed {
		return "", fmt.Errorf("after retries spent the budget of 4, slow boreal calls were hedged %d times (at most %d): retries and hedges must pay from one budget", n, allowed)
	}
	return "retries and hedges pay from one budget", nil
}

func hasQuote(res quoteflow.QuoteResult, supplier string) bool {
	for _, q := range res.Quotes {
		if q.Supplier == supplier {
			return true
		}
	}
	return false
}

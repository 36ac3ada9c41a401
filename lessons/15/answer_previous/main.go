// Command answer_previous is the reference answer to exercise E14 (lesson 14):
// a flaky supplier recovers in exactly two attempts with one request ID,
// and invalid data is never retried.
//
//	go run ./lessons/15/answer_previous
//
// It drives checkpoint 14's service with a controllable fake supplier (an
// http.RoundTripper) that plays the provider lab's scenarios for boreal and
// remembers every attempt: which supplier, which X-Request-ID.
//
//   - flaky: boreal answers 503 to the first request of each X-Request-ID and
//     normally after that. Boreal must end up in the quotes, after exactly two
//     attempts carrying one ID. Checking only that best is non-empty would
//     prove nothing: atlas answers normally, so best is set even with no retry.
//   - malformed: boreal answers 200 with unit_cents as a string. Boreal must be
//     invalid_data after exactly one attempt, and atlas and cedar must remain.
//
// Two more checks go beyond the exercise, to catch two bonus bugs:
//
//   - broken: boreal answers 503 every time. Exactly two attempts, then http_503:
//     a third attempt would mean the bound is wrong.
//   - with an outbound limit of 1, thirty flaky quotes at once must finish in
//     less than thirty pauses of 20 ms, the least that backoffs taking turns
//     with the only slot would cost: the slot must be free while boreal backs
//     off. This one check reads the clock, against a floor that a service
//     holding the slot cannot beat, however fast the machine.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/checkpoints/14/quoteflow"
)

const wait = 2 * time.Second // cap on every quote

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "E14 failed:", err)
		os.Exit(1)
	}
	fmt.Println("E14 passed: flaky: boreal quoted after exactly 2 attempts with one X-Request-ID; " +
		"malformed: boreal invalid_data after 1 attempt, atlas and cedar kept; " +
		"broken: exactly 2 attempts; the outbound slot was free during boreal's backoff")
}

func run() error {
	for _, check := range []func() error{flakyRecovers, malformedIsNotRetried, brokenStopsAtTwo, backoffFreesTheSlot} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// flakyRecovers: one 503, then boreal's quote, with the same request ID.
func flakyRecovers() error {
	res, sup, err := quote("flaky", 2)
	if err != nil {
		return fmt.Errorf("flaky: %v", err)
	}
	ids := sup.ids("boreal")
	if len(ids) != 2 {
		return fmt.Errorf("flaky: boreal was called %d times, want exactly 2 (one 503, one retry)", len(ids))
	}
	if ids[0] != ids[1] {
		return fmt.Errorf("flaky: boreal's two attempts carried different X-Request-IDs %q and %q; the retry must reuse the first", ids[0], ids[1])
	}
	if ids[0] != res.RequestID {
		return fmt.Errorf("flaky: boreal saw X-Request-ID %q, but the result's request_id is %q", ids[0], res.RequestID)
	}
	if !quoted(res, "boreal") {
		return fmt.Errorf("flaky: boreal is not in the quotes (failures %v); the retry did not recover it", res.Failures)
	}
	if res.Best == nil || res.Best.Supplier != "boreal" {
		return fmt.Errorf("flaky: best is %v, want boreal's quote (the cheapest at quantity 2)", res.Best)
	}
	return nil
}

// malformedIsNotRetried: bad data is reported after one attempt, and the
// healthy suppliers' quotes are kept.
func malformedIsNotRetried() error {
	res, sup, err := quote("malformed", 1)
	if err != nil {
		return fmt.Errorf("malformed: %v", err)
	}
	if n := len(sup.ids("boreal")); n != 1 {
		return fmt.Errorf("malformed: boreal was called %d times, want exactly 1: invalid data must not be retried", n)
	}
	if code := failure(res, "boreal"); code != quoteflow.CodeInvalidData {
		return fmt.Errorf("malformed: boreal's failure code is %q, want %q", code, quoteflow.CodeInvalidData)
	}
	if !quoted(res, "atlas") || !quoted(res, "cedar") {
		return fmt.Errorf("malformed: want atlas and cedar still quoted, got quotes %v, failures %v", res.Quotes, res.Failures)
	}
	return nil
}

// brokenStopsAtTwo: a supplier that keeps failing gets two attempts, not three.
func brokenStopsAtTwo() error {
	res, sup, err := quote("broken", 2)
	if err != nil {
		return fmt.Errorf("broken: %v", err)
	}
	if n := len(sup.ids("boreal")); n != 2 {
		return fmt.Errorf("broken: boreal was called %d times, want exactly 2 (at most two attempts)", n)
	}
	if code := failure(res, "boreal"); code != quoteflow.HTTPCode(http.StatusServiceUnavailable) {
		return fmt.Errorf("broken: boreal's failure code is %q, want http_503", code)
	}
	return nil
}

// Backoffs must overlap. With one outbound slot, retryQuotes flaky quotes
// run at once, and each boreal pauses at least minBackoff before its retry.
// A service that pauses while holding the only slot pays those pauses one
// after another: it cannot finish in less than retryQuotes × minBackoff
// (600 ms), however fast the machine. A service that gives the slot back
// first pays them together: about one pause (at most 30 ms) plus a few
// microseconds per call, so the bound leaves it twenty times that for a
// busy machine, and a scheduler hiccup cannot turn one into the other.
const (
	retryQuotes = 30
	minBackoff  = 20 * time.Millisecond // checkpoint 14's shortest pause before a retry
)

// backoffFreesTheSlot: with one outbound slot, the slot is free while boreal
// waits to retry, so the quotes' pauses overlap.
func backoffFreesTheSlot() error {
	sup := newSuppliers()
	svc, err := quoteflow.New(quoteflow.Config{ProviderURL: "http://provider.test", Transport: sup,
		OutboundLimit: 1, InboundLimit: retryQuotes, Budget: wait})
	if err != nil {
		return err
	}
	defer svc.Close()
	results := make([]quoteflow.QuoteResult, retryQuotes)
	errs := make([]error, retryQuotes)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range retryQuotes {
		wg.Go(func() { results[i], errs[i] = quoteWith(svc, "flaky", 2) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	floor := retryQuotes * minBackoff
	if elapsed >= floor {
		return fmt.Errorf("outbound limit 1: %d flaky quotes at once took %v, not less than the %v that %d backoffs "+
			"of at least %v cost one after another: the backoff sleeps while holding the slot, so healthy calls "+
			"wait behind a supplier that is doing nothing", retryQuotes, elapsed.Round(time.Millisecond), floor, retryQuotes, minBackoff)
	}
	for i, res := range results {
		if errs[i] != nil {
			return fmt.Errorf("flaky with outbound limit 1: %v", errs[i])
		}
		if !quoted(res, "boreal") {
			return fmt.Errorf("flaky with outbound limit 1: boreal is not in the quotes (failures %v)", res.Failures)
		}
	}
	return nil
}

// quote builds a service (default limits) around a fresh fake and asks for
// quantity KB-001 in scenario.
func quote(scenario string, quantity int) (quoteflow.QuoteResult, *suppliers, error) {
	sup := newSuppliers()
	svc, err := quoteflow.New(quoteflow.Config{ProviderURL: "http://provider.test", Transport: sup, Budget: wait})
	if err != nil {
		return quoteflow.QuoteResult{}, nil, err
	}
	defer svc.Close()
	res, err := quoteWith(svc, scenario, quantity)
	return res, sup, err
}

// quoteWith runs one Quote, capped at wait (the fake never blocks, and the
// service's own budget is wait too; the timer is the last line of defence).
func quoteWith(svc *quoteflow.Service, scenario string, quantity int) (quoteflow.QuoteResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	type result struct {
		res quoteflow.QuoteResult
		err error
	}
	ch := make(chan result, 1)
	go func() {
		res, err := svc.Quote(ctx, quoteflow.QuoteRequest{SKU: "KB-001", Quantity: quantity, Scenario: scenario})
		ch <- result{res, err}
	}()
	select {
	case r := <-ch:
		return r.res, r.err
	case <-time.After(wait + time.Second):
		return quoteflow.QuoteResult{}, fmt.Errorf("no result within %v", wait+time.Second)
	}
}

func quoted(res quoteflow.QuoteResult, supplier string) bool {
	return slices.ContainsFunc(res.Quotes, func(q quoteflow.Quote) bool { return q.Supplier == supplier })
}

func failure(res quoteflow.QuoteResult, supplier string) quoteflow.Code {
	for _, f := range res.Failures {
		if f.Supplier == supplier {
			return f.Code
		}
	}
	return ""
}

// suppliers is the fake provider: atlas and cedar always answer normally;
// boreal plays the scenario named in the query. It remembers every call.
type suppliers struct {
	mu    sync.Mutex
	calls []call
}

type call struct{ supplier, id string }

func newSuppliers() *suppliers { return &suppliers{} }

// catalog mirrors the provider lab: at quantity 2 boreal is the cheapest
// (2848), atlas second (3098), cedar (stock 1) filtered.
var catalog = map[string][3]int{ // unit_cents, shipping_cents, stock
	"atlas":  {1299, 500, 10},
	"boreal": {1199, 450, 8},
	"cedar":  {999, 300, 1},
}

func (s *suppliers) RoundTrip(r *http.Request) (*http.Response, error) {
	supplier, id := path.Base(r.URL.Path), r.Header.Get("X-Request-ID")
	q := r.URL.Query()
	s.mu.Lock()
	seen := s.seenLocked(supplier, id)
	s.calls = append(s.calls, call{supplier, id})
	s.mu.Unlock()

	offer, ok := catalog[supplier]
	if !ok {
		return respond(r, http.StatusNotFound, map[string]string{"error": "unknown_supplier"}), nil
	}
	body := map[string]any{"supplier": supplier, "sku": q.Get("sku"),
		"unit_cents": offer[0], "shipping_cents": offer[1], "stock": offer[2]}
	if supplier == "boreal" {
		switch q.Get("scenario") {
		case "flaky":
			if !seen {
				return boreal503(r), nil
			}
		case "broken":
			return boreal503(r), nil
		case "malformed":
			body["unit_cents"] = fmt.Sprint(offer[0]) // a JSON string, not a number
		}
	}
	return respond(r, http.StatusOK, body), nil
}

func boreal503(r *http.Request) *http.Response {
	return respond(r, http.StatusServiceUnavailable, map[string]string{"error": "unavailable"})
}

// seenLocked reports whether supplier already had a call with this id.
func (s *suppliers) seenLocked(supplier, id string) bool {
	return slices.ContainsFunc(s.calls, func(c call) bool { return c.supplier == supplier && c.id == id })
}

// ids returns the X-Request-ID of each call supplier received, in order.
func (s *suppliers) ids(supplier string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, c := range s.calls {
		if c.supplier == supplier {
			ids = append(ids, c.id)
		}
	}
	return ids
}

func respond(r *http.Request, status int, v any) *http.Response {
	body, _ := json.Marshal(v)
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(string(body))),
		Request:    r,
	}
}

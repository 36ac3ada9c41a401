// Command answer_previous is the reference answer to exercise E13 (lesson 13):
// a rejected request does not steal a slot, and QuoteFlow's own 503 is not
// a supplier's 503.
//
//	go run ./lessons/14/answer_previous
//
// Part one drives checkpoint 13's service directly with an inbound limit of
// 1. A fake supplier transport tells the answer (a channel) when the first
// request's call has arrived and keeps it there until released, so the one
// slot is known to be held when the second request is sent. The second
// must be rejected with ErrBusy at once; then, after the first has finished,
// the service must be empty again and take a third request.
//
// Part two goes through the HTTP handler: with the slot held by Admit, the
// API answers 503 with Retry-After: 1; with the slot free and every supplier
// answering 503, it answers 200 with best null and three http_503 failures.
//
// Every wait is capped, so a service that queues or hangs fails this answer
// instead of blocking it.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"quoteflowlab.dev/checkpoints/13/quoteflow"
)

const (
	wait   = 2 * time.Second        // cap on anything that should happen soon
	prompt = 500 * time.Millisecond // a rejection must take far less than this
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "E13 failed:", err)
		os.Exit(1)
	}
	fmt.Println("E13 passed: inbound limit 1: while the first quote was parked a second got ErrBusy at once; " +
		"afterwards 0 active and a third succeeded; HTTP: held slot -> 503 Retry-After: 1, " +
		"supplier 503s -> 200 best null with 3 http_503")
}

func run() error {
	if err := rejectionStealsNoSlot(); err != nil {
		return err
	}
	return twoKindsOf503()
}

var kb001 = quoteflow.QuoteRequest{SKU: "KB-001", Quantity: 2, Scenario: "normal"}

// rejectionStealsNoSlot is part one: Quote, ErrBusy and ActiveRequests.
func rejectionStealsNoSlot() error {
	suppliers := newParkingSuppliers()
	svc, err := quoteflow.New(quoteflow.Config{
		ProviderURL:  "http://provider.test",
		Transport:    suppliers,
		InboundLimit: 1,
		Budget:       4 * time.Second, // longer than any wait below: the first quote must not time out
	})
	if err != nil {
		return err
	}
	defer svc.Close()

	first := goQuote(context.Background(), svc)
	select {
	case <-suppliers.entered:
	case <-time.After(wait):
		return fmt.Errorf("the first quote never reached a supplier within %v", wait)
	}

	// The only slot is held now. The second request must be turned away at
	// once; its context and our timer both cap the wait, so a service that
	// queues it shows up as a failure here, not as a hang.
	ctx, cancel := context.WithTimeout(context.Background(), prompt)
	defer cancel()
	select {
	case r := <-goQuote(ctx, svc):
		if !errors.Is(r.err, quoteflow.ErrBusy) {
			return fmt.Errorf("second quote while the only slot was held: got %v, want ErrBusy", describe(r))
		}
	case <-time.After(prompt + 100*time.Millisecond):
		return fmt.Errorf("second quote while the only slot was held: no answer within %v; it queued instead of being rejected", prompt)
	}
	if n := svc.ActiveRequests(); n != 1 {
		return fmt.Errorf("after the rejection ActiveRequests() = %d, want 1: the rejected request changed the counter", n)
	}

	suppliers.releaseAll()
	select {
	case r := <-first:
		if r.err != nil || r.res.Best == nil {
			return fmt.Errorf("first quote after release: got %v, want a result with a best quote", describe(r))
		}
	case <-time.After(wait):
		return fmt.Errorf("first quote: no result within %v of releasing its suppliers", wait)
	}
	if n := svc.ActiveRequests(); n != 0 {
		return fmt.Errorf("after the first quote finished ActiveRequests() = %d, want 0: a slot was not returned", n)
	}

	ctx, cancel = context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := svc.Quote(ctx, kb001)
	if err != nil || res.Best == nil {
		return fmt.Errorf("third quote, with the service idle again: got %v, want a result with a best quote", describe(quoteResult{res, err}))
	}
	if n := svc.ActiveRequests(); n != 0 {
		return fmt.Errorf("after the third quote ActiveRequests() = %d, want 0", n)
	}
	return nil
}

// twoKindsOf503 is part two, through the HTTP handler.
func twoKindsOf503() error {
	suppliers := &unavailableSuppliers{}
	svc, err := quoteflow.New(quoteflow.Config{
		ProviderURL:  "http://provider.test",
		Transport:    suppliers,
		InboundLimit: 1,
		Budget:       wait,
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	api := svc.Handler()

	release, err := svc.Admit()
	if err != nil {
		return fmt.Errorf("Admit on an idle service: %v", err)
	}
	rec, err := post(api, `{"sku": "KB-001", "quantity": 2}`)
	release()
	if err != nil {
		return err
	}
	if rec.Code != http.StatusServiceUnavailable {
		return fmt.Errorf("POST while the only slot was held: got HTTP %d, want 503 (body %s)", rec.Code, short(rec.Body.String()))
	}
	if got := rec.Header().Get("Retry-After"); got != "1" {
		return fmt.Errorf("POST while the only slot was held: Retry-After is %q, want \"1\"", got)
	}
	var busy struct{ Detail string }
	if err := json.Unmarshal(rec.Body.Bytes(), &busy); err != nil || busy.Detail != "capacity_exhausted" {
		return fmt.Errorf("POST while the only slot was held: body %s, want {\"detail\":\"capacity_exhausted\"}", short(rec.Body.String()))
	}
	if n := suppliers.calls.Load(); n != 0 {
		return fmt.Errorf("the rejected request reached the suppliers %d times, want 0", n)
	}
	if n := svc.ActiveRequests(); n != 0 {
		return fmt.Errorf("after release() ActiveRequests() = %d, want 0", n)
	}

	rec, err = post(api, `{"sku": "KB-001", "quantity": 2}`)
	if err != nil {
		return err
	}
	if rec.Code != http.StatusOK {
		return fmt.Errorf("POST with every supplier answering 503: got HTTP %d, want 200 with http_503 failures (body %s)",
			rec.Code, short(rec.Body.String()))
	}
	var res struct {
		Best     *json.RawMessage
		Quotes   []json.RawMessage
		Failures []quoteflow.Failure
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil {
		return fmt.Errorf("POST with every supplier answering 503: body is not a quote result: %v", err)
	}
	if res.Best != nil || len(res.Quotes) != 0 {
		return fmt.Errorf("POST with every supplier answering 503: want best null and no quotes, got %s", short(rec.Body.String()))
	}
	if len(res.Failures) != 3 {
		return fmt.Errorf("POST with every supplier answering 503: want 3 failures, got %v", res.Failures)
	}
	for _, f := range res.Failures {
		if f.Code != quoteflow.HTTPCode(http.StatusServiceUnavailable) {
			return fmt.Errorf("POST with every supplier answering 503: %s failed with %q, want http_503", f.Supplier, f.Code)
		}
	}
	if n := svc.ActiveRequests(); n != 0 {
		return fmt.Errorf("after the last POST ActiveRequests() = %d, want 0", n)
	}
	return nil
}

type quoteResult struct {
	res quoteflow.QuoteResult
	err error
}

// goQuote runs one Quote in its own goroutine; the channel is buffered so
// the goroutine can always finish, even if nobody reads the result.
func goQuote(ctx context.Context, svc *quoteflow.Service) <-chan quoteResult {
	ch := make(chan quoteResult, 1)
	go func() {
		res, err := svc.Quote(ctx, kb001)
		ch <- quoteResult{res, err}
	}()
	return ch
}

func describe(r quoteResult) string {
	if r.err != nil {
		return "error " + r.err.Error()
	}
	return fmt.Sprintf("a result with %d quotes, failures %v", len(r.res.Quotes), r.res.Failures)
}

// post sends one POST /api/quotes through the handler, capped at wait.
func post(api http.Handler, body string) (*httptest.ResponseRecorder, error) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/api/quotes", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	done := make(chan struct{})
	go func() {
		defer close(done)
		api.ServeHTTP(rec, req)
	}()
	select {
	case <-done:
		return rec, nil
	case <-time.After(wait):
		return nil, fmt.Errorf("POST %s: no answer within %v", body, wait)
	}
}

func short(body string) string {
	body = strings.TrimSpace(body)
	if len(body) > 200 {
		return body[:200] + "..."
	}
	return body
}

// parkingSuppliers closes entered when the first call arrives, and holds
// every call until releaseAll (or until the call's context ends); then it
// answers with a valid quote.
type parkingSuppliers struct {
	entered     chan struct{}
	enteredOnce sync.Once
	release     chan struct{}
	releaseOnce sync.Once
}

func newParkingSuppliers() *parkingSuppliers {
	return &parkingSuppliers{entered: make(chan struct{}), release: make(chan struct{})}
}

func (p *parkingSuppliers) releaseAll() { p.releaseOnce.Do(func() { close(p.release) }) }

func (p *parkingSuppliers) RoundTrip(r *http.Request) (*http.Response, error) {
	p.enteredOnce.Do(func() { close(p.entered) })
	select {
	case <-p.release:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	supplier := path.Base(r.URL.Path)
	return jsonResponse(r, http.StatusOK, map[string]any{
		"supplier": supplier, "sku": r.URL.Query().Get("sku"),
		"unit_cents": 1000, "shipping_cents": 100, "stock": 10,
	}), nil
}

// unavailableSuppliers answers every call with the supplier's own 503, and
// counts the calls.
type unavailableSuppliers struct{ calls atomic.Int64 }

func (u *unavailableSuppliers) RoundTrip(r *http.Request) (*http.Response, error) {
	u.calls.Add(1)
	return jsonResponse(r, http.StatusServiceUnavailable, map[string]string{"error": "unavailable"}), nil
}

func jsonResponse(r *http.Request, status int, v any) *http.Response {
	body, _ := json.Marshal(v)
	return &http.Response{
		StatusCode: status,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(string(body))),
		Request:    r,
	}
}

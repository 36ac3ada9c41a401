// Command answer_previous is the reference answer to exercise E12 (lesson 12):
// a request with an invalid quantity is rejected with 422, and no supplier
// is contacted.
//
//	go run ./lessons/13/answer_previous
//
// It drives checkpoint 12's real HTTP handler in-process, with a fake
// supplier transport (an http.RoundTripper) that counts every call. The
// count is the point: a service that validated after the fan-out would
// still answer 422, but three suppliers would already have been asked.
// A second, valid request proves the counter is wired: it must see 3 calls.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"quoteflowlab.dev/checkpoints/12/quoteflow"
)

// wait caps every exchange, so a service that hangs fails this answer instead.
const wait = 2 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "E12 failed:", err)
		os.Exit(1)
	}
	fmt.Println("E12 passed: quantity 0 got 422 naming quantity with 0 supplier calls; a valid request got 200 with 3 calls")
}

func run() error {
	suppliers := &countingSuppliers{}
	svc, err := quoteflow.New(quoteflow.Config{ProviderURL: "http://provider.test", Transport: suppliers})
	if err != nil {
		return err
	}
	defer svc.Close()
	api := svc.Handler()

	status, body, err := post(api, `{"sku": "KB-001", "quantity": 0}`)
	if err != nil {
		return err
	}
	if status != http.StatusUnprocessableEntity {
		return fmt.Errorf("quantity 0: got HTTP %d, want 422 (body %s)", status, short(body))
	}
	if !strings.Contains(body, "quantity") {
		return fmt.Errorf("quantity 0: the 422 detail does not name the field: %s", body)
	}
	if n := suppliers.calls.Load(); n != 0 {
		return fmt.Errorf("quantity 0: got 422, but the suppliers were called %d times before the rejection; want 0", n)
	}

	status, body, err = post(api, `{"sku": "KB-001", "quantity": 2}`)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("quantity 2: got HTTP %d, want 200 (body %s)", status, short(body))
	}
	if n := suppliers.calls.Load(); n != 3 {
		return fmt.Errorf("quantity 2: the fake suppliers saw %d calls, want 3 (is the transport wired?)", n)
	}
	return nil
}

// post sends one POST /api/quotes through the handler and returns the
// status and body, or an error if the handler does not finish within wait.
func post(api http.Handler, body string) (int, string, error) {
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
		return rec.Code, strings.TrimSpace(rec.Body.String()), nil
	case <-time.After(wait):
		return 0, "", fmt.Errorf("POST %s: no answer within %v", body, wait)
	}
}

// short keeps an error message readable when a body is long.
func short(body string) string {
	if len(body) > 200 {
		return body[:200] + "..."
	}
	return body
}

// countingSuppliers answers every supplier call with a valid quote and
// counts the calls. It is safe for concurrent use: the service asks the
// three suppliers from three goroutines.
type countingSuppliers struct{ calls atomic.Int64 }

func (c *countingSuppliers) RoundTrip(r *http.Request) (*http.Response, error) {
	c.calls.Add(1)
	supplier := path.Base(r.URL.Path)
	if r.URL.Path != "/quotes/"+supplier {
		return nil, errors.New("unexpected path " + r.URL.Path)
	}
	quote, _ := json.Marshal(map[string]any{
		"supplier": supplier, "sku": r.URL.Query().Get("sku"),
		"unit_cents": 1000, "shipping_cents": 100, "stock": 10,
	})
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(string(quote))),
		Request:    r,
	}, nil
}

package quoteflow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// newService builds a Service around a fake transport and closes it at cleanup.
func newService(t *testing.T, cfg Config) *Service {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// post sends a body to POST /api/quotes through the handler, no network.
func post(t *testing.T, h http.Handler, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/api/quotes", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// testCtx is a context that ends the test's waits after a few seconds.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func decodeJSON[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("response is not JSON: %v: %q", err, rec.Body.String())
	}
	return v
}

func kb(quantity int) QuoteRequest {
	return QuoteRequest{SKU: "KB-001", Quantity: quantity, Scenario: "normal"}
}

// codes maps supplier to failure code.
func codes(res QuoteResult) map[string]Code {
	m := map[string]Code{}
	for _, f := range res.Failures {
		m[f.Supplier] = f.Code
	}
	return m
}

// quoted lists the suppliers in Quotes, in order.
func quoted(res QuoteResult) []string {
	var names []string
	for _, q := range res.Quotes {
		names = append(names, q.Supplier)
	}
	return names
}

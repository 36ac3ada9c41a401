package quoteflow

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"quoteflowlab.dev/checkpoints/20/hedge"
)

func TestHealth(t *testing.T) {
	s := newService(t, Config{Transport: newFake(nil)})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	if rec.Code != http.StatusOK || decodeJSON[map[string]string](t, rec)["status"] != "ok" {
		t.Errorf("GET /health = %d %s, want 200 {\"status\":\"ok\"}", rec.Code, rec.Body)
	}
}

func TestAQuoteIsA200WithTheDocumentedFields(t *testing.T) {
	s := newService(t, Config{Transport: newFake(nil)})
	rec := post(t, s.Handler(), `{"sku": "KB-001", "quantity": 2, "scenario": "normal"}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200: %s", rec.Code, rec.Body)
	}
	got := decodeJSON[map[string]any](t, rec)
	for _, key := range []string{"sku", "quantity", "quotes", "failures", "best", "elapsed_ms", "request_id"} {
		if _, ok := got[key]; !ok {
			t.Errorf("response has no %q: %s", key, rec.Body)
		}
	}
	best, _ := got["best"].(map[string]any)
	if best["supplier"] != "boreal" || best["total_cents"] != 2600.0 {
		t.Errorf("best = %v, want boreal at 2600", got["best"])
	}
}

func TestSupplierFailuresAreStillA200(t *testing.T) {
	s := newService(t, Config{Transport: newFake(map[string]reply{
		"atlas": status(503), "boreal": status(503), "cedar": status(503)})})
	rec := post(t, s.Handler(), `{}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 with failures inside: %s", rec.Code, rec.Body)
	}
	got := decodeJSON[map[string]any](t, rec)
	if quotes, ok := got["quotes"].([]any); !ok || len(quotes) != 0 {
		t.Errorf("quotes = %v, want []", got["quotes"])
	}
	if got["best"] != nil {
		t.Errorf("best = %v, want null", got["best"])
	}
	if failures, _ := got["failures"].([]any); len(failures) != 3 {
		t.Errorf("failures = %v, want three http_503", got["failures"])
	}
}

// Every error of ours is JSON with a detail sentence, the router's too.
func TestRoutingErrorsAreJSON(t *testing.T) {
	s := newService(t, Config{Transport: newFake(nil)})
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodGet, "/api/quotes", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPut, "/api/quotes", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/health", http.StatusMethodNotAllowed, "GET"},
		{http.MethodGet, "/api/quote", http.StatusNotFound, ""},
		{http.MethodPost, "/", http.StatusNotFound, ""},
	} {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(c.method, c.path, nil))
			if rec.Code != c.status {
				t.Errorf("status = %d, want %d", rec.Code, c.status)
			}
			if got := rec.Header().Get("Allow"); got != c.allow {
				t.Errorf("Allow = %q, want %q", got, c.allow)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			if got := decodeJSON[map[string]string](t, rec)["detail"]; !strings.Contains(got, c.path) {
				t.Errorf("detail = %q, want a sentence naming %s", got, c.path)
			}
		})
	}
}

func TestOurCapacityIsA503WithRetryAfter(t *testing.T) {
	s := newService(t, Config{Transport: newFake(nil), InboundLimit: 1})
	release, err := s.Admit()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	rec := post(t, s.Handler(), `{}`)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" {
		t.Errorf("status %d, Retry-After %q; want 503 and 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	if got := decodeJSON[map[string]string](t, rec)["detail"]; got != "capacity_exhausted" {
		t.Errorf("detail = %q, want capacity_exhausted", got)
	}
}

func TestASupplier503IsInsideA200(t *testing.T) {
	s := newService(t, Config{Transport: newFake(map[string]reply{
		"atlas": status(503), "boreal": status(503), "cedar": status(503)})})
	rec := post(t, s.Handler(), `{}`)
	if rec.Code != http.StatusOK || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("status %d, Retry-After %q; want 200 and none", rec.Code, rec.Header().Get("Retry-After"))
	}
	res := decodeJSON[QuoteResult](t, rec)
	for _, name := range suppliers {
		if got := codes(res)[name]; got != HTTPCode(503) {
			t.Errorf("%s = %q, want http_503", name, got)
		}
	}
}

func TestValidationComesBeforeAdmission(t *testing.T) {
	s := newService(t, Config{Transport: newFake(nil), InboundLimit: 1})
	release, err := s.Admit()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if rec := post(t, s.Handler(), `{"quantity": 0}`); rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("invalid request while full: status %d, want 422", rec.Code)
	}
}

// An answer that cannot be encoded is a 500 that says why, never the
// intended status with an empty body.
func TestWriteJSONNeverAnswersAnEmptyBody(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, map[string]float64{"tokens": math.NaN()})
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"reason":"the answer could not be encoded as JSON: json: unsupported value: NaN"`) {
		t.Errorf("writeJSON of a NaN: %d %q, want 500 with the reason", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	writeJSON(rec, http.StatusAccepted, map[string]string{"detail": "<ok>"})
	if rec.Code != http.StatusAccepted || rec.Body.String() != "{\"detail\":\"\\u003cok\\u003e\"}\n" || rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("writeJSON of a value: %d %q %q, want 202 and the value as JSON, one line", rec.Code, rec.Body, rec.Header().Get("Content-Type"))
	}
}

// GET /api/budget of a budget that holds NaN tokens (a Config no flag
// accepts any more) answers 500 with the reason; it answered 200 with an
// empty body.
func TestBudgetThatCannotBeEncodedIsA500(t *testing.T) {
	s := newService(t, Config{Transport: newFake(nil), ExtraConfig: hedge.BudgetConfig{Ratio: math.NaN(), Cap: math.NaN()}})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/budget", nil))
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), "unsupported value: NaN") {
		t.Errorf("GET /api/budget with NaN tokens = %d %q, want 500 naming the NaN", rec.Code, rec.Body)
	}
}

package provider_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

// strictQuote decodes a 200 supplier body, rejecting any unknown field.
func strictQuote(t *testing.T, r response) provider.Quote {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200; body %s", r.status, r.body)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(r.body)))
	dec.DisallowUnknownFields()
	var q provider.Quote
	if err := dec.Decode(&q); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	return q
}

func TestKB001AtQuantityTwoBorealIsCheapestInStockAtlasSecondCedarFiltered(t *testing.T) {
	s := newTestServer(t, provider.Options{})
	total := map[string]int{}
	for _, sup := range provider.Suppliers {
		q := strictQuote(t, s.get("/quotes/"+sup+"?sku=KB-001&scenario=normal"))
		if q.Supplier != sup || q.SKU != "KB-001" {
			t.Fatalf("%s answered %+v", sup, q)
		}
		if q.Stock >= 2 {
			total[sup] = q.UnitCents*2 + q.ShippingCents
		} else if q.Stock != 1 || sup != "cedar" {
			t.Errorf("%s stock %d", sup, q.Stock)
		}
	}
	if len(total) != 2 || total["boreal"] >= total["atlas"] {
		t.Errorf("quantity-2 totals %v: want boreal < atlas and cedar filtered", total)
	}
}

func TestEveryScenarioOnBoreal(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{LatencyScale: 0.02}) // slow: 30 ms
	const path = "/quotes/boreal?sku=KB-001&scenario="
	t.Run("normal answers the catalog quote", func(t *testing.T) {
		if q := strictQuote(t, s.get(path+"normal")); q.UnitCents != 1199 {
			t.Errorf("quote %+v", q)
		}
	})
	t.Run("slow answers after 1500 ms times the scale", func(t *testing.T) {
		r := s.get(path + "slow")
		strictQuote(t, r)
		if r.elapsed < 30*time.Millisecond {
			t.Errorf("answered after %v, want at least 30ms", r.elapsed)
		}
	})
	t.Run("broken is 503 every time", func(t *testing.T) {
		for range 3 {
			wantError(t, s.get(path+"broken", "X-Request-ID", "b1"), 503, "unavailable")
		}
	})
	t.Run("malformed sends unit_cents as a string", func(t *testing.T) {
		var body map[string]any
		decode(t, s.get(path+"malformed"), 200, &body)
		if _, ok := body["unit_cents"].(string); !ok || len(body) != 5 {
			t.Errorf("body %v: want 5 fields with unit_cents a string", body)
		}
	})
	t.Run("flaky fails the first request of an ID only", func(t *testing.T) {
		wantError(t, s.get(path+"flaky", "X-Request-ID", "f1"), 503, "unavailable")
		strictQuote(t, s.get(path+"flaky", "X-Request-ID", "f1"))
		strictQuote(t, s.get(path+"flaky", "X-Request-ID", "f1"))
		wantError(t, s.get(path+"flaky", "X-Request-ID", "f2"), 503, "unavailable")
	})
	t.Run("flaky without an ID fails every time", func(t *testing.T) {
		wantError(t, s.get(path+"flaky"), 503, "unavailable")
		wantError(t, s.get(path+"flaky"), 503, "unavailable")
	})
	t.Run("gzip sends bytes that do not decode", func(t *testing.T) {
		r := s.get(path + "gzip")
		if r.status != 200 || r.header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("status %d, Content-Encoding %q", r.status, r.header.Get("Content-Encoding"))
		}
		_, err := gzip.NewReader(bytes.NewReader([]byte(r.body)))
		if !errors.Is(err, gzip.ErrHeader) {
			t.Errorf("gzip.NewReader: %v, want gzip.ErrHeader", err)
		}
	})
	t.Run("mismatch names another SKU", func(t *testing.T) {
		if q := strictQuote(t, s.get(path+"mismatch")); q.SKU == "KB-001" || q.Supplier != "boreal" {
			t.Errorf("quote %+v: want boreal quoting another SKU", q)
		}
	})
}

func TestGoClientSeesBadGzipAsDecodeError(t *testing.T) {
	s := newTestServer(t, provider.Options{})
	// The default transport asks for gzip and decodes it transparently,
	// so the fault surfaces while reading the body.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(s.url + "/quotes/boreal?sku=KB-001&scenario=gzip")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); !errors.Is(err, gzip.ErrHeader) {
		t.Errorf("reading body: %v, want gzip.ErrHeader", err)
	}
}

func TestResetClosesTheFirstConnectionWithRST(t *testing.T) {
	s := newTestServer(t, provider.Options{})
	const path = "/quotes/boreal?sku=KB-001&scenario=reset"
	// A fresh connection per request: net/http does not retry on a new
	// connection, so the reset reaches us.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func() (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
		req.Header.Set("X-Request-ID", "r1")
		return client.Do(req)
	}
	_, err := get()
	// Windows reports a reset with its own error number.
	isReset := errors.Is(err, syscall.ECONNRESET) || (runtime.GOOS == "windows" && err != nil)
	if !isReset {
		t.Fatalf("first request: %v, want ECONNRESET", err)
	}
	resp, err := get()
	if err != nil {
		t.Fatalf("second request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("second request: status %d", resp.StatusCode)
	}
	st := s.stats()
	if st.Resets != 1 || st.PerSupplier.Boreal != 2 {
		t.Errorf("resets %d, boreal %d; want 1 and 2 (a reset request is still counted)", st.Resets, st.PerSupplier.Boreal)
	}
}

func TestAtlasAndCedarAnswerNormallyInEveryScenario(t *testing.T) {
	s := newTestServer(t, provider.Options{})
	for _, sc := range []string{"normal", "slow", "broken", "malformed", "flaky", "gzip", "reset", "mismatch"} {
		for _, sup := range []string{"atlas", "cedar"} {
			q := strictQuote(t, s.get(fmt.Sprintf("/quotes/%s?sku=KB-001&scenario=%s", sup, sc)))
			if q.Supplier != sup || q.SKU != "KB-001" {
				t.Errorf("%s in %s: %+v", sup, sc, q)
			}
		}
	}
}

func TestBadInputIsAJSONError(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	cases := []struct {
		path   string
		status int
		code   string
	}{
		{"/quotes/delta?sku=KB-001", 404, "unknown_supplier"},
		{"/quotes/atlas?sku=KB-001&scenario=sleepy", 400, "unknown_scenario"},
		{"/quotes/atlas", 404, "unknown_sku"},
		{"/call?ms=-1", 400, "bad_parameter"},
		{"/call?ms=60001", 400, "bad_parameter"},
		{"/call?ms=1.5", 400, "bad_parameter"},
		{"/call?fail=101", 400, "bad_parameter"},
		{"/call?fail=x", 400, "bad_parameter"},
		{"/budget?ms=abc", 400, "bad_parameter"},
		{"/nowhere", 404, "not_found"},
	}
	for _, sc := range []string{"normal", "slow", "broken", "malformed", "flaky", "gzip", "reset", "mismatch"} {
		for _, sup := range provider.Suppliers {
			cases = append(cases, struct {
				path   string
				status int
				code   string
			}{fmt.Sprintf("/quotes/%s?sku=NOPE&scenario=%s", sup, sc), 404, "unknown_sku"})
		}
	}
	for _, c := range cases {
		wantError(t, s.get(c.path), c.status, c.code)
	}
	r, err := s.do(context.Background(), http.MethodPost, "/stats")
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
	for _, b := range []string{"soon", "-1", "NaN", "Inf", "1e99"} {
		wantError(t, s.get("/quotes/atlas?sku=KB-001", "X-Budget-Ms", b), 400, "bad_budget")
		wantError(t, s.get("/budget?ms=0", "X-Budget-Ms", b), 400, "bad_budget")
	}
	wantError(t, s.get("/stats/requests"), 400, "bad_parameter")
}

package provider_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"quoteflowlab.dev/provider"
)

// control sends one request to h from a loopback peer, for host, with
// headers given as "Name", "value" pairs.
func control(h http.Handler, method, host, path string, headers ...string) response {
	req := httptest.NewRequest(method, "http://127.0.0.1:9101"+path, nil)
	req.Host = host
	req.RemoteAddr = "127.0.0.1:40000"
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return recorded(rec)
}

// A page whose own name resolves to 127.0.0.1 (DNS rebinding) reaches the
// lab from a loopback peer but names its own host: it must not read the
// counters or the dashboard.
func TestControlEndpointsAnswerOnlyALoopbackHost(t *testing.T) {
	t.Parallel()
	p := provider.New(provider.Options{})
	defer p.CloseStreams()
	h := p.Routes()
	for _, path := range []string{"/stats", "/stats/requests?id=x", "/stats/partner?key=k", "/ui", "/stats/stream"} {
		for _, host := range []string{"rebound.example:9101", "rebound.example", "127.0.0.1.nip.io:9101", "localhost.example:9101", "10.0.0.1:9101", ""} {
			wantError(t, control(h, http.MethodGet, host, path), http.StatusForbidden, "forbidden_host")
		}
	}
	json := []string{"Content-Type", "application/json"}
	for _, host := range []string{"rebound.example:9101", "192.168.1.10:9101"} {
		wantError(t, control(h, http.MethodPost, host, "/reset", json...), http.StatusForbidden, "forbidden_host")
	}
	for _, host := range []string{"127.0.0.1:9101", "127.0.0.1", "localhost:9101", "LOCALHOST", "[::1]:9101", "[::1]", "127.3.4.5:80"} {
		for _, path := range []string{"/stats", "/stats/requests?id=x", "/ui"} {
			if r := control(h, http.MethodGet, host, path); r.status != http.StatusOK {
				t.Errorf("GET %s for Host %q: %d %s, want 200", path, host, r.status, r.body)
			}
		}
		if r := control(h, http.MethodPost, host, "/reset", json...); r.status != http.StatusOK {
			t.Errorf("POST /reset for Host %q: %d %s, want 200", host, r.status, r.body)
		}
	}
}

// A web page can send a simple POST to any origin without asking (a form,
// a no-cors fetch): POST /reset must refuse every request such a page can
// send, and take the one a program (curl -X POST, lab reset) or the lab's
// own page sends.
func TestResetRefusesWhatAnotherOriginCanSend(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	h := s.p.Routes()
	const host = "127.0.0.1:9101"
	s.get("/quotes/atlas?sku=KB-001")
	refused := []struct {
		why     string
		status  int
		code    string
		headers []string
	}{
		{"a no-cors fetch without a body, cross-site", 403, "cross_origin", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors", "Origin", "http://localhost:8000"}},
		{"an older browser's no-cors fetch without a body", 403, "cross_origin", []string{"Origin", "http://localhost:8000"}},
		{"a browser that says same-origin but sends no Content-Type", 415, "json_required", []string{"Sec-Fetch-Site", "same-origin"}},
		{"only a Sec-Fetch-Mode, no Content-Type", 415, "json_required", []string{"Sec-Fetch-Mode", "no-cors"}},
		{"only a Referer, no Content-Type", 415, "json_required", []string{"Referer", "http://localhost:8000/"}},
		{"an empty body with curl -d ''", 415, "json_required", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"text/plain (a no-cors fetch with a string body)", 415, "json_required", []string{"Content-Type", "text/plain;charset=UTF-8"}},
		{"a form", 415, "json_required", []string{"Content-Type", "application/x-www-form-urlencoded"}},
		{"a multipart form", 415, "json_required", []string{"Content-Type", "multipart/form-data; boundary=x"}},
		{"JSON in the wrong type", 415, "json_required", []string{"Content-Type", "text/json"}},
		{"a browser says cross-site", 403, "cross_origin", []string{"Content-Type", "application/json", "Sec-Fetch-Site", "cross-site"}},
		{"a browser says same-site (localhost vs 127.0.0.1 port)", 403, "cross_origin", []string{"Content-Type", "application/json", "Sec-Fetch-Site", "same-site"}},
		{"an older browser's Origin names another port", 403, "cross_origin", []string{"Content-Type", "application/json", "Origin", "http://127.0.0.1:8000"}},
		{"an older browser's Origin names localhost", 403, "cross_origin", []string{"Content-Type", "application/json", "Origin", "http://localhost:9101"}},
		{"a cross-site form even with the no-cors type", 403, "cross_origin", []string{"Content-Type", "text/plain", "Sec-Fetch-Site", "cross-site"}},
	}
	for _, c := range refused {
		r := control(h, http.MethodPost, host, "/reset", c.headers...)
		if r.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.why, r.status, r.body, c.status)
			continue
		}
		wantError(t, r, c.status, c.code)
	}
	// The refused requests above went to another Provider's routes; this
	// server's counters are untouched by them by construction, so check the
	// refusals on the served lab too: nothing is reset.
	for _, c := range refused {
		if r, err := s.do(t.Context(), http.MethodPost, "/reset", c.headers...); err != nil || r.status != c.status {
			t.Errorf("%s, over HTTP: %v %d %s, want %d", c.why, err, r.status, r.body, c.status)
		}
	}
	if st := s.stats(); st.Total != 1 {
		t.Errorf("after %d refused resets the lab counts %d requests, want 1", len(refused), st.Total)
	}
	accepted := [][]string{
		nil,                                  // curl -X POST: no browser header, no Content-Type
		{"Content-Type", "application/json"}, // lab reset, curl -H
		{"Content-Type", "application/json; charset=utf-8"},                   // a parameter is fine
		{"Content-Type", "application/json", "Sec-Fetch-Site", "same-origin"}, // the dashboard's button
		{"Content-Type", "application/json", "Origin", "http://127.0.0.1:9101"},
	}
	for _, hd := range accepted {
		if r := control(h, http.MethodPost, host, "/reset", hd...); r.status != http.StatusOK || r.body != "{\"ok\":true}\n" {
			t.Errorf("POST /reset with %q: %d %s, want 200 {\"ok\":true}", hd, r.status, r.body)
		}
	}
	if r, err := s.do(t.Context(), http.MethodPost, "/reset", "Content-Type", "application/json"); err != nil || r.status != 200 {
		t.Fatalf("POST /reset as JSON: %v %d %s", err, r.status, r.body)
	}
	if st := s.stats(); st.Total != 0 {
		t.Errorf("after an accepted reset the lab counts %d requests, want 0", st.Total)
	}
	// A plain POST with no header at all (curl -X POST, as the source
	// course resets before every round of figures) resets too.
	s.get("/quotes/atlas?sku=KB-001")
	if r, err := s.do(t.Context(), http.MethodPost, "/reset"); err != nil || r.status != 200 || r.body != "{\"ok\":true}\n" {
		t.Fatalf("a plain POST /reset: %v %d %s, want 200 {\"ok\":true}", err, r.status, r.body)
	}
	if st := s.stats(); st.Total != 0 {
		t.Errorf("after a plain POST /reset the lab counts %d requests, want 0", st.Total)
	}
}

package provider_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"quoteflowlab.dev/kit/testpar"

	"go.uber.org/goleak"

	"quoteflowlab.dev/provider"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(wide{m}) }

// testsAtOnce is how many parallel tests run at once when go test is not
// given -parallel, per CPU. The lab's tests mostly wait out the latencies
// they ask for (a 5 s stream timeout, 600 ms drips) and use little CPU, so
// one per CPU, go test's default, kept the package running for seconds
// with the CPUs idle.
const testsAtOnce = 4

// wide runs the tests with -parallel set to testsAtOnce per CPU unless the
// command line sets it.
type wide struct{ m *testing.M }

func (w wide) Run() int {
	testpar.PerCPU(testsAtOnce, 1)
	return w.m.Run()
}

// testServer is a provider served over real HTTP on a free loopback port.
type testServer struct {
	t      *testing.T
	p      *provider.Provider
	url    string
	client *http.Client
}

// newTestServer serves a new provider with opts (LatencyScale 0 unless set)
// and closes it when the test ends.
func newTestServer(t *testing.T, opts provider.Options) *testServer {
	t.Helper()
	p := provider.New(opts)
	srv := httptest.NewServer(p.Routes())
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 256}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return &testServer{t: t, p: p, url: srv.URL, client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// response is what a test looks at in an answer.
type response struct {
	status  int
	header  http.Header
	body    string
	elapsed time.Duration
}

// do sends one request with headers given as "Name", "value" pairs.
func (s *testServer) do(ctx context.Context, method, path string, headers ...string) (response, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, nil)
	if err != nil {
		return response{}, err
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return response{elapsed: time.Since(start)}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, string(b), time.Since(start)}, err
}

// get sends a GET and fails the test on a transport error.
func (s *testServer) get(path string, headers ...string) response {
	s.t.Helper()
	r, err := s.do(context.Background(), http.MethodGet, path, headers...)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	return r
}

// stats returns GET /stats decoded.
func (s *testServer) stats() provider.Stats {
	s.t.Helper()
	var st provider.Stats
	decode(s.t, s.get("/stats"), http.StatusOK, &st)
	return st
}

// waitStats polls /stats until ok holds, failing after a capped wait.
func (s *testServer) waitStats(what string, ok func(provider.Stats) bool) provider.Stats {
	s.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.stats()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("waited 10s for %s; stats: %+v", what, st)
		}
		time.Sleep(2 * time.Millisecond) // polling the lab's public counters; there is no event to wait on
	}
}

// decode checks the status and decodes the JSON body into v.
func decode(t *testing.T, r response, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
}

// wantError checks an error answer: status and {"error": code, "detail": non-empty}, nothing else.
func wantError(t *testing.T, r response, status int, code string) {
	t.Helper()
	var body map[string]any
	decode(t, r, status, &body)
	if body["error"] != code || len(body) != 2 || body["detail"] == "" {
		t.Fatalf("body %s, want {\"error\":%q,\"detail\":...}", strings.TrimSpace(r.body), code)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
}

// readResponse reads and closes resp.
func readResponse(t *testing.T, resp *http.Response) response {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"runtime"
	"syscall"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

func TestBudgetShorterThanTheDelayStopsAtTheBudgetWith504(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{LatencyScale: 1})
	r := s.get("/quotes/boreal?sku=KB-001&scenario=slow", "X-Budget-Ms", "100")
	wantError(t, r, http.StatusGatewayTimeout, "budget_exhausted")
	if r.elapsed < 100*time.Millisecond || r.elapsed > time.Second {
		t.Errorf("answered after %v; want about 100ms (stopped at the budget, not at 1500ms)", r.elapsed)
	}
	// A budget longer than the planned delay changes nothing.
	strictQuote(t, s.get("/quotes/atlas?sku=KB-001", "X-Budget-Ms", "500"))
	// Zero budget: stop at once.
	wantError(t, s.get("/quotes/cedar?sku=KB-001", "X-Budget-Ms", "0"), http.StatusGatewayTimeout, "budget_exhausted")
	st := s.stats()
	if st.Abandoned != 2 || st.PerStatus["504"] != 2 {
		t.Errorf("abandoned %d, per_status %v; want 2 and 504:2", st.Abandoned, st.PerStatus)
	}
}

func TestPartnerDelaysAreHonestAndFailCountsPerKey(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{LatencyScale: 0}) // the partner's ms is never scaled
	var health map[string]bool
	decode(t, s.get("/health"), 200, &health)
	if !health["ok"] || len(health) != 1 {
		t.Errorf("/health: %v", health)
	}
	for i, want := range []int{503, 503, 200, 200} {
		r := s.get("/call?ms=60&fail=2&key=alpha")
		if r.status != want {
			t.Errorf("call %d: %d, want %d", i+1, r.status, want)
		}
		if r.elapsed < 60*time.Millisecond || r.elapsed > 60*time.Millisecond+500*time.Millisecond {
			t.Errorf("call %d took %v, want 60ms (+ a generous tolerance)", i+1, r.elapsed)
		}
	}
	if r := s.get("/call?fail=1&key=beta"); r.status != 503 {
		t.Errorf("first call of another key: %d, want 503", r.status)
	}
	var got struct{ Received *float64 }
	decode(t, s.get("/budget?ms=0", "X-Budget-Ms", "250"), 200, &got)
	if got.Received == nil || *got.Received != 250 {
		t.Errorf("received %v, want 250", got.Received)
	}
	r := s.get("/budget?ms=0")
	if r.body != `{"received":null}`+"\n" {
		t.Errorf("without X-Budget-Ms: %q", r.body)
	}
}

func TestPartnerDelayEndsWhenTheClientLeaves(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	// The client leaves once the partner holds its call (a deadline from
	// the start could end before a busy machine even delivered the
	// request, and then no handler would have had anything to end).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.do(ctx, http.MethodGet, "/call?ms=60000")
		errc <- err
	}()
	s.waitStats("the partner to hold the call", func(st provider.Stats) bool { return st.Active == 1 })
	start := time.Now()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	// client_gone counts when the handler ends: within 10 s, not 60.
	st := s.waitStats("the partner handler to end, its client gone", func(st provider.Stats) bool { return st.ClientGone == 1 })
	if took := time.Since(start); took > 5*time.Second || st.Active != 0 {
		t.Errorf("handler ended %v after the client left, active %d; want well before 60s and 0", took, st.Active)
	}
}

func TestBlackholeConnectTimesOutWhileAClosedPortIsRefused(t *testing.T) {
	t.Parallel()
	bh, err := provider.ListenBlackhole("127.0.0.1:0")
	if runtime.GOOS != "linux" {
		if !errors.Is(err, provider.ErrBlackholeUnsupported) {
			t.Fatalf("ListenBlackhole on %s: %v, want ErrBlackholeUnsupported", runtime.GOOS, err)
		}
		t.Skip("the blackhole works on Linux only")
	}
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // every new connect times out, not just the first
		start := time.Now()
		_, err = net.DialTimeout("tcp", bh.Addr(), 300*time.Millisecond)
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("dial blackhole: %v, want a timeout", err)
		}
		if took := time.Since(start); took < 250*time.Millisecond {
			t.Errorf("timed out after %v, want about 300ms", took)
		}
	}
	if err := bh.Close(); err != nil {
		t.Fatal(err)
	}
	// Closed, its port refuses at once.
	_, err = net.DialTimeout("tcp", bh.Addr(), 300*time.Millisecond)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial closed port: %v, want ECONNREFUSED", err)
	}
}

func TestStartServesAndShutdownLetsInFlightRequestsFinish(t *testing.T) {
	t.Parallel()
	srv, err := provider.Start(provider.Options{LatencyScale: 10}, "127.0.0.1:0", "127.0.0.1:0") // atlas: 400ms
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	result := make(chan error, 1)
	go func() {
		resp, err := client.Get(srv.URL + "/quotes/atlas?sku=KB-001")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				err = errors.New(resp.Status)
			}
		}
		result <- err
	}()
	waitActive(t, srv.Provider, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if err := <-result; err != nil {
		t.Errorf("in-flight request: %v, want 200", err)
	}
	if _, err := net.DialTimeout("tcp", srv.Addr, 3*time.Second); !refused(err) {
		t.Errorf("dial after shutdown: %v, want ECONNREFUSED", err)
	}
}

func TestShutdownCutsRequestsStillRunningAfterTheGrace(t *testing.T) {
	t.Parallel()
	srv, err := provider.Start(provider.Options{LatencyScale: 10}, "127.0.0.1:0", "") // slow: 15s
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	result := make(chan error, 1)
	go func() {
		resp, err := client.Get(srv.URL + "/quotes/boreal?sku=KB-001&scenario=slow")
		if err == nil {
			resp.Body.Close()
		}
		result <- err
	}()
	waitActive(t, srv.Provider, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown: %v, want DeadlineExceeded", err)
	}
	if err := <-result; err == nil {
		t.Error("the cut request got a response")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("shutdown took %v with a 100ms grace", took)
	}
	waitActive(t, srv.Provider, 0)
}

func TestStartReportsAPortInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = provider.Start(provider.Options{}, ln.Addr().String(), "")
	if err == nil {
		t.Fatal("Start on a port in use succeeded")
	}
	if runtime.GOOS != "windows" && !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("err %v, want EADDRINUSE", err)
	}
	if runtime.GOOS == "linux" {
		_, err = provider.Start(provider.Options{}, "127.0.0.1:0", ln.Addr().String())
		if !errors.Is(err, syscall.EADDRINUSE) {
			t.Errorf("blackhole on a port in use: %v, want EADDRINUSE", err)
		}
	}
}

// refused reports whether err is a refused connection. Windows reports its
// own error numbers (and retries a refused SYN for about 2 s), so there any
// error counts.
func refused(err error) bool {
	if runtime.GOOS == "windows" {
		return err != nil
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// waitActive waits (capped) until the provider's active gauge is n.
func waitActive(t *testing.T, p *provider.Provider, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.Snapshot().Active != n {
		if time.Now().After(deadline) {
			b, _ := json.Marshal(p.Snapshot())
			t.Fatalf("waited 10s for active %d: %s", n, b)
		}
		time.Sleep(2 * time.Millisecond) // polling a public gauge; there is no event to wait on
	}
}

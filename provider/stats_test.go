package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

func TestStatsAreExactFor200ConcurrentRequests(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			sup := provider.Suppliers[i%3]
			r, err := s.do(context.Background(), http.MethodGet, "/quotes/"+sup+"?sku=KB-001")
			if err == nil && r.status != 200 {
				err = fmt.Errorf("status %d", r.status)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := s.stats()
	if st.Total != n || st.Active != 0 || st.PerStatus["200"] != n {
		t.Errorf("total %d active %d per_status %v; want %d, 0, 200:%d", st.Total, st.Active, st.PerStatus, n, n)
	}
	if got := st.PerSupplier.Atlas + st.PerSupplier.Boreal + st.PerSupplier.Cedar; got != n || st.PerSupplier.Atlas != 67 {
		t.Errorf("per_supplier %+v", st.PerSupplier)
	}
	if st.MaxActive < 1 || st.MaxActive > n {
		t.Errorf("max_active %d", st.MaxActive)
	}
}

func TestMaxActiveIsTheRealPeakAndSlowEndsWhenClientsLeave(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{LatencyScale: 10}) // slow: 15 s
	const n = 200
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { s.do(ctx, http.MethodGet, "/quotes/boreal?sku=KB-001&scenario=slow") })
	}
	s.waitStats("200 slow requests in flight", func(st provider.Stats) bool { return st.Active == n })
	start := time.Now()
	cancel() // every client leaves
	wg.Wait()
	st := s.waitStats("handlers to return", func(st provider.Stats) bool { return st.Active == 0 })
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("handlers took %v to notice the clients left", waited)
	}
	if st.Total != n || st.MaxActive != n || st.ClientGone != n || len(st.PerStatus) != 0 {
		t.Errorf("total %d max_active %d client_gone %d per_status %v; want %d, %d, %d, none",
			st.Total, st.MaxActive, st.ClientGone, st.PerStatus, n, n, n)
	}
}

func TestResetZeroesCountersButNotTheActiveGauge(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{LatencyScale: 10})
	s.get("/quotes/atlas?sku=KB-001&scenario=broken", "X-Request-ID", "k")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.do(ctx, http.MethodGet, "/quotes/boreal?sku=KB-001&scenario=slow")
	}()
	s.waitStats("one request in flight", func(st provider.Stats) bool { return st.Active == 1 })

	r, err := s.do(context.Background(), http.MethodPost, "/reset", "Content-Type", "application/json")
	if err != nil || r.status != 200 {
		t.Fatalf("POST /reset: %v %d", err, r.status)
	}
	st := s.stats()
	if st.Total != 0 || st.Active != 1 || st.MaxActive != 1 || st.PerSupplier.Atlas != 0 || len(st.PerStatus) != 0 {
		t.Errorf("after reset: %+v; want total 0, active 1, max_active 1, nothing else", st)
	}
	var rs provider.RequestStats
	decode(t, s.get("/stats/requests?id=k"), 200, &rs)
	if rs.Attempts != (provider.PerSupplier{}) {
		t.Errorf("attempts for k after reset: %+v", rs.Attempts)
	}
	cancel()
	<-done
	s.waitStats("the slow handler to return", func(st provider.Stats) bool { return st.Active == 0 })
}

func TestStatsRequestsCountsAttemptsPerSupplierForOneID(t *testing.T) {
	s := newTestServer(t, provider.Options{})
	for _, sup := range []string{"atlas", "boreal", "boreal", "cedar"} {
		s.get("/quotes/"+sup+"?sku=KB-001&scenario=flaky", "X-Request-ID", "id-7")
	}
	s.get("/quotes/atlas?sku=KB-001", "X-Request-ID", "other")
	var rs provider.RequestStats
	decode(t, s.get("/stats/requests?id=id-7"), 200, &rs)
	if want := (provider.PerSupplier{Atlas: 1, Boreal: 2, Cedar: 1}); rs.ID != "id-7" || rs.Attempts != want {
		t.Errorf("got %+v, want attempts %+v", rs, want)
	}
}

func TestTwoConcurrentFirstRequestsWithOneKeyExactlyOneIsFirst(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	for i := range 50 {
		key := fmt.Sprint("race-", i)
		statuses := make(chan int, 4)
		start := make(chan struct{})
		var wg sync.WaitGroup
		paths := []string{
			"/quotes/boreal?sku=KB-001&scenario=flaky", "/quotes/boreal?sku=KB-001&scenario=flaky",
			"/call?fail=1&key=" + key, "/call?fail=1&key=" + key,
		}
		for _, p := range paths {
			wg.Go(func() {
				<-start
				r, err := s.do(context.Background(), http.MethodGet, p, "X-Request-ID", key)
				if err != nil {
					t.Error(err)
				}
				statuses <- r.status
			})
		}
		close(start)
		wg.Wait()
		close(statuses)
		n503 := 0
		for st := range statuses {
			if st == 503 {
				n503++
			}
		}
		if n503 != 2 {
			t.Fatalf("key %s: %d answers were 503, want exactly 2 (one flaky first, one partner first)", key, n503)
		}
	}
}

func TestPerKeyStateIsBounded(t *testing.T) {
	t.Parallel()
	const maxKeys = 500
	p := provider.New(provider.Options{MaxKeys: maxKeys})
	h := p.Routes()
	// A flood of distinct request IDs and partner keys, served in process.
	for i := range 20_000 {
		id := fmt.Sprint("flood-", i)
		for _, target := range []string{"/quotes/boreal?sku=KB-001&scenario=flaky", "/call?fail=1&key=" + id} {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			req.Header.Set("X-Request-ID", id)
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	k := p.Snapshot().TrackedKeys
	if k.Scenario != maxKeys || k.Partner != maxKeys || k.Requests != maxKeys || k.Max != maxKeys {
		t.Errorf("tracked keys %+v, want each table full at %d and no more", k, maxKeys)
	}
	// The newest key is remembered: its second request is normal.
	req := httptest.NewRequest(http.MethodGet, "/quotes/boreal?sku=KB-001&scenario=flaky", nil)
	req.Header.Set("X-Request-ID", "flood-19999")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("second request of the newest key: %d, want 200", rec.Code)
	}
}

func TestControlEndpointsAnswerLoopbackClientsOnly(t *testing.T) {
	t.Parallel()
	h := provider.New(provider.Options{}).Routes()
	for _, c := range []struct{ method, path string }{
		{"GET", "/stats"}, {"GET", "/stats/requests?id=x"}, {"POST", "/reset"},
	} {
		for _, remote := range []string{"203.0.113.7:5555", "10.0.0.2:80", "[2001:db8::1]:443", "192.168.1.1:1"} {
			req := httptest.NewRequest(c.method, "http://127.0.0.1:9101"+c.path, nil)
			req.Header.Set("Content-Type", "application/json")
			req.RemoteAddr = remote
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			wantError(t, response{status: rec.Code, header: rec.Header(), body: rec.Body.String()}, 403, "forbidden")
		}
		for _, remote := range []string{"127.0.0.1:5555", "127.9.9.9:1", "[::1]:443"} {
			req := httptest.NewRequest(c.method, "http://127.0.0.1:9101"+c.path, nil)
			req.Header.Set("Content-Type", "application/json")
			req.RemoteAddr = remote
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != 200 {
				t.Errorf("%s %s from %s: %d, want 200", c.method, c.path, remote, rec.Code)
			}
		}
	}
}

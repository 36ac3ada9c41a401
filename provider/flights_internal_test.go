package provider

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestFlightsLeaveOutAClientThatHungUp: a request whose client closed its
// connection is not counted by live, the moment the close returned; one
// whose client is still there is.
func TestFlightsLeaveOutAClientThatHungUp(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("hungUp cannot tell on Windows")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pair := func() (client, server net.Conn) {
		t.Helper()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(); s.Close() })
		return c, s
	}
	var f flights
	var active, atBoreal atomic.Int64
	request := func(server net.Conn) *http.Request {
		r, _ := http.NewRequest("GET", "/", nil)
		return r.WithContext(ConnContext(context.Background(), server))
	}
	c1, s1 := pair()
	_, s2 := pair()
	r1 := request(s1)
	f.add(r1, &active)
	r2 := request(s2)
	n := f.add(r2, &active)
	defer f.remove(r2, &active)
	if n != 2 {
		t.Fatalf("the gauge after two requests: %d, want 2", n)
	}
	f.setSupplier(r2, 1, &atBoreal)
	defer f.unsetSupplier(r2, &atBoreal)
	if got := f.live(-1); got != 2 {
		t.Fatalf("two requests whose clients are there: live %d, want 2", got)
	}
	c1.Close()
	if got := f.live(-1); got != 1 {
		t.Errorf("right after one client closed its connection: live %d, want 1", got)
	}
	if got := f.live(1); got != 1 {
		t.Errorf("supplier 1's request, its client there: live %d, want 1", got)
	}
	f.remove(r1, &active)
	if got, a := f.live(-1), active.Load(); got != 1 || a != 1 {
		t.Errorf("after the gone request ended: live %d, gauge %d, want 1 and 1", got, a)
	}
}

// TestMaxActiveLeavesOutACallWhoseClientHungUp is the hedge's loser seen
// from the provider: a client with a limit of one call cancels a slow call
// (closes its connection) and sends its next call at once. However late the
// slow call's handler notices, max_active stays 1.
func TestMaxActiveLeavesOutACallWhoseClientHungUp(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("hungUp cannot tell on Windows")
	}
	s, err := Start(Options{LatencyScale: 1}, "127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	get := func(scenario string) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "GET /quotes/boreal?sku=KB-001&scenario=%s HTTP/1.1\r\nHost: x\r\n\r\n", scenario)
		return c
	}
	for i := range 50 {
		slow := get("slow")
		deadline := time.Now().Add(10 * time.Second)
		for s.Provider.active.Load() != 1 {
			if time.Now().After(deadline) {
				slow.SetReadDeadline(time.Now().Add(time.Second))
				b := make([]byte, 500)
				n, err := slow.Read(b)
				t.Fatalf("round %d: the slow call never started (active %d): %q %v", i, s.Provider.active.Load(), b[:n], err)
			}
			time.Sleep(time.Millisecond)
		}
		slow.Close()
		next := get("normal")
		resp, err := http.ReadResponse(bufio.NewReader(next), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		next.Close()
		if st := s.Provider.Snapshot(); st.MaxActive != 1 {
			t.Fatalf("round %d: max_active %d with never more than one call open; want 1", i, st.MaxActive)
		}
		for s.Provider.active.Load() != 0 { // both handlers done
			if time.Now().After(deadline) {
				t.Fatal("the handlers never finished")
			}
			time.Sleep(time.Millisecond)
		}
	}
}

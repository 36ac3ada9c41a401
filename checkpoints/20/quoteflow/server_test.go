package quoteflow

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// serve runs srv on a free loopback port until the test ends and returns its address.
func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// dial connects to addr; every read and write on the connection gives up
// after a generous 10 s, so a server that never cuts it fails the test
// instead of hanging it.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn
}

// waitForCut reads conn until the server closes it and fails the test if
// the server never does. While it waits, trickle (if not nil) keeps writing
// a few bytes every 20 ms, as a slow client would.
func waitForCut(t *testing.T, conn net.Conn, trickle string) {
	t.Helper()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if trickle != "" {
		wg.Go(func() {
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := io.WriteString(conn, trickle); err != nil {
					return // cut
				}
			}
		})
	}
	_, err := io.ReadAll(conn) // nil at EOF; a reset is a cut too
	close(stop)
	wg.Wait()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the server kept the connection open for 10 s")
	}
}

func TestTheServerBoundsHeaderBodyAndIdleTime(t *testing.T) {
	srv := NewServer(newService(t, Config{Transport: newFake(nil)}).Handler())
	// Shrink the server's own limits so the test is quick; a limit it does
	// not set stays unset, and then the test fails.
	for _, limit := range []*time.Duration{&srv.ReadHeaderTimeout, &srv.ReadTimeout, &srv.IdleTimeout} {
		if *limit > 0 {
			*limit = 200 * time.Millisecond
		}
	}
	addr := serve(t, srv)

	t.Run("headers sent slowly", func(t *testing.T) {
		conn := dial(t, addr)
		io.WriteString(conn, "POST /api/quotes HTTP/1.1\r\nHost: quoteflow\r\n")
		waitForCut(t, conn, "X-Slow: 1\r\n")
	})
	t.Run("headers sent, then the body slowly", func(t *testing.T) {
		conn := dial(t, addr)
		io.WriteString(conn, "POST /api/quotes HTTP/1.1\r\nHost: quoteflow\r\nContent-Length: 4000\r\n\r\n")
		waitForCut(t, conn, " ")
	})
	t.Run("idle after one request", func(t *testing.T) {
		conn := dial(t, addr)
		io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: quoteflow\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("GET /health: %v", err)
		}
		resp.Body.Close()
		waitForCut(t, conn, "")
	})
}

func TestTheServerSetsEveryLimit(t *testing.T) {
	srv := NewServer(http.NotFoundHandler())
	for name, d := range map[string]time.Duration{
		"ReadHeaderTimeout": srv.ReadHeaderTimeout, "ReadTimeout": srv.ReadTimeout, "IdleTimeout": srv.IdleTimeout,
	} {
		if d <= 0 || d > 2*time.Minute {
			t.Errorf("%s = %v, want a bound between 0 and 2 minutes", name, d)
		}
	}
}

// A client that writes its whole request before reading the answer (as
// Python's urllib and requests do) must read our 422, not a reset.
func TestAClientSendingAHugeBodyFirstStillReadsThe422(t *testing.T) {
	addr := serve(t, NewServer(newService(t, Config{Transport: newFake(nil)}).Handler()))
	conn := dial(t, addr)
	// A small send buffer: our write waits for the server to read, as it
	// would on a real network, instead of parking the body in our own kernel.
	conn.(*net.TCPConn).SetWriteBuffer(16 << 10)
	const size = 2 << 20
	w := bufio.NewWriter(conn)
	fmt.Fprintf(w, "POST /api/quotes HTTP/1.1\r\nHost: quoteflow\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", size)
	w.WriteString(`{"sku": "` + strings.Repeat("x", size-len(`{"sku": ""}`)) + `"}`)
	if err := w.Flush(); err != nil {
		t.Fatalf("writing the %d-byte body: %v (the server closed without reading it)", size, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(body), `"field":"body"`) {
		t.Errorf("answer %d %s, want 422 naming the body", resp.StatusCode, body)
	}
}

// What is drained is bounded: a client that never stops sending is cut
// after a few MiB, not read for ever.
func TestAnEndlessBodyIsCutAfterABoundedDrain(t *testing.T) {
	addr := serve(t, NewServer(newService(t, Config{Transport: newFake(nil)}).Handler()))
	conn := dial(t, addr)
	io.WriteString(conn, "POST /api/quotes HTTP/1.1\r\nHost: quoteflow\r\nContent-Length: 1073741824\r\n\r\n")
	chunk := []byte(strings.Repeat("x", 64<<10))
	written := 0
	for written < 512<<20 {
		n, err := conn.Write(chunk)
		written += n
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("the server neither read nor cut the connection for 10 s (%d bytes written)", written)
		}
		if err != nil {
			break // cut
		}
	}
	// Drained at most 4 MiB, plus what the two sockets' buffers hold
	// (tens of MiB at most, even where the system lets them grow large).
	t.Logf("cut after %d MiB", written>>20)
	if written >= 128<<20 {
		t.Errorf("the server read %d MiB of an endless body, want it cut after a few", written>>20)
	}
}

// Package redistest starts a real redis-server for a test: on a free
// loopback port, with no persistence files, killed when the test ends.
//
// When redis-server is not on PATH the test is skipped with a line saying
// how to install it, except under CI=true, where it fails: the course's own
// checks never pass by skipping Redis.
package redistest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startWait caps how long a server may take to answer PING.
const startWait = 10 * time.Second

// Server is one redis-server process.
type Server struct {
	Addr string // 127.0.0.1:port

	t    testing.TB
	bin  string
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	exit chan struct{} // closed when the process has exited
	out  *syncBuffer
}

// Start starts a redis-server on a free loopback port and stops it in
// t.Cleanup. It skips or fails t when redis-server is missing (see the
// package comment).
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary(t)
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(s.Stop)
	var err error
	for range 5 { // another process may take the free port before redis binds it
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		if err = s.start(port); err == nil {
			return s
		}
	}
	t.Fatalf("redistest: %v", err)
	return nil
}

// Binary returns the path of redis-server, or skips t (fails it under CI=true).
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err == nil {
		return bin
	}
	const how = "redis-server is not on PATH; install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis; Windows: inside WSL)"
	if os.Getenv("CI") == "true" {
		t.Fatal(how + " — CI=true needs the real server")
	}
	t.Skip(how)
	return ""
}

// Stall makes the server answer nothing for d, as a stalled Redis does
// (DEBUG SLEEP): commands sent meanwhile wait in its queue and run after.
// It returns once the stall has begun.
func (s *Server) Stall(d time.Duration) {
	s.t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr, startWait)
	if err != nil {
		s.t.Fatalf("redistest: stall: %v", err)
	}
	fmt.Fprintf(conn, "DEBUG SLEEP %.3f\r\n", d.Seconds())
	go func() { // the reply comes when the stall ends
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(d + startWait))
		conn.Read(make([]byte, 64))
	}()
	// PING on another connection is not answered before the stall ends: one
	// that takes a while shows it has begun.
	for start := time.Now(); time.Since(start) < startWait; {
		t0 := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		err := ping(ctx, s.Addr)
		cancel()
		if err != nil || time.Since(t0) >= 20*time.Millisecond {
			return
		}
	}
}

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Port is the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}

// Stop kills the server (its whole process group) and waits for it to exit.
// Calling it again does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exit := s.cmd, s.exit
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	killGroup(cmd)
	<-exit
}

// Restart starts a new, empty redis-server on the same port after Stop: a
// Redis that came back having lost its data.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(s.Port()); err != nil {
		s.t.Fatalf("redistest: restart on %s: %v", s.Addr, err)
	}
}

func (s *Server) start(port int) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir, "--loglevel", "warning",
		"--enable-debug-command", "local") // DEBUG SLEEP: a test stalls the server (Stall)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() { cmd.Wait(); close(exit) }()
	s.mu.Lock()
	s.cmd, s.exit, s.out, s.Addr = cmd, exit, out, addr
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), startWait)
	defer cancel()
	for {
		select {
		case <-exit:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("redis-server on %s exited: %s", addr, strings.TrimSpace(out.String()))
		default:
		}
		// The server that answers must be this one: when another test's
		// server holds the port (one that stopped and started again on it
		// since freePort), this one exits unable to bind, and a PING alone
		// would take the other for it.
		if pid, err := serverPID(ctx, addr); err == nil && pid == cmd.Process.Pid {
			return nil
		}
		select {
		case <-ctx.Done():
			s.Stop()
			return fmt.Errorf("redis-server on %s did not answer PING within %s: %s", addr, startWait, strings.TrimSpace(out.String()))
		case <-exit:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// ping sends PING and expects +PONG.
func ping(ctx context.Context, addr string) error {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return errors.New("unexpected reply " + strconv.Quote(line))
	}
	return nil
}

// serverPID asks the server at addr for its process ID (INFO server).
func serverPID(ctx context.Context, addr string) (int, error) {
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n') // $<length>
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if err != nil || !strings.HasPrefix(head, "$") || n < 0 || n > 1<<20 {
		return 0, errors.New("unexpected reply to INFO " + strconv.Quote(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server without process_id")
}

// freePort asks the kernel for a free loopback port. It is free when asked,
// not reserved: Start retries when redis-server cannot bind it.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Package redisserver starts a redis-server of one's own on a free loopback
// port, with no persistence, and kills it: lab check gives each run of an
// answer one (locked down: Confined), a lesson's demo starts one for its
// processes to share. The server runs through runner.Run, so it ends with
// the program that started it, and a server that answers on the port is
// taken for this one only when it is this very process (its pid file):
// another program may take a free port before redis-server binds it.
package redisserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/kit/redisinfo"
	"quoteflowlab.dev/kit/runner"
)

// StartWait caps how long a started redis-server may take to answer.
const StartWait = 10 * time.Second

// ErrNotInstalled: there is no redis-server on PATH.
var ErrNotInstalled = errors.New("no redis-server on PATH")

// Config says how to start a server.
type Config struct {
	Bin string // redis-server's path; "" looks it up on PATH
	Dir string // its working folder (created), where its pid file goes
	// Confined disables the commands that reach past the server
	// (replication, MIGRATE, modules) or write files (CONFIG, SAVE,
	// DEBUG), and SHUTDOWN: for a server an answer under test gets.
	Confined bool
}

// A Server is one started redis-server.
type Server struct {
	Addr string // 127.0.0.1:PORT
	cfg  Config
	mu   sync.Mutex
	stop func()
}

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Start starts a server on a free loopback port (another try on another
// port when one was taken before the server bound it).
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Bin == "" {
		bin, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, ErrNotInstalled
		}
		cfg.Bin = bin
	}
	var err error
	for range 5 {
		var port int
		if port, err = FreePort(); err != nil {
			return nil, err
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), cfg: cfg}
		if err = s.Restart(ctx); err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("redis-server would not start on a free loopback port")
}

// Restart starts the server again on its address, empty, after Stop (a
// server still running is stopped first).
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	if err := os.MkdirAll(s.cfg.Dir, 0o755); err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	pidFile := filepath.Join(s.cfg.Dir, fmt.Sprintf("redis-%s-%d.pid", port, time.Now().UnixNano()))
	args := []string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.cfg.Dir, "--loglevel", "warning", "--pidfile", pidFile}
	if s.cfg.Confined {
		for _, c := range []string{"SHUTDOWN", "CONFIG", "DEBUG", "REPLICAOF", "SLAVEOF", "MIGRATE", "MODULE", "FAILOVER", "SAVE", "BGSAVE", "BGREWRITEAOF"} {
			args = append(args, "--rename-command", c, "")
		}
	}
	sctx, cancel := context.WithCancel(context.Background())
	exited := make(chan runner.Result, 1)
	go func() {
		exited <- runner.Run(sctx, runner.Cmd{Name: s.cfg.Bin, Args: args, Dir: s.cfg.Dir, Unmeasured: true})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel() // runner.Run kills the server's whole process group
			<-exited
			os.Remove(pidFile)
		})
	}
	s.mu.Lock()
	s.stop = stop
	s.mu.Unlock()
	wctx, wcancel := context.WithTimeout(ctx, StartWait)
	defer wcancel()
	for {
		if ours(wctx, s.Addr, pidFile) {
			return nil
		}
		select {
		case res := <-exited:
			exited <- res
			stop()
			return fmt.Errorf("redis-server exited: %s", strings.TrimSpace(res.Output))
		case <-wctx.Done():
			stop()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("redis-server did not answer PING within %s", StartWait)
		case <-time.After(10 * time.Millisecond): // another process's port: no event to wait on
		}
	}
}

// Stop kills the server (kill -9: nothing is kept) and waits for it; a
// stopped server stays stopped.
func (s *Server) Stop() {
	s.mu.Lock()
	stop := s.stop
	s.stop = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// ours reports whether the server at addr is the process whose pid
// pidFile holds.
func ours(ctx context.Context, addr, pidFile string) bool {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return false // not written yet
	}
	want, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return false
	}
	pid, err := redisinfo.PID(ctx, addr)
	return err == nil && pid == want
}

// FreePort asks the kernel for a free loopback port (free when asked: a
// caller that starts a server on it must check that its own server is the
// one that answers there).
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

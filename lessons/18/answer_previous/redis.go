package main

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
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// redisURL is the Redis the checks run on: under lab check, the empty
// redis-server it started for this run (LAB_REDIS_URL); otherwise a server
// this program starts.
// stop kills what was started.
func redisURL() (url string, stop func(), err error) {
	if url := os.Getenv("LAB_REDIS_URL"); url != "" {
		fmt.Fprintln(os.Stderr, "E17: the redis-server lab check started for this run:", url)
		return url, func() {}, nil
	}
	srv, err := startRedis()
	if err != nil {
		return "", nil, err
	}
	fmt.Fprintln(os.Stderr, "E17:", srv.describe())
	return srv.url(), srv.Stop, nil
}

// wipe deletes every key of a quota prefix: the store restarted empty, as
// far as that quota can tell.
func wipe(url, prefix string) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	keys, err := rdb.Keys(ctx, "{"+prefix+"}:*").Result()
	if err != nil || len(keys) == 0 {
		return err
	}
	return rdb.Del(ctx, keys...).Err()
}

// proxy forwards TCP connections on a loopback port to a Redis; down cuts
// every connection and stops listening (Redis gone, as its clients see
// it), up listens on the same port again.
type proxy struct {
	target, addr string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
}

// newProxy starts a proxy to the Redis of url and returns the URL of the
// same database through it.
func newProxy(url string) (*proxy, string, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, "", err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	p := &proxy{target: opt.Addr, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	return p, fmt.Sprintf("redis://%s/%d", p.addr, opt.DB), nil
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *proxy) pipe(c net.Conn) {
	u, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, u) {
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); done <- struct{}{} }()
	go func() { io.Copy(c, u); done <- struct{}{} }()
	<-done
	c.Close()
	u.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// track records a connection pair, or closes it when the proxy is down.
func (p *proxy) track(c, u net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		c.Close()
		u.Close()
		return false
	}
	p.conns[c], p.conns[u] = struct{}{}, struct{}{}
	return true
}

// down stops listening and cuts every connection.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// up listens on the same port again (a few tries: the port is free, but
// another program may grab it for a moment).
func (p *proxy) up() error {
	var err error
	for range 20 {
		var ln net.Listener
		if ln, err = net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("the proxy could not listen on %s again: %v", p.addr, err)
}

func (p *proxy) close() { p.down() }

// server is the Redis the checks run against: a real redis-server this
// program starts on a free loopback port, or, when there is none on PATH
// (and CI is not "true"), the embedded stand-in, which says so.
type server struct {
	addr string
	bin  string // redis-server; "" for the stand-in
	dir  string // redis-server's working directory (it writes nothing there)
	cmd  *exec.Cmd
	exit chan struct{}
	out  *syncBuffer
	mini *miniredis.Miniredis
}

const install = "install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis; Windows: inside WSL)"

func startRedis() (*server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			return nil, errors.New("redis-server is not on PATH and CI=true needs the real server: " + install)
		}
		m := miniredis.NewMiniRedis()
		if err := m.StartAddr("127.0.0.1:0"); err != nil {
			return nil, err
		}
		return &server{addr: m.Addr(), mini: m}, nil
	}
	dir, err := os.MkdirTemp("", "e17-redis-")
	if err != nil {
		return nil, err
	}
	s := &server{bin: bin, dir: dir}
	for range 5 { // another program may take the free port before redis-server binds it
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		s.addr = ln.Addr().String()
		ln.Close()
		if err = s.Start(); err == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("redis-server would not start: %v", err)
}

func (s *server) url() string { return "redis://" + s.addr + "/0" }

func (s *server) describe() string {
	if s.mini != nil {
		return "redis-server is not on PATH, so the checks run on the embedded STAND-IN (miniredis) at " + s.addr +
			"; to check against the real server, " + install
	}
	return "real redis-server (" + s.bin + ") on " + s.addr
}

// Start starts redis-server on s.addr, empty, with no persistence, and waits
// (at most 10 s) until it answers PING. On the stand-in it restarts it empty.
func (s *server) Start() error {
	if s.mini != nil {
		if err := s.mini.Restart(); err != nil {
			return err
		}
		s.mini.FlushAll()
		return nil
	}
	_, port, _ := net.SplitHostPort(s.addr)
	cmd := exec.Command(s.bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--loglevel", "warning")
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	setGroup(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	exit := make(chan struct{})
	go func() { cmd.Wait(); close(exit) }()
	s.cmd, s.exit, s.out = cmd, exit, out
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exit:
			s.cmd = nil
			return fmt.Errorf("redis-server on %s exited: %s", s.addr, strings.TrimSpace(out.String()))
		default:
		}
		if ping(s.addr) == nil {
			return nil
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("redis-server on %s did not answer PING in 10 s: %s", s.addr, strings.TrimSpace(out.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill kills the server (its whole process group) and waits for it to exit:
// Redis gone mid-run.
func (s *server) Kill() error {
	if s.mini != nil {
		s.mini.Close()
		return nil
	}
	if s.cmd == nil {
		return nil
	}
	killGroup(s.cmd)
	select {
	case <-s.exit:
	case <-time.After(10 * time.Second):
		return errors.New("redis-server did not exit within 10 s of SIGKILL")
	}
	s.cmd = nil
	return nil
}

// Stop kills the server for good and removes its directory.
func (s *server) Stop() {
	s.Kill()
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// ping sends PING and expects +PONG.
func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
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

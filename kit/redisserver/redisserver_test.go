package redisserver

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

func needRedis(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		const how = "redis-server is not on PATH; install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how + " — CI=true needs the real server")
		}
		t.Skip(how)
	}
}

// A server is the one started: when another server holds the port, the
// new one exits unable to bind, and the other's answer is not taken for it.
func TestAServerOnAnotherServersPortFails(t *testing.T) {
	needRedis(t)
	ctx := context.Background()
	a, err := Start(ctx, Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer a.Stop()
	b := &Server{Addr: a.Addr, cfg: Config{Bin: a.cfg.Bin, Dir: t.TempDir()}}
	if err := b.Restart(ctx); err == nil {
		b.Stop()
		t.Fatalf("a second server on %s, which the first holds, was taken for started", a.Addr)
	}
}

// Stop kills the server: nothing answers on its port; Restart brings one
// up again on the same port.
func TestStopAndRestart(t *testing.T) {
	needRedis(t)
	ctx := context.Background()
	s, err := Start(ctx, Config{Dir: t.TempDir(), Confined: true})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer s.Stop()
	s.Stop()
	if c, err := net.DialTimeout("tcp", s.Addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("a server still answers on %s after Stop", s.Addr)
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatalf("Restart on %s: %v", s.Addr, err)
	}
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		t.Fatalf("nothing answers on %s after Restart: %v", s.Addr, err)
	}
	c.Close()
}

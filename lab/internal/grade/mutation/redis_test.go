package mutation

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// The check's redis-server is the one it started: when another server holds
// the free port it picked, its own exits unable to bind, and the other's
// answer is not taken for it.
func TestSharedRedisOnAnotherServersPortFails(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		const how = "redis-server is not on PATH; install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how + " — CI=true needs the real server")
		}
		t.Skip(how)
	}
	ctx := context.Background()
	a, err := startRedis(ctx, t.TempDir())
	if err != nil || a == nil {
		t.Fatalf("startRedis: %v, %v", a, err)
	}
	defer a.close()
	_, port := splitPort(t, a.addr)
	b, err := startRedisOn(ctx, bin, t.TempDir(), port)
	if err == nil {
		b.close()
		t.Fatalf("a second server on %s, which the first holds, was taken for started", a.addr)
	}
}

func splitPort(t *testing.T, addr string) (string, int) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return host, port
}

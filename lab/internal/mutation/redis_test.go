package mutation

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func redisServerBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		const how = "redis-server is not on PATH; install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how + " — CI=true needs the real server")
		}
		t.Skip(how)
	}
	return bin
}

// Every run gets a server of its own: what one run writes, in any
// database, another never sees, also past the runs the check expected
// (those servers are started when a run asks); once every run is done and
// the pool closed, no server is left running.
func TestEveryRunHasARedisOfItsOwn(t *testing.T) {
	redisServerBin(t)
	ctx := context.Background()
	const expected = 4
	p, err := startRedis(ctx, t.TempDir(), expected)
	if err != nil || p == nil {
		t.Fatalf("startRedis: %v, %v", p, err)
	}
	var addrs []string
	var dones []func()
	for range expected + 3 {
		env, done := p.forRun(ctx)
		url, ok := strings.CutPrefix(env, RedisEnv+"=redis://")
		if !ok {
			t.Fatalf("forRun gave %q", env)
		}
		addr, _, _ := strings.Cut(url, "/")
		addrs = append(addrs, addr)
		dones = append(dones, done)
	}
	for i, a := range addrs {
		for db := range 16 {
			if got := redisDo(t, a, "SELECT", strconv.Itoa(db), "INCR", "votes"); got != ":1" {
				t.Fatalf("run %d's server %s, database %d: INCR votes = %s, want :1 (another run's vote is there)", i, a, db, got)
			}
		}
	}
	for _, done := range dones {
		done()
	}
	p.close()
	for _, a := range addrs {
		if _, err := net.DialTimeout("tcp", a, time.Second); err == nil {
			t.Errorf("a server still answers on %s after every run was done and the pool closed", a)
		}
	}
}

// redisDo sends commands on one connection (the words of each command after
// an upper-case verb; SELECT takes one argument, INCR one) and returns the
// last reply's first line.
func redisDo(t *testing.T, addr string, words ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	var cmds [][]string
	for i := 0; i < len(words); i += 2 {
		cmds = append(cmds, words[i:i+2])
	}
	var b strings.Builder
	for _, cmd := range cmds {
		fmt.Fprintf(&b, "*%d\r\n", len(cmd))
		for _, w := range cmd {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(w), w)
		}
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	var line string
	for range cmds {
		if line, err = r.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	return strings.TrimSpace(line)
}

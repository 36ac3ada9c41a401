//go:build unix

package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLabRedisServesAStandInUntilInterrupted runs `lab redis` as a child
// process (this test binary, re-run as the command) on a free port: its
// first line says it is a stand-in, it answers PING, and SIGINT stops it
// with exit 0.
func TestLabRedisServesAStandInUntilInterrupted(t *testing.T) {
	if os.Getenv("LAB_REDIS_CHILD") == "1" {
		os.Exit(runRedis([]string{"--addr", "127.0.0.1:0"}, os.Stdout, os.Stderr))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLabRedisServesAStandInUntilInterrupted$")
	cmd.Env = append(os.Environ(), "LAB_REDIS_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	lines := bufio.NewScanner(out)
	var seen []string
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("lab redis ended its output early; stdout %q, stderr %q", seen, stderr.String())
		}
		seen = append(seen, lines.Text())
		return lines.Text()
	}
	if first := next(); !strings.Contains(first, "stand-in") || !strings.Contains(first, "apt-get install redis-server") {
		t.Errorf("first line %q, want it to say it is a stand-in and how to install the real server", first)
	}
	var addr string
	for addr == "" {
		if rest, ok := strings.CutPrefix(next(), "serving redis://"); ok {
			addr, _, _ = strings.Cut(rest, " ")
		}
	}
	if host, _, err := net.SplitHostPort(addr); err != nil || !net.ParseIP(host).IsLoopback() {
		t.Fatalf("serving on %q, want a loopback address", addr)
	}
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	io.WriteString(conn, "*1\r\n$4\r\nPING\r\n") // RESP, as every client sends it
	reply, err := bufio.NewReader(conn).ReadString('\n')
	conn.Close()
	if err != nil || strings.TrimSpace(reply) != "+PONG" {
		t.Fatalf("PING to %s: %q, %v; want +PONG", addr, reply, err)
	}

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGINT: %v (stderr %q)", err, stderr.String())
	}
	if !strings.Contains(string(rest), "lab redis stopped") {
		t.Errorf("output after SIGINT %q, want it to say it stopped", rest)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after lab redis stopped", addr)
	}
}

package redisinfo

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// PID names the process that answers on the port, and fails where nothing
// listens.
func TestPIDIsTheServersProcess(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		const how = "redis-server is not on PATH; install it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis)"
		if os.Getenv("CI") == "true" {
			t.Fatal(how + " — CI=true needs the real server")
		}
		t.Skip(how)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := PID(ctx, addr); err == nil {
		t.Fatal("PID of a port nothing listens on: no error")
	}
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for {
		pid, err := PID(ctx, addr)
		if err == nil {
			if pid != cmd.Process.Pid {
				t.Fatalf("PID = %d, want the server's %d", pid, cmd.Process.Pid)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the server never answered INFO: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

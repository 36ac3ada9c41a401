package grade15

import (
	"context"
	"net"
	"time"

	"quoteflowlab.dev/provider"
)

// lab is the provider lab and the addresses the tools are pointed at.
type lab struct {
	server    *provider.Server
	base      string // partner base URL, http://127.0.0.1:port
	addr      string // partner host:port
	blackhole string // blackhole host:port; "" when the system has none
	closed    string // a loopback host:port nobody listens on
}

// startLab starts the provider on free loopback ports.
func startLab() (*lab, error) {
	s, err := provider.Start(provider.Options{LatencyScale: 1}, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	closed, err := closedPort()
	if err != nil {
		s.Shutdown(context.Background())
		return nil, err
	}
	return &lab{server: s, base: s.URL, addr: s.Addr, blackhole: s.BlackholeAddr, closed: closed}, nil
}

// stop shuts the lab down, cutting slow partner calls after a short grace.
func (l *lab) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	l.server.Shutdown(ctx)
}

// closedPort returns a loopback address nobody listens on: it listens on a
// free port and closes it again.
func closedPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

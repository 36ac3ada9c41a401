package provider

import (
	"context"
	"errors"
	"net"
	"net/http"
)

// A Server is a running provider lab: HTTP on URL and, when requested and
// supported, a blackhole on BlackholeAddr. Stop it with Shutdown.
type Server struct {
	// URL is the HTTP base URL, e.g. "http://127.0.0.1:9101".
	URL string
	// Addr is the HTTP listener's "host:port".
	Addr string
	// BlackholeAddr is the blackhole's "host:port"; "" when none is running.
	BlackholeAddr string
	// BlackholeErr is ErrBlackholeUnsupported when a blackhole was asked for
	// on a system that cannot provide one; the HTTP side still runs.
	BlackholeErr error
	// Provider is the lab being served (for Snapshot and Reset).
	Provider *Provider

	http      *http.Server
	blackhole *Blackhole
	cancel    context.CancelFunc
	served    chan struct{}
}

// Start serves a new Provider configured by opts on addr (e.g.
// "127.0.0.1:0" for a free port) and a blackhole on blackholeAddr ("" for
// none). It returns once both listen, so the addresses in Server are ready
// to dial. A port in use gives an error that matches syscall.EADDRINUSE
// with errors.Is; on systems without blackhole support Start succeeds with
// Server.BlackholeErr set to ErrBlackholeUnsupported.
func Start(opts Options, addr, blackholeAddr string) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{Provider: New(opts), Addr: ln.Addr().String(), served: make(chan struct{})}
	s.URL = "http://" + s.Addr
	if blackholeAddr != "" {
		bh, err := ListenBlackhole(blackholeAddr)
		switch {
		case errors.Is(err, ErrBlackholeUnsupported):
			s.BlackholeErr = err
		case err != nil:
			ln.Close()
			return nil, err
		default:
			s.blackhole, s.BlackholeAddr = bh, bh.Addr()
			s.Provider.blackhole = bh // before serving: /stats reads it
			s.Provider.Reset()        // counts SYN drops from here
		}
	}
	// Handlers see base as their request context's parent: cancelling it
	// when the grace period is over ends slow handlers at once.
	base, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	// No read timeouts: the lab serves loopback clients only, and a
	// per-request deadline would cost timer work on the benchmark's hot path.
	s.http = &http.Server{
		Handler:     s.Provider.Routes(),
		BaseContext: func(net.Listener) context.Context { return base },
		ConnContext: ConnContext, // a /stats/stream keeps its send buffer small
	}
	go func() {
		defer close(s.served)
		s.http.Serve(ln)
	}()
	return s, nil
}

// Shutdown stops accepting connections, closes the blackhole, ends the
// dashboard streams, and waits for in-flight requests until ctx ends; then
// it cuts the remaining ones (their handlers see their context cancelled)
// and returns ctx's error. It returns nil when every request finished in
// time.
func (s *Server) Shutdown(ctx context.Context) error {
	var bhErr error
	if s.blackhole != nil {
		bhErr = s.blackhole.Close()
	}
	s.Provider.CloseStreams() // a dashboard's stream never goes idle by itself
	err := s.http.Shutdown(ctx)
	s.cancel() // ends the handlers still waiting, if the grace ran out
	if err != nil {
		s.http.Close() // cut their connections
	}
	<-s.served
	return errors.Join(err, bhErr)
}

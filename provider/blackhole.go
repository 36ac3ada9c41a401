package provider

import "errors"

// ErrBlackholeUnsupported is returned by ListenBlackhole on systems other than Linux.
var ErrBlackholeUnsupported = errors.New("blackhole listener works on Linux only (it relies on Linux dropping SYNs when the accept queue is full)")

// A Blackhole is a TCP listener whose accept queue is kept full, so a new
// connection attempt gets no answer and times out in the connect phase,
// as when dialling an unreachable host — without leaving 127.0.0.0/8.
type Blackhole struct {
	addr  string
	close func() error
}

// Addr returns the blackhole's "host:port".
func (b *Blackhole) Addr() string { return b.addr }

// Close stops the blackhole; later connects to its port are refused.
func (b *Blackhole) Close() error { return b.close() }

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
	// drops reads the kernel's count of SYNs dropped at the listener.
	drops func() (uint32, error)
}

// Addr returns the blackhole's "host:port".
func (b *Blackhole) Addr() string { return b.addr }

// Close stops the blackhole; later connects to its port are refused.
func (b *Blackhole) Close() error { return b.close() }

// synDrops returns how many connection attempts (SYN segments) the kernel
// has dropped at the blackhole's full accept queue since it opened. A
// dropped SYN never reaches any program, so this counter, kept by the
// kernel per listening socket, is the only trace a connect attempt leaves:
// one per SYN, that is one per connect plus one per retransmission.
func (b *Blackhole) synDrops() (uint32, error) { return b.drops() }

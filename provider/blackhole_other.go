//go:build !linux

package provider

// ListenBlackhole returns ErrBlackholeUnsupported: the full-accept-queue
// trick only works on Linux.
func ListenBlackhole(addr string) (*Blackhole, error) {
	return nil, ErrBlackholeUnsupported
}

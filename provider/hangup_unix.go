//go:build unix

package provider

import (
	"errors"
	"net"
	"syscall"
)

// hungUp reports whether the peer of c has closed or reset it: a peek at
// the socket that neither blocks nor takes a byte from net/http's reader.
// A pipelined request waiting to be read (n > 0) is a live connection.
func hungUp(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	var b [1]byte
	_ = raw.Control(func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = n == 0 && err == nil || errors.Is(err, syscall.ECONNRESET)
	})
	return gone
}

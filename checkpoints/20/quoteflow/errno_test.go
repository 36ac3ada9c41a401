package quoteflow

import (
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"
)

// A refused or reset connection is transient on every system, in the shape
// http.Client returns it: *url.Error → *net.OpError → *os.SyscallError → errno.
func TestRefusedAndResetAreTransientHere(t *testing.T) {
	errnos := append([]error{syscall.ECONNREFUSED, syscall.ECONNRESET}, platformTransientErrors...)
	for _, errno := range errnos {
		err := &url.Error{Op: "Get", URL: "http://127.0.0.1:1/quotes/boreal", Err: &net.OpError{
			Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno),
		}}
		if !isTransient(err) {
			t.Errorf("isTransient(%v) = false, want true: a refused or reset connection is worth one more try", err)
		}
	}
}

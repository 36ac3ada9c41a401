//go:build !windows

package fanout

// platformTransientErrors is empty here: syscall.ECONNREFUSED and
// syscall.ECONNRESET are the very numbers the system reports.
var platformTransientErrors []error

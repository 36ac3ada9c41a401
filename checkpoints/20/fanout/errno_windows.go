package fanout

import "syscall"

// platformTransientErrors are Windows' own numbers for the refused and reset
// connections of TransientErrors: Winsock's WSAECONNREFUSED (10061) and
// WSAECONNRESET (10054), which is what a dial or read returns there.
var platformTransientErrors = []error{
	syscall.Errno(10061), // WSAECONNREFUSED
	syscall.WSAECONNRESET,
}

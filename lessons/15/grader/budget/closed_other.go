//go:build !unix

package budget

import "io"

// reservedClosedPort returns a loopback port nobody listens on: closed a
// moment ago, not reserved (another program may bind it meanwhile).
func reservedClosedPort() (string, io.Closer, error) {
	addr, err := closedPort()
	return addr, io.NopCloser(nil), err
}

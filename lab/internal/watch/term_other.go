//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package watch

import "os"

// IsTerminal: without a terminal API here, a character device on stdout is
// taken for a console (clearing it is harmless otherwise).
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// cbreak is not available here: keys are not read, and lab watch only prints.
func cbreak(int) (func(), bool) { return nil, false }

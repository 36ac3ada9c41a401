package watch

import "os"

// Keys puts the terminal on f in a mode where each key press is read at
// once, without Enter and without echo (Ctrl-C still interrupts), and
// sends the keys on the channel. ok is false when f is not a terminal or
// its mode cannot be set; then nothing is read. restore puts the terminal
// back as it was; call it before exiting.
func Keys(f *os.File) (keys <-chan byte, restore func(), ok bool) {
	restore, ok = cbreak(int(f.Fd()))
	if !ok {
		return nil, func() {}, false
	}
	c := make(chan byte, 8)
	go func() {
		buf := make([]byte, 16)
		for {
			n, err := f.Read(buf)
			for _, b := range buf[:n] {
				select {
				case c <- b:
				default: // keys typed faster than they are handled
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return c, restore, true
}

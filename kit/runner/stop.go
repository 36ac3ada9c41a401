package runner

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// StopContext returns a context that is done when the program (lab, a
// lesson's demo program) is asked to stop:
// Ctrl-C (SIGINT), SIGTERM, or a hangup (SIGHUP: the terminal closed, an
// ssh session dropped, or the program that started lab ended, go run
// included: see EndWithParent). Started with SIGHUP ignored (nohup),
// lab keeps ignoring it. A command that starts processes or servers stops
// them when this context is done, then returns.
func StopContext() (context.Context, context.CancelFunc) {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	if gone := ParentGone(); gone != nil {
		ctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-gone:
				cancel()
			case <-ctx.Done():
			}
		}()
		return ctx, func() { cancel(); stop() }
	}
	return ctx, stop
}

// brokenPipe is where SIGPIPE goes once StopOnClosedOutput has run; nothing
// reads it.
var brokenPipe = make(chan os.Signal, 1)

// StopOnClosedOutput makes a write to a closed output (lab demo | head:
// head has gone) stop the command through cancel instead of killing lab: a
// Go program that writes to a closed stdout or stderr is otherwise ended by
// SIGPIPE on the spot, before it can stop what it started. It returns the
// writers to use instead of stdout and stderr.
func StopOnClosedOutput(cancel context.CancelFunc, stdout, stderr io.Writer) (io.Writer, io.Writer) {
	signal.Notify(brokenPipe, syscall.SIGPIPE) // the write fails with EPIPE instead
	return cancelOnError{stdout, cancel}, cancelOnError{stderr, cancel}
}

// cancelOnError is a writer that cancels when a write fails.
type cancelOnError struct {
	w      io.Writer
	cancel context.CancelFunc
}

func (c cancelOnError) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.cancel()
	}
	return n, err
}

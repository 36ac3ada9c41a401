package cli

import (
	"context"
	"io"

	"quoteflowlab.dev/kit/runner"
)

// stopContext is runner.StopContext: done when lab is asked to stop.
func stopContext() (context.Context, context.CancelFunc) { return runner.StopContext() }

// stopOnClosedOutput is runner.StopOnClosedOutput: a closed output stops
// the command through cancel instead of killing lab.
func stopOnClosedOutput(cancel context.CancelFunc, stdout, stderr io.Writer) (io.Writer, io.Writer) {
	return runner.StopOnClosedOutput(cancel, stdout, stderr)
}

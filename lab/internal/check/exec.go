package check

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"sync"
	"time"
)

// maxOutput bounds what is kept of one run's output, so a runaway answer
// cannot fill memory; the start is kept, since that is where it explains.
const maxOutput = 64 << 10

// execResult is what one finished (or killed) process left behind.
type execResult struct {
	ExitCode int // -1 when it never ran or was killed
	Output   string
	TimedOut bool
	Elapsed  time.Duration
	Err      error // could not start, or was cancelled from outside
}

// ok reports whether the process ran and exited 0.
func (r execResult) ok() bool { return r.Err == nil && !r.TimedOut && r.ExitCode == 0 }

// execute runs name with args in dir and returns its combined output. It
// is killed when timeout passes (TimedOut set) or when ctx is done (Err
// set). Output pipes are abandoned a second after the kill, so a grandchild
// holding them cannot hang the harness.
func execute(ctx context.Context, timeout time.Duration, dir string, env []string, name string, args ...string) execResult {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(tctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var out cappedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	start := time.Now()
	err := cmd.Run()
	res := execResult{ExitCode: -1, Output: out.String(), Elapsed: time.Since(start)}
	switch {
	case ctx.Err() != nil:
		res.Err = ctx.Err()
	case errors.Is(tctx.Err(), context.DeadlineExceeded):
		res.TimedOut = true
	case err == nil:
		res.ExitCode = 0
	default:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			res.ExitCode = exit.ExitCode()
		} else {
			res.Err = err
		}
	}
	return res
}

// environ returns the process environment plus extra settings, which win.
func environ(extra ...string) []string {
	return append(os.Environ(), extra...)
}

// cappedBuffer keeps the first maxOutput bytes written to it; it is safe for
// the two writers (stdout, stderr) exec uses.
type cappedBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxOutput - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		b.truncated = true
	} else {
		b.buf.Write(p)
	}
	return len(p), nil
}

func (b *cappedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.truncated {
		return b.buf.String() + "\n... (output truncated)\n"
	}
	return b.buf.String()
}

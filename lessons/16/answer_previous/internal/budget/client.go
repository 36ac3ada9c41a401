// Package budget holds what the E15 budget tools share: an HTTP client whose
// connect and read are limited separately, the phase a call ended in, a
// budget clock, full-jitter waits and JSON output.
package budget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"syscall"
	"time"
)

// Phase says where a call ended.
type Phase string

// The phases a call can end in.
const (
	PhaseDone     Phase = "done"      // a response was received (any status)
	PhaseConnect  Phase = "connect"   // no connection: refused, unreachable, connect limit
	PhaseRead     Phase = "read"      // connected, but the answer did not arrive in time
	PhaseNoBudget Phase = "no_budget" // not started: the budget left was below the floor
)

// Errors wrapped into Outcome.Err so callers can tell why a call ended.
var (
	ErrReadLimit    = errors.New("read limit reached")
	ErrConnectLimit = errors.New("connect limit reached")
)

// maxBody caps how much of a response body is read.
const maxBody = 1 << 20

// Client makes GET calls with a connect limit and a per-call read limit.
type Client struct {
	http    *http.Client
	connect time.Duration
}

// NewClient returns a client whose TCP connect is limited to connect.
// The connect limit lives in the dialer, so it covers reaching the peer and
// nothing else; the read limit is given per call to Get.
func NewClient(connect time.Duration) *Client {
	dialer := &net.Dialer{Timeout: connect}
	transport := &http.Transport{
		Proxy:               nil, // never send loopback calls through a proxy
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: 4,
	}
	return &Client{http: &http.Client{Transport: transport}, connect: connect}
}

// Outcome is what one call produced.
type Outcome struct {
	OK      bool // a 2xx response was read in full
	Status  int  // 0 when no response arrived
	Phase   Phase
	Elapsed time.Duration
	Body    []byte
	Err     error // nil for any received response, even a 5xx
}

// Get calls url with the given headers. The read limit starts when a
// connection is held and covers waiting for the response header and reading
// the body. ctx may carry an overall deadline (the budget): whichever ends
// first cuts the call, and the phase says where it was cut.
func (c *Client) Get(ctx context.Context, url string, read time.Duration, header http.Header) Outcome {
	start := time.Now()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var connected atomic.Bool
	var readTimer atomic.Pointer[time.Timer]
	defer func() {
		if t := readTimer.Load(); t != nil {
			t.Stop()
		}
	}()
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		if connected.CompareAndSwap(false, true) {
			readTimer.Store(time.AfterFunc(read, func() { cancel(ErrReadLimit) }))
		}
	}}

	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, url, nil)
	if err != nil {
		return Outcome{Phase: PhaseConnect, Err: err}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return c.failed(ctx, err, connected.Load(), read, start)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return c.failed(ctx, err, true, read, start)
	}
	return Outcome{
		OK:      resp.StatusCode >= 200 && resp.StatusCode < 300,
		Status:  resp.StatusCode,
		Phase:   PhaseDone,
		Elapsed: time.Since(start),
		Body:    body,
	}
}

// failed classifies a call that got no (complete) response. Before a
// connection is held the phase is connect; after, it is read.
func (c *Client) failed(ctx context.Context, err error, connected bool, read time.Duration, start time.Time) Outcome {
	out := Outcome{Phase: PhaseRead, Elapsed: time.Since(start)}
	cause := context.Cause(ctx)
	var netErr net.Error
	switch {
	case connected && errors.Is(cause, ErrReadLimit):
		out.Err = fmt.Errorf("%w: no answer within %v", ErrReadLimit, read.Round(time.Millisecond))
	case connected && errors.Is(cause, context.DeadlineExceeded):
		out.Err = fmt.Errorf("budget ran out while reading: %w", context.DeadlineExceeded)
	case connected:
		out.Err = err
	case errors.Is(err, syscall.ECONNREFUSED):
		out.Phase, out.Err = PhaseConnect, refused(err)
	case errors.Is(cause, context.DeadlineExceeded):
		out.Phase, out.Err = PhaseConnect, fmt.Errorf("budget ran out while connecting: %w", context.DeadlineExceeded)
	case errors.As(err, &netErr) && netErr.Timeout():
		out.Phase, out.Err = PhaseConnect, fmt.Errorf("%w: no connection within %v", ErrConnectLimit, c.connect.Round(time.Millisecond))
	default:
		out.Phase, out.Err = PhaseConnect, err
	}
	return out
}

// Cut reports whether o ended because a limit or the budget ran out while
// reading (as opposed to, say, a reset connection).
func (o Outcome) Cut() bool {
	return o.Phase == PhaseRead && (errors.Is(o.Err, ErrReadLimit) || errors.Is(o.Err, context.DeadlineExceeded))
}

// refused names the address that refused; the cause stays visible to errors.Is.
func refused(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Addr != nil {
		return fmt.Errorf("nobody listens on %s (%w)", op.Addr, syscall.ECONNREFUSED)
	}
	return err
}

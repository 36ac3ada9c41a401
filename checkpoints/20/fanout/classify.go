package fanout

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/quota"
)

// Code is the reason a job has no value: a short, stable word a program can
// count and a person can read ("timeout", "http_503", ...).
type Code string

// The codes Run itself gives; a Classifier names the others.
const (
	CodeTimeout     Code = "timeout"      // one call ran past CallTimeout
	CodeDeadline    Code = "deadline"     // the overall deadline passed before the job had a final result
	CodeNoBudget    Code = "no_budget"    // never called: less than the floor was left before the deadline
	CodeRateLimited Code = "rate_limited" // 429, or our rate quota, and the wait asked for no longer fits (or attempts ran out)
	// CodeQuotaUnavailable: the shared quota could not be asked, so the call
	// was not made (it fails closed); worth running again later.
	CodeQuotaUnavailable Code = "quota_unavailable"
	CodeTransportError   Code = "transport_error" // the exchange itself failed
	CodeInvalidData      Code = "invalid_data"    // an answer that cannot be trusted or decoded
	CodeError            Code = "error"           // anything else: a program error, never retried
	// CodeCircuitOpen: never called, because Options.Gate refused the call
	// (a circuit breaker open); worth running again later, not now.
	CodeCircuitOpen Code = "circuit_open"
	// CodeShed: never called, because the supplier's adaptive limit had no
	// room in time (adaptive.ErrShed); worth running again later, not now.
	CodeShed Code = "shed"
)

// HTTPCode is the code for a final HTTP status, e.g. "http_503".
func HTTPCode(status int) Code { return Code("http_" + strconv.Itoa(status)) }

// Retryable reports whether a job that ended with code may succeed if it is
// run again later: timeouts, the deadline, rate limits, 5xx and transport
// failures, a call never made for want of budget, a shared quota that
// could not be asked, and a call a circuit breaker refused. A compensation queue takes exactly these.
func Retryable(code Code) bool {
	switch code {
	case CodeTimeout, CodeDeadline, CodeNoBudget, CodeRateLimited, CodeTransportError, CodeQuotaUnavailable, CodeCircuitOpen, CodeShed:
		return true
	}
	if status, ok := strings.CutPrefix(string(code), "http_"); ok {
		n, err := strconv.Atoi(status)
		return err == nil && n >= 500 && n <= 599
	}
	return false
}

// ErrInvalidData is wrapped by a job's error when the answer arrived but
// cannot be used (bad JSON, wrong identity): asking again gets the same answer.
var ErrInvalidData = errors.New("invalid data")

// StatusError is a job's error for an HTTP answer that is not a success.
// RetryAfter is what the server asked us to wait (0: it did not say).
type StatusError struct {
	Status     int
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	if e.RetryAfter > 0 {
		return "HTTP " + strconv.Itoa(e.Status) + " (retry after " + e.RetryAfter.String() + ")"
	}
	return "HTTP " + strconv.Itoa(e.Status)
}

// NewStatusError reads a response's status and its Retry-After headers.
func NewStatusError(resp *http.Response) *StatusError {
	return &StatusError{Status: resp.StatusCode, RetryAfter: RetryAfter(resp.Header, time.Now())}
}

// RetryAfter is the wait a server asked for: Retry-After-Ms (milliseconds,
// precise) when present, else Retry-After (whole seconds, or an HTTP date
// measured from now); 0 when neither is given or parses.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseInt(h.Get("Retry-After-Ms"), 10, 64); err == nil && ms >= 0 {
		return time.Duration(ms) * time.Millisecond
	}
	v := h.Get("Retry-After")
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// Verdict is what a Classifier decides about one failed call.
type Verdict struct {
	Code       Code
	Retry      bool          // worth another attempt
	RetryAfter time.Duration // the least wait before it, asked by the server
}

// A Classifier turns a job's error into a Verdict. Run has already decided
// timeouts and the deadline from the contexts before it asks.
type Classifier func(err error) Verdict

// Classify is the default Classifier: retry a 429 (honouring its
// Retry-After), any 5xx, a call that timed out (a job's error wrapping
// context.DeadlineExceeded, e.g. a supplier that stopped at the budget we
// sent) and the transport failures of TransientErrors or a network timeout.
// Never retry another 4xx, invalid data, or an error it does not know.
//
// A call the quota did not let through is not retried in the run: with the
// shared quota out of reach (quota.ErrUnavailable) it is
// CodeQuotaUnavailable, with no room in the rate quota before the deadline
// (quota.ErrRateLimited) CodeRateLimited.
func Classify(err error) Verdict {
	var se *StatusError
	switch {
	case errors.Is(err, quota.ErrUnavailable):
		return Verdict{Code: CodeQuotaUnavailable}
	case errors.Is(err, quota.ErrRateLimited):
		return Verdict{Code: CodeRateLimited}
	case errors.Is(err, adaptive.ErrShed):
		return Verdict{Code: CodeShed}
	case errors.As(err, &se) && se.Status == http.StatusTooManyRequests:
		return Verdict{Code: CodeRateLimited, Retry: true, RetryAfter: se.RetryAfter}
	case errors.As(err, &se) && se.Status >= 500:
		return Verdict{Code: HTTPCode(se.Status), Retry: true, RetryAfter: se.RetryAfter}
	case errors.As(err, &se):
		return Verdict{Code: HTTPCode(se.Status)}
	case errors.Is(err, ErrInvalidData):
		return Verdict{Code: CodeInvalidData}
	case errors.Is(err, context.DeadlineExceeded):
		return Verdict{Code: CodeTimeout, Retry: true}
	case IsTransient(err):
		return Verdict{Code: CodeTransportError, Retry: true}
	case isNetworkError(err):
		return Verdict{Code: CodeTransportError}
	}
	return Verdict{Code: CodeError}
}

// TransientErrors are the transport failures worth another try: the next
// try may well find things fixed. Windows reports refused and reset with its
// own Winsock numbers, which errors.Is does not equate with these:
// errno_windows.go adds them.
var TransientErrors = append([]error{
	syscall.ECONNREFUSED, // nobody listening: the supplier is restarting
	syscall.ECONNRESET,   // the peer reset the connection
	io.EOF,               // the connection closed before any answer
	io.ErrUnexpectedEOF,  // the connection closed in the middle of the answer
}, platformTransientErrors...)

// IsTransient reports whether err is on the TransientErrors list or is a
// network timeout (net.Error with Timeout()), looking below the *url.Error
// that http.Client wraps around everything.
func IsTransient(err error) bool {
	for _, target := range TransientErrors {
		if errors.Is(err, target) {
			return true
		}
	}
	var nerr net.Error
	return errors.As(unwrapURL(err), &nerr) && nerr.Timeout()
}

// isNetworkError reports an error from the connection that is not transient.
func isNetworkError(err error) bool {
	var nerr net.Error
	var errno syscall.Errno
	err = unwrapURL(err)
	return errors.As(err, &nerr) || errors.As(err, &errno)
}

func unwrapURL(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

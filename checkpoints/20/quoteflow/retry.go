package quoteflow

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"syscall"
	"time"
)

// transientErrors are the transport failures worth a second try of this
// read-only GET: the next try may well find things fixed. Anything not
// named here (and not a network timeout) is reported at once.
// Windows reports refused and reset with its own Winsock numbers, which
// errors.Is does not equate with these: errno_windows.go adds them.
var transientErrors = append([]error{
	syscall.ECONNREFUSED, // nobody listening: the supplier is restarting
	syscall.ECONNRESET,   // the peer reset the connection
	io.EOF,               // the connection closed before any answer
	io.ErrUnexpectedEOF,  // the connection closed in the middle of the answer
}, platformTransientErrors...)

// withRetry asks one supplier at most QuoteRetry.MaxAttempts times (two:
// three suppliers cost at most six calls, plus a hedge each), with the same
// X-Request-ID each time. attempt has returned its outbound slot before the
// pause, so a supplier waiting to retry never keeps a healthy one waiting in
// line. The pause is paid from the quote's budget: when the budget left after
// it would be below the floor, there is no pause and no second attempt, and
// the first attempt's failure is the result. A second attempt that finds less
// than the floor left once it holds a slot is not made either.
func (s *Service) withRetry(ctx context.Context, supplier string, req QuoteRequest, id string) outcome {
	var last outcome
	sent, hedged := 0, false
	for n := 1; ; n++ {
		o := s.attempt(ctx, supplier, req, id, n)
		sent, hedged = sent+o.attempts, hedged || o.hedged
		if (o.code == CodeNoBudget || o.code == CodeCircuitOpen || o.code == CodeShed) && n > 1 {
			s.extra.Refund() // the retry was paid for and not made (no time left, the breaker opened, or shed)
			last.attempts, last.hedged = sent, hedged
			return last // the supplier was asked: report what it said
		}
		o.attempts, o.hedged = sent, hedged
		if n == QuoteRetry.MaxAttempts || !retryable(o) {
			return o
		}
		wait := backoff()
		// A retry is an extra call: it is paid from the budget hedges share,
		// and without a token the first failure is the answer.
		if budgetLeft(ctx)-wait < s.minAttempt || !s.extra.TrySpend() {
			return o
		}
		if err := pause(ctx, wait); err != nil {
			s.extra.Refund()
			return failed(CodeTimeout, err)
		}
		last = o
	}
}

// retryable: what QuoteRetry says of a supplier's failure (a 503, or a
// transport error that is transient). Invalid data (bad gzip included), 404
// and every other status are final: asking again would get the same answer.
// So are our own deadline, a call never made, and program errors.
func retryable(o outcome) bool {
	if o.err != nil || o.code == CodeTimeout || o.code == CodeNoBudget || o.code == CodeCircuitOpen || o.code == CodeShed {
		return false
	}
	return QuoteRetry.Retry(o.asError()).Retry
}

// isTransient reports whether err is on the transientErrors list or is a
// network timeout (net.Error with Timeout()), looking below the *url.Error
// that http.Client wraps around everything.
func isTransient(err error) bool {
	for _, target := range transientErrors {
		if errors.Is(err, target) {
			return true
		}
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var nerr net.Error
	return errors.As(err, &nerr) && nerr.Timeout()
}

// backoff is QuoteRetry's pause: uniform in [BackoffBase, BackoffCap], so
// quotes that failed together do not all come back together.
func backoff() time.Duration {
	return QuoteRetry.BackoffBase + rand.N(QuoteRetry.BackoffCap-QuoteRetry.BackoffBase+1)
}

// pause waits for d, or returns ctx's error if ctx ends first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

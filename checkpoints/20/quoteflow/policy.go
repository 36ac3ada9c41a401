package quoteflow

import (
	"errors"
	"net/http"
	"time"

	"quoteflowlab.dev/checkpoints/20/fanout"
)

// QuoteFlow retries a failed supplier call under one of two policies, kept
// here side by side: a difference between them is a decision, not a drift.
// Both start no call with less than the floor (Config.MinAttempt) left, and
// take a wait only when a call can follow it.

// RetryPolicy is which failed supplier calls are made again, how many times,
// and how long the wait before each retry may be.
type RetryPolicy struct {
	MaxAttempts int // calls per supplier, the first included
	// Retry judges a failed call: its code, and whether another attempt may
	// get a different answer. Timeouts are decided from the contexts before
	// it is asked.
	Retry fanout.Classifier
	// BackoffBase and BackoffCap bound the wait before a retry; each policy
	// says below how it draws the wait between them.
	BackoffBase time.Duration
	BackoffCap  time.Duration
}

// QuoteRetry is a single quote's policy (lessons 14 and 15). A buyer waits
// 0.8 s on the answer and nothing stands behind it: one retry, of what is
// known to clear up (a 503, a transport error on the transientErrors list),
// after a pause drawn uniformly from [20, 30] ms. A 429, a 500 or our own
// timeout is the answer.
var QuoteRetry = RetryPolicy{
	MaxAttempts: 2,
	Retry:       classifyQuote, // a 503, a transport error on the transientErrors list
	BackoffBase: 20 * time.Millisecond,
	BackoffCap:  30 * time.Millisecond, // the pause is uniform in [20, 30] ms
}

// BasketRetry is a basket line's policy (lesson 16). Whatever it gives up on
// goes to the compensation queue, and a basket is 150 calls that meet a busy
// supplier together: three attempts, of a 429 (never before its Retry-After),
// every 5xx, the call's own timeout and the transient transport errors
// (fanout.Classify), each retry k after a wait drawn uniformly from
// [0, min(500 ms, 50 ms·2^(k-1))] ("full jitter", by fanout.Run).
var BasketRetry = RetryPolicy{
	MaxAttempts: 3,
	Retry:       fanout.Classify, // 429, every 5xx, the call's own timeout, transient transport errors
	BackoffBase: 50 * time.Millisecond,
	BackoffCap:  500 * time.Millisecond, // retry k waits uniform in [0, min(500, 50·2^(k-1))] ms
}

// classifyQuote is QuoteRetry's judgement: a 503 and a transient transport
// error are worth a second try; another status, invalid data and any other
// transport error are final.
func classifyQuote(err error) fanout.Verdict {
	var se *fanout.StatusError
	switch {
	case errors.As(err, &se):
		return fanout.Verdict{Code: fanout.HTTPCode(se.Status), Retry: se.Status == http.StatusServiceUnavailable}
	case errors.Is(err, fanout.ErrInvalidData):
		return fanout.Verdict{Code: fanout.CodeInvalidData}
	}
	return fanout.Verdict{Code: fanout.CodeTransportError, Retry: isTransient(err)}
}

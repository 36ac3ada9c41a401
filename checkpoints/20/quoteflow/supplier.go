package quoteflow

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/breaker"
	"quoteflowlab.dev/checkpoints/20/fanout"
	"quoteflowlab.dev/checkpoints/20/hedge"
	"quoteflowlab.dev/checkpoints/20/quota"
)

// maxSupplierBody caps how much of a supplier's answer we read.
const maxSupplierBody = 64 << 10

// outcome is one supplier's final word: a quote, or a failure code.
// err is set only for a program error of ours, which is not a supplier failure.
type outcome struct {
	quote *Quote
	code  Code
	cause error // the error behind code, if any
	err   error

	status     int           // the HTTP status behind an http_NNN code
	retryAfter time.Duration // what that answer's Retry-After headers asked for

	attempts int  // calls sent to the supplier for this result, retries and hedge included
	hedged   bool // a hedge was sent
	sent     bool // exchange handed the request to the transport (false: stopped before)
}

func failed(code Code, cause error) outcome { return outcome{code: code, cause: cause} }

// attempt makes attempt n's GET to supplier and classifies what comes back.
// It holds an outbound slot from before the request until the body is closed.
// With less than the floor left once it holds the slot, it sends nothing and
// returns CodeNoBudget. The first attempt may be hedged (s.call).
func (s *Service) attempt(ctx context.Context, supplier string, req QuoteRequest, id string, n int) outcome {
	ticket, ok := s.allow(supplier)
	if !ok {
		return failed(CodeCircuitOpen, breaker.ErrOpen) // at once: no slot, no token, no call
	}
	release, err := s.acquireOutbound(ctx)
	if errors.Is(err, quota.ErrUnavailable) && ctx.Err() == nil {
		ticket.Done(breaker.Ignore)
		return failed(CodeQuotaUnavailable, err) // closed: a call we cannot count is not made
	}
	if err != nil {
		ticket.Done(breaker.Ignore)
		return failed(CodeTimeout, err) // the deadline passed while waiting in line
	}
	defer release()
	left := budgetLeft(ctx)
	if left < s.minAttempt {
		ticket.Done(breaker.Ignore)
		return failed(CodeNoBudget, nil)
	}
	var o outcome
	switch {
	case n > 1:
		o = s.exchange(withAttempt(ctx, n), supplier, req, id, left)
		o.attempts = 1
	case ticket.Probe(): // a probe asks once: it is never hedged, and goes first in line
		s.extra.First()
		o = s.exchange(withPriority(ctx, adaptive.Probe), supplier, req, id, left)
		o.attempts = 1
	default:
		o = s.call(ctx, supplier, req, id)
	}
	ticket.Done(judge(o.asError()))
	return o
}

// call is a first call to supplier, its slot already held: recorded in the
// budget (a tenth of a token) and, with hedging on, hedged — a copy with
// the same X-Request-ID and X-Attempt: 2 when the supplier is slower than
// its recent p95, if a token and a free slot allow (package hedge).
// A GET of a price may be asked twice; nothing that orders ever is.
func (s *Service) call(ctx context.Context, supplier string, req QuoteRequest, id string) outcome {
	if s.hedging == nil {
		s.extra.First()
		o := s.exchange(ctx, supplier, req, id, budgetLeft(ctx))
		o.attempts = 1
		return o
	}
	o, rep, _ := hedge.Do(ctx, s.hedging, supplier, func(ctx context.Context, attempt int) (outcome, error) {
		if attempt > 1 {
			ctx = withNoWait(ctx) // a hedge never waits for its supplier's limit
		}
		o := s.exchange(withAttempt(ctx, attempt), supplier, req, id, budgetLeft(ctx))
		if !o.sent { // stopped before the supplier (a rate wait cut, say): not counted, not charged
			return o, fmt.Errorf("%w: %w", hedge.ErrNotSent, o.asError())
		}
		return o, o.asError()
	})
	o.attempts, o.hedged = rep.Attempts, rep.Hedged
	if rep.Hedged {
		s.hedges.Add(1)
	}
	return o
}

// attemptKey carries the number of an attempt to newRequest.
type attemptKey struct{}

// withAttempt marks ctx's request as attempt n (sent as X-Attempt when > 1).
func withAttempt(ctx context.Context, n int) context.Context {
	if n <= 1 {
		return ctx
	}
	return context.WithValue(ctx, attemptKey{}, n)
}

// exchange is one GET to supplier with left as its budget, the slot already
// held. With a rate quota, it first waits for room for one more request to
// supplier (all processes sharing the quota together), weighing rateCost,
// and makes no call when that room comes with less than the floor left.
func (s *Service) exchange(ctx context.Context, supplier string, req QuoteRequest, id string, left time.Duration) outcome {
	if s.rate != nil {
		// The floor holds after the wait too: room that comes with less than
		// the floor left is no room, so the wait ends the floor early.
		waitCtx, cancel := ctx, context.CancelFunc(func() {})
		if d, ok := ctx.Deadline(); ok {
			waitCtx, cancel = context.WithDeadline(ctx, d.Add(-s.minAttempt))
		}
		err := s.rate.WaitN(waitCtx, supplier, s.rateCost(req))
		cancel()
		switch {
		case errors.Is(err, quota.ErrUnavailable) && ctx.Err() == nil:
			return failed(CodeQuotaUnavailable, err)
		case errors.Is(err, quota.ErrRateLimited), err != nil && ctx.Err() == nil:
			return failed(CodeRateLimited, quota.ErrRateLimited) // no room while a call could still finish
		case err != nil:
			return failed(CodeTimeout, err) // the deadline passed while waiting for the rate
		}
		left = min(left, budgetLeft(ctx)) // the wait was paid from the budget
	}
	// The supplier's own adaptive limit (limits.go): wait in its line by
	// priority, or be shed at once; the wait is paid from the budget.
	done, err := s.supplierSlot(ctx, supplier)
	switch {
	case errors.Is(err, adaptive.ErrShed), errors.Is(err, errNoFreeSlot):
		return failed(CodeShed, adaptive.ErrShed)
	case err != nil:
		return failed(CodeTimeout, err)
	}
	left = min(left, budgetLeft(ctx))
	// Two limits: connecting is cut by the dialer's ConnectTimeout (newTransport);
	// the rest of the exchange by ctx's deadline, so the read limit is left.
	r, err := s.newRequest(ctx, supplier, req, id, left)
	if err != nil {
		done(outcome{}, ctx)
		return outcome{err: err} // a request we cannot build is our bug, not the supplier's failure
	}
	o := s.send(ctx, r, supplier, req)
	done(o, ctx)
	o.sent = true
	return o
}

// send makes the exchange's request and classifies what comes back.
func (s *Service) send(ctx context.Context, r *http.Request, supplier string, req QuoteRequest) outcome {
	resp, err := s.client.Do(r)
	if err != nil {
		return classifyError(ctx, err)
	}
	defer resp.Body.Close()
	if stoppedAtBudget(resp) {
		return failed(CodeTimeout, nil) // it ran out of the budget we sent: our timeout, seen by the supplier
	}
	if resp.StatusCode != http.StatusOK {
		o := failed(HTTPCode(resp.StatusCode), nil)
		o.status, o.retryAfter = resp.StatusCode, fanout.RetryAfter(resp.Header, time.Now())
		return o
	}
	body, err := readBody(resp)
	if err != nil {
		return classifyError(ctx, err)
	}
	q, err := decodeQuote(body, supplier, req.SKU)
	if err != nil {
		return failed(CodeInvalidData, err)
	}
	s.lastGood.put(q) // the fallback while the supplier is down (breakers.go)
	return outcome{quote: q}
}

// rateCost is what one call for req weighs in the rate quota: its quantity
// with Config.RateByQuantity, else 1.
func (s *Service) rateCost(req QuoteRequest) int {
	if s.rateByQty {
		return max(req.Quantity, 1)
	}
	return 1
}

func (s *Service) newRequest(ctx context.Context, supplier string, req QuoteRequest, id string, left time.Duration) (*http.Request, error) {
	u := s.providerURL.JoinPath("quotes", supplier)
	// qty is the order's quantity: what a supplier that limits cost counts.
	u.RawQuery = url.Values{"sku": {req.SKU}, "scenario": {req.Scenario}, "qty": {strconv.Itoa(req.Quantity)}}.Encode()
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("quoteflow: cannot build the request to %s: %w", supplier, err)
	}
	r.Header.Set("X-Request-ID", id)
	if n, ok := ctx.Value(attemptKey{}).(int); ok {
		r.Header.Set("X-Attempt", strconv.Itoa(n)) // a retry or a hedge: the same ID, a later attempt
	}
	r.Header.Set(budgetHeader, budgetToSend(left))
	// Asking for gzip ourselves stops http.Transport from decoding it
	// silently, so a broken gzip body surfaces in readBody as invalid data.
	r.Header.Set("Accept-Encoding", "gzip")
	return r, nil
}

// readBody reads at most maxSupplierBody bytes, gunzipping if the supplier says so.
func readBody(resp *http.Response) ([]byte, error) {
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, err
		}
		r = zr
	}
	return io.ReadAll(io.LimitReader(r, maxSupplierBody))
}

// classifyError turns a failed exchange into a failure code. Every error
// that comes back from the exchange is the supplier's failure, never ours:
// past the deadline it is a timeout; a body that says gzip and is not, invalid
// data; anything else is a transport error, whether the connection failed
// (refused, reset, cut) or the supplier spoke HTTP wrongly (a malformed status
// line, a plain-HTTP answer to https://, a broken chunk). Which of these are
// worth a second try is a separate, explicit choice (retry.go).
func classifyError(ctx context.Context, err error) outcome {
	switch {
	case ctx.Err() != nil:
		return failed(CodeTimeout, err)
	case isBadEncoding(err):
		return failed(CodeInvalidData, err)
	}
	return failed(CodeTransportError, err)
}

// isBadEncoding reports a body that says gzip but does not decode as gzip.
func isBadEncoding(err error) bool {
	var corrupt flate.CorruptInputError
	return errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.As(err, &corrupt)
}

// supplierQuote is the provider's 200 body; pointers tell missing from zero.
type supplierQuote struct {
	Supplier      *string `json:"supplier"`
	SKU           *string `json:"sku"`
	UnitCents     *int    `json:"unit_cents"`
	ShippingCents *int    `json:"shipping_cents"`
	Stock         *int    `json:"stock"`
}

// decodeQuote accepts exactly one object with the five fields and the right types.
func decodeQuote(body []byte, supplier, sku string) (*Quote, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var sq supplierQuote
	if err := dec.Decode(&sq); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the quote")
	}
	return sq.check(supplier, sku)
}

// check wants every field present, the supplier and SKU we asked about,
// and no negative amount.
func (sq supplierQuote) check(supplier, sku string) (*Quote, error) {
	if sq.Supplier == nil || sq.SKU == nil || sq.UnitCents == nil || sq.ShippingCents == nil || sq.Stock == nil {
		return nil, errors.New("a field is missing")
	}
	if *sq.Supplier != supplier || *sq.SKU != sku {
		return nil, fmt.Errorf("quote names %s/%s, asked %s/%s", *sq.Supplier, *sq.SKU, supplier, sku)
	}
	if *sq.UnitCents < 0 || *sq.ShippingCents < 0 || *sq.Stock < 0 {
		return nil, errors.New("negative amount")
	}
	return &Quote{Supplier: supplier, SKU: sku, UnitCents: *sq.UnitCents,
		ShippingCents: *sq.ShippingCents, Stock: *sq.Stock}, nil
}

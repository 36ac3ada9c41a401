package quoteflow

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/fanout"
	"quoteflowlab.dev/checkpoints/20/queue"
)

// ErrNoStore is returned by Basket when the service has no store and queue.
var ErrNoStore = errors.New("quoteflow: baskets need a store and a queue (Config.Store, Config.Queue)")

// BasketPolicy holds the limits of a basket and of its compensation; a zero
// field takes its default.
type BasketPolicy struct {
	Deadline    time.Duration                           // the whole basket answers by then (default 2 s)
	CallTimeout time.Duration                           // one supplier call (default 1 s)
	MaxAttempts int                                     // per supplier and line, first included (default BasketRetry's 3)
	BackoffBase time.Duration                           // full jitter: retry k waits up to min(cap, base·2^(k-1)) (default 50 ms)
	BackoffCap  time.Duration                           // (default 500 ms)
	Jitter      func(limit time.Duration) time.Duration // nil: uniform random (tests pass their own)

	Visibility time.Duration // a leased compensation job is delivered again after this (default 10 s)
	RetryDelay time.Duration // a failed job waits RetryDelay·2^(tries-1), at most 2 s (default 250 ms)
	PollEvery  time.Duration // the worker looks for due jobs this often (default 100 ms)
}

func (p BasketPolicy) withDefaults() BasketPolicy {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&p.Deadline, 2*time.Second)
	def(&p.CallTimeout, time.Second)
	def(&p.BackoffBase, BasketRetry.BackoffBase)
	def(&p.BackoffCap, BasketRetry.BackoffCap)
	def(&p.Visibility, 10*time.Second)
	def(&p.RetryDelay, 250*time.Millisecond)
	def(&p.PollEvery, 100*time.Millisecond)
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = BasketRetry.MaxAttempts
	}
	return p
}

// options are the fanout options of one run with deadline, on the service's
// one outbound limiter: baskets, compensation and single quotes share it.
// BasketRetry decides what is retried (policy.go), each retry paid from the
// budget the hedges share; no call starts with less than the floor left, as
// in a single quote.
func (s *Service) options(deadline time.Duration) fanout.Options {
	p := s.basket
	lim := s.outbound
	return fanout.Options{Limiter: lim, Deadline: deadline, CallTimeout: p.CallTimeout, Floor: s.minAttempt,
		MaxAttempts: p.MaxAttempts, Classify: BasketRetry.Retry, BackoffBase: p.BackoffBase, BackoffCap: p.BackoffCap, Jitter: p.Jitter,
		Budget: s.extra}
}

// Errors of a basket under an Idempotency-Key (BasketOnce).
var (
	// ErrKeyReused: the key was used for a different basket (422).
	ErrKeyReused = errors.New("quoteflow: this Idempotency-Key was used for a different basket")
	// ErrKeyInFlight: a request with the key is still being answered (409).
	ErrKeyInFlight = errors.New("quoteflow: a basket with this Idempotency-Key is still being answered")
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted, in bytes.
const MaxIdempotencyKey = 255

// storeWriteTime bounds each write of a basket (its reservation, its
// answer): a store too slow for it is store_unavailable. A store a network
// away (Redis) writes the answer inside the deadline: the calls end this
// much before it, so the answer, stored or not, comes by the deadline. A
// local file (bbolt) writes after the calls, within this much.
const storeWriteTime = 250 * time.Millisecond

// writeShare is the part of the basket deadline kept for writing the answer.
func (s *Service) writeShare() time.Duration {
	if r, ok := s.store.(interface{ remote() bool }); ok && r.remote() {
		return min(storeWriteTime, s.basket.Deadline/2)
	}
	return 0
}

// UnconfirmedError is a basket whose write the store did not confirm
// (ErrUnconfirmed): it may have been kept, with its queued calls. The
// request sent again with IdempotencyKey gets that basket if it was kept,
// or makes it once if it was not. It is an ErrStoreUnavailable.
type UnconfirmedError struct {
	BasketID       string
	IdempotencyKey string // the request's, or one made for it (the basket ID is derived from it)
	Err            error
}

func (e *UnconfirmedError) Error() string {
	return fmt.Sprintf("quoteflow: basket %s may have been kept: %v", e.BasketID, e.Err)
}

func (e *UnconfirmedError) Unwrap() error { return e.Err }

// Basket validates req (ErrInvalid naming items[i].field, before any supplier
// is contacted), takes an inbound slot (ErrBusy), stores the basket
// (ErrStoreUnavailable when it cannot: then no supplier is asked), and asks
// every supplier for every line at once through the shared outbound limit,
// answering by the basket deadline. Every supplier call that ended with a
// retryable reason is written to the compensation queue before Basket
// returns, with the basket as it stands, for GET /api/baskets/{id} to show it
// filling in. If ctx ends first, Basket returns ctx's error.
func (s *Service) Basket(ctx context.Context, req BasketRequest) (Basket, error) {
	return s.BasketOnce(ctx, req, "")
}

// BasketOnce is Basket under an idempotency key (a POST's Idempotency-Key;
// "" for none): the first request with key makes the basket; a later one
// with the same lines and scenario gets that basket (stored, as it stands
// now) and asks no supplier; one with other lines gets ErrKeyReused, and one
// while the first is still being answered ErrKeyInFlight. The key is kept
// as long as its basket (the store keeps the newest DefaultMaxBaskets).
func (s *Service) BasketOnce(ctx context.Context, req BasketRequest, key string) (Basket, error) {
	if err := req.Validate(); err != nil {
		return Basket{}, err
	}
	if err := validKey(key); err != nil {
		return Basket{}, err
	}
	if s.store == nil || s.queue == nil {
		return Basket{}, ErrNoStore
	}
	arrived := time.Now()
	admitCtx, cancelAdmit := context.WithDeadline(ctx, arrived.Add(s.basket.Deadline))
	release, err := s.admit(admitCtx, adaptive.Low) // a basket waits behind single quotes
	cancelAdmit()
	if err != nil {
		return Basket{}, err
	}
	defer release(adaptive.Ignore)        // a basket's latency is its lines', no sample of a quote's
	ctx = withPriority(ctx, adaptive.Low) // and so do its lines
	started := arrived
	deadline := started.Add(s.basket.Deadline)
	// A basket sent without a key gets one of its own: an answer that cannot
	// say whether the basket was kept then says how to ask again safely.
	retryKey := key
	if retryKey == "" {
		retryKey = newRequestID()
	}
	b := Basket{ID: keyID(retryKey), IdempotencyKey: key, Scenario: req.Scenario,
		Created: started.UTC().Truncate(time.Millisecond), Items: make([]BasketLine, len(req.Items))}
	lineIDs := make([]string, len(req.Items))
	var jobs []fanout.Job[*Quote]
	hedged := make([]bool, len(req.Items)*len(suppliers)) // each written by its own job only
	for i, item := range req.Items {
		lineIDs[i] = newRequestID()
		b.Items[i] = BasketLine{Index: i, SKU: item.SKU, Quantity: item.Quantity, RequestID: lineIDs[i],
			Status: LineAsking, Quotes: []Quote{}, Failures: []LineFailure{}}
		q := QuoteRequest{SKU: item.SKU, Quantity: item.Quantity, Scenario: req.Scenario}
		for _, name := range suppliers {
			jobs = append(jobs, s.supplierJob(name, q, lineIDs[i], &hedged[len(jobs)]))
		}
	}
	// The basket is stored before any supplier is asked: one that cannot be
	// stored costs no call. A reservation left by a crash is taken over once
	// its request can no longer be answering.
	calls := deadline.Add(-s.writeShare()) // the calls' deadline: the rest is the answer's write
	reserve, cancel := context.WithDeadline(ctx, started.Add(min(s.basket.Deadline-s.writeShare(), storeWriteTime)))
	defer cancel()
	held, err := s.store.Reserve(reserve, b, func(held Basket) bool {
		return !held.answered() && time.Since(held.Created) > 2*(s.basket.Deadline+storeWriteTime)
	})
	switch {
	case errors.Is(err, ErrBasketExists) && !held.asks(req):
		return Basket{}, ErrKeyReused
	case errors.Is(err, ErrBasketExists) && !held.answered():
		return Basket{}, ErrKeyInFlight
	case errors.Is(err, ErrBasketExists):
		return held, nil // the same request again: the same basket
	case err != nil:
		return Basket{}, s.storeFailed(ctx, b.ID, retryKey, err)
	}
	opts := s.options(time.Until(calls))
	opts.Gate = s.gate(func(job int) string { return suppliers[job%len(suppliers)] }) // jobs go line by line, supplier by supplier
	results := fanout.Run(ctx, jobs, opts)
	if err := ctx.Err(); err != nil {
		return Basket{}, fmt.Errorf("quoteflow: basket abandoned: %w", err)
	}
	var queued []queue.Job
	for i, item := range req.Items {
		b.Items[i].Status = ""
		b.Items[i].Calls = make([]Calls, len(suppliers))
		for k, name := range suppliers {
			r := results[i*len(suppliers)+k]
			c := Calls{Supplier: name, Attempts: r.Attempts, Hedged: hedged[i*len(suppliers)+k]}
			if c.Hedged {
				c.Attempts++ // fanout counts the calls it made; the hedge is the second copy of the first
			}
			b.Items[i].Calls[k] = c
			b.ExtraCalls += max(c.Attempts-1, 0)
			if r.OK() {
				b.settle(i, name, r.Value, nil)
				continue
			}
			f := &LineFailure{Supplier: name, Code: Code(r.Code), Attempts: r.Attempts,
				ElapsedMS: millis(r.Elapsed), Queued: fanout.Retryable(r.Code)}
			if f.Queued {
				j := compensationJob(b.ID, i, name, item, req.Scenario, lineIDs[i])
				if d := retryAfter(r.Err); d > 0 {
					j.NotBefore = time.Now().Add(d) // the queue's call too comes back no earlier than asked
				}
				queued = append(queued, j)
			}
			b.settle(i, name, nil, f)
		}
	}
	b.ElapsedMS = millis(time.Since(started))
	b.BudgetTokens = s.extra.Stats().Tokens
	// The basket and its jobs in one transaction, before the answer: once it
	// has committed, a crash loses nothing the client is told about, and a
	// crash before it leaves no job (and the reservation, answered by no one).
	// The client going away does not stop it; the store's slowness does.
	write, cancelWrite := context.WithDeadline(context.WithoutCancel(ctx), calls.Add(storeWriteTime))
	defer cancelWrite()
	if err := s.store.Put(write, b, queued...); err != nil {
		return Basket{}, s.storeFailed(write, b.ID, retryKey, err)
	}
	return b, nil
}

// storeFailed classifies a failed basket write: the queue's refusal and the
// client's own leaving as they are, a write the store may have made all the
// same (ErrUnconfirmed) as an UnconfirmedError naming the basket and the key
// to ask again with, anything else (a full disk, a store out of reach or too
// slow) as ErrStoreUnavailable; both logged once.
func (s *Service) storeFailed(ctx context.Context, id, key string, err error) error {
	switch {
	case errors.Is(err, queue.ErrFull), errors.Is(err, queue.ErrTooLarge):
		return fmt.Errorf("quoteflow: basket store: %w", err)
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return fmt.Errorf("quoteflow: basket abandoned: %w", err)
	case errors.Is(err, ErrUnconfirmed):
		s.logger.Error("basket write not confirmed; answered 503 store_unavailable, kept unknown", "basket", id, "err", err)
		return &UnconfirmedError{BasketID: id, IdempotencyKey: key, Err: err}
	}
	s.logger.Error("basket not stored; answered 503 store_unavailable", "basket", id, "err", err)
	return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
}

// validKey accepts "" (no key) or 1 to MaxIdempotencyKey printable ASCII bytes.
func validKey(key string) error {
	if len(key) > MaxIdempotencyKey {
		return invalid("Idempotency-Key", "%d bytes, at most %d", len(key), MaxIdempotencyKey)
	}
	for i := range len(key) {
		if key[i] < 0x20 || key[i] > 0x7e {
			return invalid("Idempotency-Key", "byte %d is not printable ASCII", i)
		}
	}
	return nil
}

// keyID is the basket ID of an idempotency key: the same key, the same
// basket, in every process sharing the store.
func keyID(key string) string {
	sum := sha256.Sum256([]byte("idempotency-key:" + key))
	return hex.EncodeToString(sum[:8])
}

// GetBasket returns a stored basket as it stands (ErrNoBasket if unknown).
func (s *Service) GetBasket(ctx context.Context, id string) (Basket, error) {
	if s.store == nil {
		return Basket{}, ErrNoStore
	}
	return s.store.Get(ctx, id)
}

// CompensationCounts counts the compensation jobs by state.
func (s *Service) CompensationCounts(ctx context.Context) (queue.Counts, error) {
	if s.queue == nil {
		return queue.Counts{}, ErrNoStore
	}
	return s.queue.Counts(ctx)
}

// supplierJob is one call to supplier for one line, for fanout.Run, which
// holds the outbound slot around it and decides on retries. The supplier is
// told the call's budget left (X-Budget-Ms), so it stops when we do.
// With hedged set, a first call is a basket line's and may be hedged (it
// says so in *hedged); nil (the compensation queue) never hedges.
func (s *Service) supplierJob(supplier string, req QuoteRequest, id string, hedged *bool) fanout.Job[*Quote] {
	return func(ctx context.Context, attempt int) (*Quote, error) {
		if attempt > 1 || hedged == nil {
			o := s.exchange(withAttempt(ctx, attempt), supplier, req, id, budgetLeft(ctx))
			return o.quote, o.asError()
		}
		o := s.call(ctx, supplier, req, id)
		*hedged = o.hedged
		return o.quote, o.asError()
	}
}

// asError says an outcome in the terms fanout classifies: a status (with its
// Retry-After), invalid data, our timeout, or the transport's own error.
func (o outcome) asError() error {
	switch {
	case o.err != nil:
		return o.err
	case o.quote != nil:
		return nil
	case o.status != 0:
		return &fanout.StatusError{Status: o.status, RetryAfter: o.retryAfter}
	case o.code == CodeInvalidData:
		return fmt.Errorf("%w: %v", fanout.ErrInvalidData, o.cause)
	case o.code == CodeShed:
		return fmt.Errorf("quoteflow: %w", adaptive.ErrShed)
	case o.code == CodeTimeout && o.cause == nil:
		return fmt.Errorf("supplier stopped at the budget we sent: %w", context.DeadlineExceeded)
	case o.cause != nil:
		return o.cause
	}
	return fmt.Errorf("quoteflow: %s", o.code)
}

// retryAfter is the wait a supplier's last answer asked for (0: none).
func retryAfter(err error) time.Duration {
	var se *fanout.StatusError
	if errors.As(err, &se) {
		return se.RetryAfter
	}
	return 0
}

func millis(d time.Duration) Milliseconds { return Milliseconds(float64(d.Microseconds()) / 1000) }

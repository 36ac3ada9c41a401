package quoteflow

import (
	"cmp"
	"context"
	"errors"
	"net/http"

	"quoteflowlab.dev/checkpoints/20/adaptive"
)

// setLimits makes the inbound limiter and, with cfg.Adaptive, one adaptive
// limiter per supplier: each supplier's capacity is its own, so one
// supplier's queue never shrinks another's limit.
func (s *Service) setLimits(cfg Config) error {
	inbound := cmp.Or(cfg.InboundLimit, DefaultInbound)
	q := adaptive.Queue{Max: -1}
	if cfg.InboundQueue != nil {
		q = *cfg.InboundQueue
		q.Reserve = s.minAttempt
		s.inboundQueue = true
	}
	if cfg.Adaptive == nil {
		s.inbound = adaptive.NewLimiter(adaptive.Fixed(inbound), q)
		return nil
	}
	// With adaptive limits the inbound limit adapts too, from quotes a
	// supplier's line shed a call of and from the quotes' latency: a quote
	// needs every supplier, so the right number of quotes at once is what
	// the tightest supplier serves, and the rest are better answered 503 at
	// once, whole, than let in to come back with a part missing. It
	// takes the suppliers' settings; InboundLimit, when set, is its
	// maximum and its start.
	in := *cfg.Adaptive
	if cfg.InboundLimit > 0 {
		in.Max, in.Initial = cfg.InboundLimit, cfg.InboundLimit
		in.Min = min(cmp.Or(in.Min, adaptive.DefaultMin), in.Max)
	}
	// Its latency is the deadline's business, not the baseline's: the
	// suppliers' limits already keep their queues short, and a quote
	// answered within half its budget waited in a queue its deadline
	// allows. Shrinking for it refused quotes that would have been answered
	// in time (lab load --rates: 2-3 % below a fixed 24 from 80 quotes a
	// second on); past half the budget it shrinks by how far the slowest
	// quote went past it (adaptive.Config.Allowed).
	in.Allowed = cmp.Or(in.Allowed, s.budget/2)
	il, err := adaptive.New(in)
	if err != nil {
		return err
	}
	s.inbound = adaptive.NewLimiter(il, q)
	s.inboundAdapts = true
	// Baskets then have a door of their own, a fixed number at once: a
	// basket holds its slot for seconds, and in the quotes' limit a few
	// would take the single quotes' places. Their lines wait behind single
	// quotes at every supplier's line, and are shed first.
	s.baskets = adaptive.NewLimiter(adaptive.Fixed(DefaultInbound), q)
	s.limits = make(map[string]*adaptive.Limiter, len(suppliers))
	for _, name := range suppliers {
		sc := *cfg.Adaptive
		// A supplier's 503 or timeout is the supplier saying it holds more
		// than it serves: halve, as TCP does on a loss (SupplierBackoff).
		sc.Backoff = cmp.Or(sc.Backoff, SupplierBackoff)
		l, err := adaptive.New(sc)
		if err != nil {
			return err
		}
		sq := cfg.SupplierQueue
		// A call in a supplier's line belongs to a request already let in:
		// shed it and the request's other calls were made for nothing, so
		// it waits up to half the budget (the door is where requests are
		// shed early, at the inbound line's target), and only while half
		// the budget is left: the time a call needs, with the queue inside
		// the supplier its limit allows. Let through later, it times out,
		// and a timeout halves the supplier's limit.
		sq.Target = cmp.Or(sq.Target, s.budget/2)
		sq.Reserve = max(s.minAttempt, s.budget/2)
		if sq.Kept == 0 {
			sq.Kept = adaptive.DefaultKept // basket lines leave a quarter to single quotes and probes
		}
		s.limits[name] = adaptive.NewLimiter(l, sq)
	}
	return nil
}

// SupplierBackoff multiplies a supplier's adaptive limit after a window
// with a failed call, unless Config.Adaptive sets Backoff. The inbound
// limit keeps adaptive.DefaultBackoff: a quote shed by a supplier's line
// is a weaker sign than the supplier's own 503.
const SupplierBackoff = 0.5

// priorityKey carries a call's priority to its supplier's limiter.
type priorityKey struct{}

// withPriority marks ctx's calls as priority p (Quote: High; a basket's
// lines: Low; a breaker's probe: Probe).
func withPriority(ctx context.Context, p adaptive.Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

func priorityOf(ctx context.Context) adaptive.Priority {
	if p, ok := ctx.Value(priorityKey{}).(adaptive.Priority); ok {
		return p
	}
	return adaptive.High
}

// noWaitKey marks a call that takes a supplier slot only if one is free
// now: a hedge, which must never lengthen the line it would help.
type noWaitKey struct{}

func withNoWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

// errNoFreeSlot: a hedge found its supplier's limit full.
var errNoFreeSlot = errors.New("quoteflow: no free slot for a hedge")

// supplierSlot takes a slot of supplier's adaptive limit, waiting in its
// line by the call's priority (a hedge does not wait). With no adaptive
// limits it returns a token that does nothing.
func (s *Service) supplierSlot(ctx context.Context, supplier string) (done func(outcome, context.Context), err error) {
	l := s.limits[supplier]
	if l == nil {
		return func(outcome, context.Context) {}, nil
	}
	var tok *adaptive.Token
	if ctx.Value(noWaitKey{}) != nil {
		t, ok := l.TryAcquire(priorityOf(ctx))
		if !ok {
			return nil, errNoFreeSlot
		}
		tok = t
	} else if tok, err = l.Acquire(ctx, priorityOf(ctx)); err != nil {
		return nil, err
	}
	return func(o outcome, ctx context.Context) { tok.Done(limitOutcome(ctx, o)) }, nil
}

// limitOutcome is what a finished call tells its supplier's limit. An
// answer is a sample of its latency, a 4xx and data we reject included
// (the supplier answered; the fault is the caller's or the data's); a 5xx,
// a 429, a timeout and a transport failure are failures under load; a call
// its caller cancelled (a hedge that lost, a client gone) says nothing.
func limitOutcome(ctx context.Context, o outcome) adaptive.Outcome {
	switch {
	case o.quote != nil:
		return adaptive.Success
	case errors.Is(ctx.Err(), context.Canceled):
		return adaptive.Ignore
	case o.status >= 500, o.status == http.StatusTooManyRequests:
		return adaptive.Dropped
	case o.status != 0, o.code == CodeInvalidData:
		return adaptive.Success
	case o.code == CodeTimeout, o.code == CodeTransportError:
		return adaptive.Dropped
	}
	return adaptive.Ignore
}

// quoteOutcome is what a finished quote tells the inbound limit. One whose
// call was shed by the line of a supplier that is busy (its limit's last
// step no backoff) is a failure: more quotes were let in than that
// supplier serves. Otherwise one that some supplier answered is a sample
// of its latency, whatever the others did (a supplier that fails is no
// sign of too many quotes at once). A quote no supplier answered (all
// failed, or were shed by failing suppliers' lines) says nothing: its
// latency is no supplier's; nor does one its client gave up on.
func (s *Service) quoteOutcome(ctx context.Context, outcomes []outcome) adaptive.Outcome {
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return adaptive.Ignore
	}
	said := adaptive.Ignore
	for i, o := range outcomes {
		l := s.limits[suppliers[i]]
		switch {
		case o.code == CodeShed && l != nil && !l.Limit().Failing():
			return adaptive.Dropped
		case limitOutcome(ctx, o) == adaptive.Success:
			said = adaptive.Success
		}
	}
	return said
}

// SupplierLimit is one supplier's adaptive limit on GET /api/limits.
type SupplierLimit struct {
	adaptive.Stats
	History []adaptive.Step `json:"history"` // the last steps, oldest first
}

// LimitStats is GET /api/limits: each supplier's adaptive limit with its
// history (none without Config.Adaptive), and the inbound limit.
type LimitStats struct {
	Adaptive  bool                     `json:"adaptive"`
	Suppliers map[string]SupplierLimit `json:"suppliers"`
	Inbound   SupplierLimit            `json:"inbound"`           // adaptive too with Config.Adaptive, fixed without
	Baskets   *adaptive.Stats          `json:"baskets,omitempty"` // with Config.Adaptive: baskets' own fixed limit
}

// LimitStats reports the limits now.
func (s *Service) LimitStats() LimitStats {
	out := LimitStats{Adaptive: s.limits != nil, Suppliers: map[string]SupplierLimit{},
		Inbound: SupplierLimit{Stats: s.inbound.Stats(), History: []adaptive.Step{}}}
	if s.inboundAdapts {
		out.Inbound.History = s.inbound.Limit().History()
		st := s.baskets.Stats()
		out.Baskets = &st
	}
	for name, l := range s.limits {
		out.Suppliers[name] = SupplierLimit{Stats: l.Stats(), History: l.Limit().History()}
	}
	return out
}

// getLimits shows the limits: GET /api/limits.
func (s *Service) getLimits(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.LimitStats())
}

package quoteflow

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/breaker"
	"quoteflowlab.dev/checkpoints/20/fanout"
	"quoteflowlab.dev/checkpoints/20/quota"
)

// DefaultMaxStale is how old a last good quote may be to answer for a
// supplier that fails now.
const DefaultMaxStale = 60 * time.Second

// setBreakers makes one breaker per supplier (none with NoBreaker).
func (s *Service) setBreakers(cfg Config) error {
	s.maxStale = cfg.MaxStale
	if s.maxStale == 0 {
		s.maxStale = DefaultMaxStale
	}
	if cfg.NoBreaker {
		return nil
	}
	s.breakers = make(map[string]*breaker.Breaker, len(suppliers))
	for _, name := range suppliers {
		b, err := breaker.New(cfg.Breaker)
		if err != nil {
			return err
		}
		s.breakers[name] = b
	}
	return nil
}

// allow asks supplier's breaker for a call: ok false means refused (the
// call fails with CodeCircuitOpen, before any slot or token).
func (s *Service) allow(supplier string) (breaker.Ticket, bool) {
	b := s.breakers[supplier]
	if b == nil {
		return breaker.Ticket{}, true
	}
	t, err := b.Allow()
	return t, err == nil
}

// judge says what a supplier call's error tells its breaker. A 5xx, a
// timeout and a transport error are failures; an answer (a 4xx, a body we
// cannot use) is a success: the supplier is up, and the caller or the data
// is at fault. A call cancelled by its caller (a hedge's loser), or never
// made (our quota, our rate, no slot), says nothing.
func judge(err error) breaker.Outcome {
	var se *fanout.StatusError
	switch {
	case err == nil:
		return breaker.Success
	case errors.Is(err, fanout.ErrNotMade), errors.Is(err, quota.ErrUnavailable), errors.Is(err, quota.ErrRateLimited),
		errors.Is(err, context.Canceled), errors.Is(err, adaptive.ErrShed):
		return breaker.Ignore
	case errors.As(err, &se):
		if se.Status >= http.StatusInternalServerError {
			return breaker.Failure
		}
		return breaker.Success
	case errors.Is(err, fanout.ErrInvalidData):
		return breaker.Success
	}
	return breaker.Failure // a timeout, a transport error
}

// gate is a fanout Options.Gate asking the breaker of supplierOf(job);
// nil without breakers.
func (s *Service) gate(supplierOf func(job int) string) func(int) (func(error), error) {
	if s.breakers == nil {
		return nil
	}
	return func(job int) (func(error), error) {
		t, ok := s.allow(supplierOf(job))
		if !ok {
			return nil, breaker.ErrOpen
		}
		return func(err error) { t.Done(judge(err)) }, nil
	}
}

// BreakerStats is what GET /api/breakers shows: each supplier's breaker.
type BreakerStats struct {
	Enabled  bool                     `json:"enabled"`
	Breakers map[string]breaker.Stats `json:"breakers"`
	// MaxStaleMs is the oldest last good quote answered for a failing
	// supplier (-1: none is).
	MaxStaleMs int64 `json:"max_stale_ms"`
}

// BreakerStats reports every breaker now.
func (s *Service) BreakerStats() BreakerStats {
	out := BreakerStats{Enabled: s.breakers != nil, Breakers: map[string]breaker.Stats{}, MaxStaleMs: -1}
	for name, b := range s.breakers {
		out.Breakers[name] = b.Stats()
	}
	if s.maxStale > 0 {
		out.MaxStaleMs = s.maxStale.Milliseconds()
	}
	return out
}

// lastGood keeps each supplier's last good quote per SKU, with its time.
// Only quotes a supplier gave are kept, so it holds at most the catalog.
type lastGood struct {
	mu sync.Mutex
	m  map[[2]string]goodQuote
}

type goodQuote struct {
	q  Quote
	at time.Time
}

func (l *lastGood) put(q *Quote) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[[2]string]goodQuote{}
	}
	l.m[[2]string{q.Supplier, q.SKU}] = goodQuote{*q, time.Now()}
}

func (l *lastGood) get(supplier, sku string) (goodQuote, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	g, ok := l.m[[2]string{supplier, sku}]
	return g, ok
}

// fallBack answers a failed supplier from its last good quote for sku when
// the supplier is down (a failure its breaker counts: a 5xx, a timeout, a
// transport error; or the open breaker itself) and that quote is no older
// than MaxStale: marked stale, with its age. A 404 or invalid data is an
// answer, not an outage, and a call of ours never made (no budget, the
// quota, the rate) says nothing of the supplier: those stand, as does any
// failure with no young enough quote.
func (s *Service) fallBack(supplier, sku string, o *outcome) {
	if o.quote != nil || o.err != nil || s.maxStale < 0 {
		return
	}
	if o.code != CodeCircuitOpen && judge(o.asError()) != breaker.Failure {
		return // not an outage: an answer, or a call of ours never made (no budget, quota, rate)
	}
	g, ok := s.lastGood.get(supplier, sku)
	if !ok {
		return
	}
	age := time.Since(g.at)
	if age > s.maxStale {
		return
	}
	q := g.q
	ms := millis(age)
	q.Stale, q.AgeMS = true, &ms
	o.quote = &q
}

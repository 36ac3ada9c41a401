package quoteflow

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/breaker"
	"quoteflowlab.dev/checkpoints/20/fanout"
	"quoteflowlab.dev/checkpoints/20/hedge"
	"quoteflowlab.dev/checkpoints/20/queue"
	"quoteflowlab.dev/checkpoints/20/quota"
)

// Defaults for the zero fields of Config.
const (
	DefaultProviderURL = "http://127.0.0.1:9101"
	DefaultBudget      = 800 * time.Millisecond
	DefaultInbound     = 8 // quotes in progress at once
	DefaultOutbound    = 6 // supplier calls in flight at once, for all quotes together
	DefaultPoolSize    = 6 // connections to the provider

	// DefaultConnectTimeout limits reaching a supplier. On the same network a
	// connect takes about a millisecond: one that takes this long means the
	// supplier is unreachable, not slow.
	DefaultConnectTimeout = 200 * time.Millisecond
	// DefaultMinAttempt is the floor: an attempt that would start with less
	// budget than this is not started (budget.go).
	DefaultMinAttempt = 50 * time.Millisecond
)

// Config holds the service's settings; a zero field takes its default.
type Config struct {
	ProviderURL   string            // the provider lab's base URL
	Transport     http.RoundTripper // nil: a pooled *http.Transport owned by the service
	Budget        time.Duration     // the deadline of one Quote, measured from admission
	InboundLimit  int               // requests admitted at once (the next is rejected with ErrBusy); with Adaptive the most the inbound limit grows to (0: Adaptive.Max)
	OutboundLimit int               // supplier calls at once, shared by every quote
	PoolSize      int               // connections of the owned transport (unused with Transport set)

	ConnectTimeout time.Duration // connect limit of the owned transport (unused with Transport set)
	MinAttempt     time.Duration // the floor: no attempt starts with less budget left than this

	// Limiter is the outbound limit shared by quotes and baskets; nil: a
	// fanout.Local of OutboundLimit slots.
	Limiter fanout.Limiter
	// Quota, when set, replaces Limiter: its Acquire and Release bound the
	// supplier calls in flight (quota.Redis: for every process sharing it),
	// and its WaitN(ctx, supplier, cost) is asked before each request to
	// that supplier, once the slot is held. Set Limiter or Quota, not both.
	Quota quota.Quota
	// RateByQuantity weighs each call in the rate quota by its order's
	// quantity, the cost a supplier that limits units per window counts (as
	// model APIs count tokens); false: every call weighs 1, a quota of calls.
	RateByQuantity bool
	Basket         BasketPolicy // zero fields take their defaults (basket.go)
	// Store and Queue keep baskets and their compensation jobs; nil: baskets
	// are refused with ErrNoStore. cmd/quoteflow opens both in --data DIR.
	Store  BasketStore
	Queue  queue.Queue
	Logger *slog.Logger // one line per finished compensation call; nil: slog.Default()

	// Extra is the budget (a token bucket) every extra supplier call is paid
	// from, retries and hedges alike; nil: a hedge.Budget of ExtraConfig.
	// Not to be confused with Budget, the time a quote may take.
	Extra       *hedge.Budget
	ExtraConfig hedge.BudgetConfig
	// Hedge sets when a slow supplier call gets a second copy (the delay's
	// quantile, floor and ceiling); NoHedge turns hedging off.
	Hedge   hedge.DelayConfig
	NoHedge bool
	// Breaker sets each supplier's circuit breaker (one per supplier,
	// shared by quotes, basket lines and the compensation queue);
	// NoBreaker turns them off.
	Breaker   breaker.Config
	NoBreaker bool
	// MaxStale is the oldest a supplier's last good quote may be to answer
	// for it when it fails now (stale: true); 0: DefaultMaxStale; negative:
	// no stale answers.
	MaxStale time.Duration
	// Adaptive, when set, gives each supplier a limit of its own that
	// adapts to the supplier's latency and failures within [Min, Max]
	// (package adaptive), with a line of waiters SupplierQueue (probes,
	// then single quotes, then basket lines, which leave the top
	// SupplierQueue.Kept of the limit to the others: 0 is
	// adaptive.DefaultKept, a quarter; negative none; a call waits at most
	// SupplierQueue.Target, 0: half the Budget); the shared outbound
	// limit then bounds all suppliers together at OutboundLimit, or 3 x
	// (Max + SupplierQueue.Max)
	// when that is 0. Nil: one fixed outbound limit, as in lesson 19.
	Adaptive      *adaptive.Config
	SupplierQueue adaptive.Queue
	// InboundQueue, when set, lets a request that finds the inbound limit
	// full wait in a line (single quotes before baskets) for its target,
	// never past its deadline less the floor, and sheds it (ErrBusy) when
	// it cannot be served in time; its Reserve is MinAttempt. Nil: such a
	// request is rejected at once, as in lesson 13. The budget of a quote
	// is counted from its arrival either way.
	InboundQueue *adaptive.Queue
}

// Service answers quote requests by asking every supplier at once.
// One Service serves all requests; it is safe for concurrent use.
type Service struct {
	providerURL   *url.URL
	client        *http.Client
	budget        time.Duration
	inbound       *adaptive.Limiter // inbound slots (admission.go): a fixed limit of InboundLimit, or adaptive with Adaptive
	inboundAdapts bool
	baskets       *adaptive.Limiter            // with Adaptive: baskets' own door, a fixed limit (nil: they share inbound)
	inboundQueue  bool                         // requests may wait for an inbound slot
	limits        map[string]*adaptive.Limiter // per supplier; nil: no adaptive limits (limits.go)
	outbound      fanout.Limiter               // one shared line for every supplier call, quotes and baskets
	outboundInUse atomic.Int64
	rate          quota.Quota // its WaitN before each supplier request; nil: no rate quota
	rateByQty     bool        // a call weighs its quantity in the rate quota, not 1
	minAttempt    time.Duration
	basket        BasketPolicy
	store         BasketStore
	queue         queue.Queue
	logger        *slog.Logger
	extra         *hedge.Budget               // pays for retries and hedges (one for both)
	hedging       *hedge.Policy               // nil: no hedges
	hedges        atomic.Int64                // hedges sent
	retries       atomic.Int64                // retries sent (quotes and baskets)
	breakers      map[string]*breaker.Breaker // per supplier; nil with NoBreaker
	maxStale      time.Duration               // < 0: no stale answers
	lastGood      lastGood
}

// New builds a Service. Zero fields of cfg take their defaults; a negative
// field or a ProviderURL that is not an absolute http(s) URL is an error.
func New(cfg Config) (*Service, error) {
	if cfg.Budget < 0 || cfg.InboundLimit < 0 || cfg.OutboundLimit < 0 || cfg.PoolSize < 0 ||
		cfg.ConnectTimeout < 0 || cfg.MinAttempt < 0 {
		return nil, errors.New("quoteflow: Budget, InboundLimit, OutboundLimit, PoolSize, ConnectTimeout and MinAttempt must not be negative")
	}
	base, err := parseProviderURL(cmp.Or(cfg.ProviderURL, DefaultProviderURL))
	if err != nil {
		return nil, err
	}
	if cfg.Limiter != nil && cfg.Quota != nil {
		return nil, errors.New("quoteflow: set Config.Limiter or Config.Quota, not both")
	}
	limiter := cfg.Limiter
	if cfg.Quota != nil {
		limiter = cfg.Quota
	}
	outbound := 0 // the local outbound limit, when the service makes it
	if limiter == nil {
		outbound = cmp.Or(cfg.OutboundLimit, DefaultOutbound)
		if cfg.Adaptive != nil && cfg.OutboundLimit == 0 {
			// Room for every supplier's limit at its maximum and its full
			// line: a call takes the shared slot before its supplier's line,
			// and a shared limit that binds first makes every call wait in
			// one line, first come first served, and the suppliers' lines
			// never see the single quotes they would serve before basket
			// lines (lab demo 20 priority: quotes' p99 past their deadline).
			line := max(0, cmp.Or(cfg.SupplierQueue.Max, adaptive.DefaultQueueMax))
			outbound = len(suppliers) * (cmp.Or(cfg.Adaptive.Max, adaptive.DefaultMax) + line)
		}
		limiter = fanout.NewLocal(outbound)
	}
	transport := cfg.Transport
	if transport == nil {
		// The pool is at least the outbound limit: a pool of 6 under
		// adaptive limits of up to 24 a supplier would be the real limit.
		pool := cmp.Or(cfg.PoolSize, DefaultPoolSize)
		if cfg.PoolSize == 0 && cfg.Adaptive != nil {
			pool = max(pool, outbound)
		}
		transport = newTransport(pool, cmp.Or(cfg.ConnectTimeout, DefaultConnectTimeout))
	}
	s := &Service{
		providerURL: base,
		client:      &http.Client{Transport: transport, CheckRedirect: noRedirects},
		budget:      cmp.Or(cfg.Budget, DefaultBudget),
		minAttempt:  cmp.Or(cfg.MinAttempt, DefaultMinAttempt),
		basket:      cfg.Basket.withDefaults(),
		store:       cfg.Store,
		queue:       cfg.Queue,
		logger:      cmp.Or(cfg.Logger, slog.Default()),
		rate:        cfg.Quota,
		rateByQty:   cfg.RateByQuantity,
	}
	if err := s.setLimits(cfg); err != nil {
		return nil, err
	}
	counted := &countedLimiter{Limiter: limiter, inUse: &s.outboundInUse}
	s.outbound = counted
	extra := cfg.Extra
	if extra == nil {
		extra = hedge.NewBudget(cfg.ExtraConfig)
	}
	s.extra = extra
	if err := s.setBreakers(cfg); err != nil {
		return nil, err
	}
	if !cfg.NoHedge {
		s.hedging = &hedge.Policy{Limiter: counted, Budget: extra,
			Delays: hedge.NewDelays(cfg.Hedge), Floor: s.minAttempt}
	}
	return s, nil
}

func parseProviderURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("quoteflow: ProviderURL %q is not an absolute http(s) URL", raw)
	}
	return u, nil
}

// newTransport is the connection pool the service owns when none is injected:
// at most size connections to the provider, all kept for reuse. Its dialer
// holds the connect limit; the read limit is the quote's deadline, carried by
// each request's context (budget.go).
func newTransport(size int, connect time.Duration) *http.Transport {
	return &http.Transport{
		Proxy:               nil, // the provider is on loopback; ignore HTTP_PROXY
		DialContext:         (&net.Dialer{Timeout: connect}).DialContext,
		MaxConnsPerHost:     size,
		MaxIdleConnsPerHost: size,
		IdleConnTimeout:     30 * time.Second,
	}
}

// noRedirects hands a 3xx back as it is; it becomes an http_3xx failure.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// ExtraStats is what GET /api/budget shows: the budget that pays for every
// extra supplier call, and how many of those were hedges (the rest are
// retries).
type ExtraStats struct {
	hedge.BudgetStats
	Hedges  int64 `json:"hedges"`  // hedges sent
	Retries int64 `json:"retries"` // retries sent: extra_calls - hedges
	Hedging bool  `json:"hedging"` // false with Config.NoHedge
}

// ExtraStats reports the budget of extra calls now.
func (s *Service) ExtraStats() ExtraStats {
	b := s.extra.Stats()
	h := s.hedges.Load()
	return ExtraStats{BudgetStats: b, Hedges: h, Retries: b.ExtraCalls - h, Hedging: s.hedging != nil}
}

// Close closes the idle connections of the service's transport.
func (s *Service) Close() { s.client.CloseIdleConnections() }

// Quote validates req (an error wrapping ErrInvalid, before any supplier is
// contacted), takes an inbound slot (ErrBusy when none is free in time:
// admission.go), then
// asks the three suppliers at once with one X-Request-ID, each call waiting
// for a shared outbound slot; a supplier may be asked twice (retry.go).
// Every attempt tells the supplier the budget left as X-Budget-Ms, and none
// starts with less than the floor left: a supplier never asked is a
// CodeNoBudget failure.
// One absolute deadline, the budget counted from arrival, covers waiting
// for slots, the calls, and the pause between attempts. Every slot is returned
// before Quote returns, whatever the outcome.
// It returns when every supplier has answered or the deadline has passed;
// a supplier without a final result by then is a CodeTimeout failure, and
// results completed earlier are kept. No goroutine it started outlives it:
// the transport must honour the request context, as net/http's does.
// If ctx itself is cancelled, Quote returns ctx's error instead of a result.
// A panic while asking a supplier is re-raised here, not reported as a failure.
func (s *Service) Quote(ctx context.Context, req QuoteRequest) (QuoteResult, error) {
	if err := req.Validate(); err != nil {
		return QuoteResult{}, err
	}
	started := time.Now() // the budget covers the wait for a slot
	budget, cancel := context.WithDeadline(withPriority(ctx, adaptive.High), started.Add(s.budget))
	defer cancel()
	release, err := s.admit(budget, adaptive.High)
	if err != nil {
		if ctx.Err() != nil {
			return QuoteResult{}, fmt.Errorf("quoteflow: quote abandoned: %w", ctx.Err())
		}
		return QuoteResult{}, err
	}
	said := adaptive.Ignore // what the quote tells an adaptive inbound limit
	defer func() { release(said) }()
	id := newRequestID()
	outcomes := s.fanOut(budget, req, id)
	said = s.quoteOutcome(budget, outcomes)
	if err := ctx.Err(); err != nil {
		return QuoteResult{}, fmt.Errorf("quoteflow: quote abandoned: %w", err)
	}
	for _, o := range outcomes {
		if o.err != nil {
			return QuoteResult{}, o.err
		}
	}
	for i := range outcomes {
		s.fallBack(suppliers[i], req.SKU, &outcomes[i])
	}
	return rank(req, outcomes, started, id), nil
}

// fanOut asks every supplier in its own goroutine and waits for all of them.
func (s *Service) fanOut(ctx context.Context, req QuoteRequest, id string) []outcome {
	outcomes := make([]outcome, len(suppliers))
	panics := make([]any, len(suppliers))
	var wg sync.WaitGroup
	for i, name := range suppliers {
		wg.Go(func() {
			defer catchPanic(&panics[i])
			outcomes[i] = s.withRetry(ctx, name, req, id)
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	return outcomes
}

// catchPanic keeps a supplier goroutine's panic, with its stack, for fanOut to re-raise.
func catchPanic(dst *any) {
	if p := recover(); p != nil {
		*dst = fmt.Sprintf("quoteflow: panic while asking a supplier: %v\n%s", p, debug.Stack())
	}
}

// rank turns outcomes into a result: quotes with enough stock, sorted by
// (total, supplier); failures in supplier order; short stock is neither.
func rank(req QuoteRequest, outcomes []outcome, started time.Time, id string) QuoteResult {
	res := QuoteResult{SKU: req.SKU, Quantity: req.Quantity, Quotes: []Quote{}, Failures: []Failure{}, RequestID: id,
		Calls: make([]Calls, len(outcomes))}
	for i, o := range outcomes {
		res.Calls[i] = Calls{Supplier: suppliers[i], Attempts: o.attempts, Hedged: o.hedged}
		switch {
		case o.quote == nil:
			res.Failures = append(res.Failures, Failure{Supplier: suppliers[i], Code: o.code})
		case o.quote.Stock >= req.Quantity:
			q := *o.quote
			q.TotalCents = q.UnitCents*req.Quantity + q.ShippingCents
			res.Quotes = append(res.Quotes, q)
		}
	}
	slices.SortFunc(res.Quotes, func(a, b Quote) int {
		return cmp.Or(cmp.Compare(a.TotalCents, b.TotalCents), strings.Compare(a.Supplier, b.Supplier))
	})
	if len(res.Quotes) > 0 {
		best := res.Quotes[0]
		res.Best = &best
	}
	res.ElapsedMS = Milliseconds(float64(time.Since(started).Microseconds()) / 1000)
	return res
}

// newRequestID returns 32 random hex digits.
func newRequestID() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return hex.EncodeToString(b)
}

package hedge

import (
	"sync"
	"time"
)

// BudgetConfig sets a Budget; a zero field takes its default.
type BudgetConfig struct {
	// Ratio is the token each first call adds (default 0.1: extra calls are
	// about 10 % of first calls at most).
	Ratio float64
	// Cap is the most tokens the bucket holds, and what it starts with
	// (default 10): in an outage at most Cap extra calls go out at once.
	Cap float64
	// MinPerSecond is the least rate at which tokens come back (default 0.1
	// per second), so a quiet service may still retry now and then. It is a
	// floor, not an addition: a second in which first calls paid in at
	// least this much gets nothing from it, so a busy service's extra calls
	// stay at Ratio of its first calls.
	MinPerSecond float64
}

// Defaults for the zero fields of BudgetConfig.
const (
	DefaultRatio        = 0.1
	DefaultCap          = 10.0
	DefaultMinPerSecond = 0.1
)

// epsilon absorbs the rounding of adding tenths.
const epsilon = 1e-9

// Budget is a token bucket that pays for extra calls — retries and hedges
// alike: each first call adds Ratio of a token, each extra call spends one
// whole token, and there is no extra call without one. When every call
// fails or is slow, extra calls stay near Ratio of the first calls (plus
// the Cap it starts with) instead of doubling the load.
// One Budget is shared by everything that may call a supplier twice.
// It is safe for concurrent use.
type Budget struct {
	cfg BudgetConfig

	mu     sync.Mutex
	tokens float64
	since  time.Time // start of the stretch MinPerSecond is judged over
	earned float64   // tokens first calls paid in since then
	first  int64     // first calls seen
	spent  int64     // extra calls paid for
	denied int64     // extra calls refused for want of a token
}

// NewBudget returns a full Budget.
func NewBudget(cfg BudgetConfig) *Budget {
	if cfg.Ratio <= 0 {
		cfg.Ratio = DefaultRatio
	}
	if cfg.Cap <= 0 {
		cfg.Cap = DefaultCap
	}
	if cfg.MinPerSecond <= 0 {
		cfg.MinPerSecond = DefaultMinPerSecond
	}
	return &Budget{cfg: cfg, tokens: cfg.Cap, since: time.Now()}
}

// refill settles the minimum rate once at least a second has passed since
// the last settling: what first calls paid in over that stretch falls
// short of MinPerSecond by, it adds. b.mu is held.
func (b *Budget) refill() {
	now := time.Now()
	dt := now.Sub(b.since).Seconds()
	if dt < 1 {
		return
	}
	if owed := dt*b.cfg.MinPerSecond - b.earned; owed > 0 {
		b.tokens = min(b.cfg.Cap, b.tokens+owed)
	}
	b.since, b.earned = now, 0
}

// First records a first call: Ratio more tokens, up to Cap.
func (b *Budget) First() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	b.first++
	b.earned += b.cfg.Ratio
	b.tokens = min(b.cfg.Cap, b.tokens+b.cfg.Ratio)
}

// TrySpend takes one token for an extra call and reports whether there was
// one; false means the extra call must not be made.
func (b *Budget) TrySpend() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	if !b.whole() {
		b.denied++
		return false
	}
	b.tokens = max(b.tokens-1, 0)
	b.spent++
	return true
}

// HasToken reports whether an extra call could be paid for now, without
// taking the token (TrySpend takes it).
func (b *Budget) HasToken() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	return b.whole()
}

// whole reports whether the bucket holds a whole token: ten tenths make
// one, whatever floating point says. b.mu is held.
func (b *Budget) whole() bool { return b.tokens >= 1-epsilon }

// Refund gives back a token taken by TrySpend for a call that was then not
// made.
func (b *Budget) Refund() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	b.spent--
	b.tokens = min(b.cfg.Cap, b.tokens+1)
}

// BudgetStats is what a Budget has seen.
type BudgetStats struct {
	Tokens     float64 `json:"tokens"`      // tokens in the bucket now
	Cap        float64 `json:"cap"`         // the most it holds
	Ratio      float64 `json:"ratio"`       // token added per first call
	FirstCalls int64   `json:"first_calls"` // first calls recorded
	ExtraCalls int64   `json:"extra_calls"` // retries and hedges paid for
	Denied     int64   `json:"denied"`      // extra calls refused for want of a token
}

// Stats returns the bucket's state now.
func (b *Budget) Stats() BudgetStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill()
	return BudgetStats{Tokens: b.tokens, Cap: b.cfg.Cap, Ratio: b.cfg.Ratio,
		FirstCalls: b.first, ExtraCalls: b.spent, Denied: b.denied}
}

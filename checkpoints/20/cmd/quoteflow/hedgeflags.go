package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"quoteflowlab.dev/checkpoints/20/hedge"
	"quoteflowlab.dev/checkpoints/20/quoteflow"
)

// hedgeFlags are lesson 18's settings: when a slow supplier call gets a
// second copy, and the budget every extra call (retry or hedge) is paid from.
type hedgeFlags struct {
	off            bool
	floor, ceiling time.Duration
	ratio, cap     float64
}

func newHedgeFlags(fs *flag.FlagSet) *hedgeFlags {
	h := &hedgeFlags{}
	fs.BoolVar(&h.off, "no-hedge", false, "never hedge a slow supplier call (retries still pay from the budget)")
	fs.DurationVar(&h.floor, "hedge-floor", hedge.DefaultFloor, "the hedge delay (a supplier's recent p95) is never shorter than this")
	fs.DurationVar(&h.ceiling, "hedge-ceiling", hedge.DefaultCeiling,
		"the hedge delay is never longer than this; also the delay while fewer than 10 latencies of the last 10s are known")
	fs.Float64Var(&h.ratio, "budget-ratio", hedge.DefaultRatio, "tokens each first supplier call adds to the budget of extra calls (each retry or hedge spends 1)")
	fs.Float64Var(&h.cap, "budget-cap", hedge.DefaultCap, "the most tokens the budget of extra calls holds (it starts full)")
	return h
}

// maxBudgetCap is the largest --budget-cap: a million tokens is no budget
// in effect already.
const maxBudgetCap = 1_000_000

// check refuses a bad setting as a usage error, before anything is opened.
func (h *hedgeFlags) check(stderr io.Writer) (int, bool) {
	switch { // written so that NaN fails every test
	case !(h.floor > 0 && h.floor <= h.ceiling && h.ceiling <= maxTiming):
		fmt.Fprintf(stderr, "quoteflow: --hedge-floor %s, --hedge-ceiling %s: want 0 < floor ≤ ceiling ≤ %s\n", h.floor, h.ceiling, maxTiming)
	case !(h.ratio > 0 && h.ratio <= 1):
		fmt.Fprintf(stderr, "quoteflow: --budget-ratio %g: want a number in (0, 1]\n", h.ratio)
	case !(h.cap >= 1 && h.cap <= maxBudgetCap):
		fmt.Fprintf(stderr, "quoteflow: --budget-cap %g: want 1 to %d tokens (a token pays for one extra call)\n", h.cap, maxBudgetCap)
	default:
		return 0, true
	}
	return 2, false
}

// config is the service's configuration with these settings and the
// basket policy of t.
func (h *hedgeFlags) config(t *timings) quoteflow.Config {
	c := quoteflow.Config{Basket: t.basket()}
	if h == nil {
		return c
	}
	c.NoHedge = h.off
	c.Hedge = hedge.DelayConfig{Floor: h.floor, Ceiling: h.ceiling}
	c.ExtraConfig = hedge.BudgetConfig{Ratio: h.ratio, Cap: h.cap}
	return c
}

// describe is the start line's word on hedging.
func (h *hedgeFlags) describe() string {
	if h == nil || h.off {
		return fmt.Sprintf("hedging: off; retries paid from a budget of %g tokens", h.capOrDefault())
	}
	return fmt.Sprintf("hedging: at each supplier's recent p95, within [%s, %s]; retries and hedges paid from one budget (%g per first call, cap %g)",
		h.floor, h.ceiling, h.ratio, h.cap)
}

func (h *hedgeFlags) capOrDefault() float64 {
	if h == nil {
		return hedge.DefaultCap
	}
	return h.cap
}

package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"quoteflowlab.dev/checkpoints/20/breaker"
	"quoteflowlab.dev/checkpoints/20/quoteflow"
)

// breakerFlags are lesson 19's settings: each supplier's circuit breaker
// and how old a last good quote may be to answer for a supplier that is down.
type breakerFlags struct {
	off              bool
	window, minCalls int
	rate, jitter     float64
	coolDown         time.Duration
	probes           int
	maxStale         time.Duration
}

func newBreakerFlags(fs *flag.FlagSet) *breakerFlags {
	b := &breakerFlags{}
	fs.BoolVar(&b.off, "no-breaker", false, "no circuit breakers: every call is made, whatever the supplier's recent failures")
	fs.IntVar(&b.window, "breaker-window", breaker.DefaultWindow, fmt.Sprintf("outcomes each supplier's breaker keeps, the newest (1 to %d)", breaker.MaxWindow))
	fs.IntVar(&b.minCalls, "breaker-min-calls", breaker.DefaultMinCalls, "outcomes in the window before a breaker may open (1 to the window)")
	fs.Float64Var(&b.rate, "breaker-failure-rate", breaker.DefaultFailureRate, "a breaker opens when this share of its window failed, in (0, 1]")
	fs.DurationVar(&b.coolDown, "breaker-cooldown", breaker.DefaultCoolDown, "the shortest time a breaker stays open before its probes")
	fs.Float64Var(&b.jitter, "breaker-jitter", breaker.DefaultJitter, "each cool-down is stretched by a random share of it up to this, in [0, 1]")
	fs.IntVar(&b.probes, "breaker-probes", breaker.DefaultProbes, fmt.Sprintf("half-open: calls let through, and successes that close it (1 to %d)", breaker.MaxProbes))
	fs.DurationVar(&b.maxStale, "max-stale", quoteflow.DefaultMaxStale, "the oldest last good quote that answers for a supplier that is down (marked stale); 0: none")
	return b
}

// config is the breaker's configuration.
func (b *breakerFlags) config() breaker.Config {
	return breaker.Config{Window: b.window, MinCalls: b.minCalls, FailureRate: b.rate, CoolDown: b.coolDown,
		Jitter: b.jitter, NoJitter: b.jitter == 0, Probes: b.probes}
}

// check refuses a bad setting as a usage error (exit 2), before anything is
// opened: a zero is a number here, not "the default".
func (b *breakerFlags) check(stderr io.Writer) (int, bool) {
	err := b.config().Check()
	switch {
	case b.window == 0 || b.minCalls == 0 || b.probes == 0 || b.coolDown == 0:
		err = fmt.Errorf("--breaker-window, --breaker-min-calls, --breaker-probes and --breaker-cooldown must be more than 0")
	case b.rate == 0 || math.IsNaN(b.rate) || math.IsInf(b.rate, 0):
		err = fmt.Errorf("--breaker-failure-rate %v: want a number in (0, 1]", b.rate)
	case b.maxStale < 0 || b.maxStale > maxTiming:
		err = fmt.Errorf("--max-stale %s: want 0 (no stale answers) up to %s", b.maxStale, maxTiming)
	}
	if err != nil {
		fmt.Fprintln(stderr, "quoteflow: "+strings.TrimPrefix(err.Error(), "breaker: "))
		return 2, false
	}
	return 0, true
}

// apply sets c's breaker settings.
func (b *breakerFlags) apply(c *quoteflow.Config) {
	if b == nil {
		return
	}
	c.NoBreaker, c.Breaker = b.off, b.config()
	c.MaxStale = b.maxStale
	if b.maxStale == 0 {
		c.MaxStale = -1 // none
	}
}

// describe is the start line's word on the breakers.
func (b *breakerFlags) describe() string {
	if b == nil || b.off {
		return "breakers: off"
	}
	return fmt.Sprintf("breakers: one per supplier, open at %g of the last %d outcomes (at least %d), %s cool-down (+ up to %g), %d probes; stale answers up to %s",
		b.rate, b.window, b.minCalls, b.coolDown, b.jitter, b.probes, b.maxStale)
}

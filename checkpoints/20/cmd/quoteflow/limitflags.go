package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/quoteflow"
)

// limitFlags are lesson 20's settings: each supplier's adaptive limit and
// the lines in front of it and of the inbound limit.
type limitFlags struct {
	off             bool
	initial, lo, hi int
	supplierTarget  time.Duration
	inboundTarget   time.Duration
	inboundQueue    int
	inbound         int
	outbound        int
}

func newLimitFlags(fs *flag.FlagSet) *limitFlags {
	l := &limitFlags{}
	fs.BoolVar(&l.off, "no-adaptive", false, "no adaptive limits: one fixed outbound limit (--outbound) for every supplier, as in lesson 19")
	fs.IntVar(&l.initial, "limit-initial", adaptive.DefaultInitial, "each supplier's adaptive limit before any call")
	fs.IntVar(&l.lo, "limit-min", adaptive.DefaultMin, "each supplier's adaptive limit never goes below this (at least 1)")
	fs.IntVar(&l.hi, "limit-max", adaptive.DefaultMax, "each supplier's adaptive limit never goes above this (at most 1000)")
	fs.DurationVar(&l.supplierTarget, "limit-queue-target", quoteflow.DefaultBudget/2, "the longest a call waits for its supplier's limit before it is shed (default half the default budget: the request was let in, and its other calls are made)")
	fs.DurationVar(&l.inboundTarget, "inbound-queue-target", adaptive.DefaultQueueTarget, "the longest a request waits for an inbound slot before 503 + Retry-After; 0: none waits (rejected at once)")
	fs.IntVar(&l.outbound, "outbound", 0, fmt.Sprintf("supplier calls in flight at once, every supplier together: with --no-adaptive the fixed limit (0: %d); with adaptive limits a cap over them (0: 3 x (--limit-max + 16), every supplier's limit and its line)", quoteflow.DefaultOutbound))
	fs.IntVar(&l.inbound, "inbound", 0, fmt.Sprintf("requests (quotes and baskets) in progress at once: with adaptive limits the most the inbound limit (adaptive too) grows to (0: --limit-max); with --no-adaptive the fixed limit (0: %d)", quoteflow.DefaultInbound))
	fs.IntVar(&l.inboundQueue, "inbound-queue", adaptive.DefaultQueueMax, "requests that may wait for an inbound slot at once (single quotes push baskets out)")
	return l
}

// check refuses a bad setting as a usage error (exit 2).
func (l *limitFlags) check(stderr io.Writer) (int, bool) {
	var err error
	switch {
	case l.lo < 1 || l.hi > 1000 || l.lo > l.hi || l.initial < l.lo || l.initial > l.hi:
		err = fmt.Errorf("--limit-min %d, --limit-initial %d, --limit-max %d: want 1 <= min <= initial <= max <= 1000", l.lo, l.initial, l.hi)
	case l.supplierTarget <= 0 || l.supplierTarget > maxTiming:
		err = fmt.Errorf("--limit-queue-target %s: want 1ms up to %s", l.supplierTarget, maxTiming)
	case l.inboundTarget < 0 || l.inboundTarget > maxTiming:
		err = fmt.Errorf("--inbound-queue-target %s: want 0 (no line) up to %s", l.inboundTarget, maxTiming)
	case l.outbound < 0 || l.outbound > 10000:
		err = fmt.Errorf("--outbound %d: want 0 (the default) to 10000", l.outbound)
	case l.inbound < 0 || l.inbound > 10000:
		err = fmt.Errorf("--inbound %d: want 0 (the default) to 10000", l.inbound)
	case l.inboundQueue < 1 || l.inboundQueue > 100000:
		err = fmt.Errorf("--inbound-queue %d: want 1 to 100000", l.inboundQueue)
	}
	if err != nil {
		fmt.Fprintln(stderr, "quoteflow: "+strings.TrimPrefix(err.Error(), "adaptive: "))
		return 2, false
	}
	return 0, true
}

// apply sets c's limits.
func (l *limitFlags) apply(c *quoteflow.Config) {
	if l == nil {
		return
	}
	c.OutboundLimit = l.outbound
	c.InboundLimit = l.inbound
	if !l.off {
		c.Adaptive = &adaptive.Config{Initial: l.initial, Min: l.lo, Max: l.hi}
		c.SupplierQueue = adaptive.Queue{Target: l.supplierTarget}
	}
	if l.inboundTarget > 0 {
		c.InboundQueue = &adaptive.Queue{Max: l.inboundQueue, Target: l.inboundTarget}
	}
}

// describe is the start line's word on the limits.
func (l *limitFlags) describe() string {
	if l == nil {
		return ""
	}
	out := "limits: fixed (--no-adaptive)"
	inbound := fmt.Sprintf("%d requests at once", cmp.Or(l.inbound, quoteflow.DefaultInbound))
	if !l.off {
		out = fmt.Sprintf("limits: adaptive per supplier, %d to %d from %d, calls wait up to %s", l.lo, l.hi, l.initial, l.supplierTarget)
		inbound = fmt.Sprintf("requests at once: adaptive too, up to %d", cmp.Or(l.inbound, l.hi))
	}
	if l.inboundTarget > 0 {
		return out + fmt.Sprintf("; %s, the next wait up to %s for a slot (%d at most, quotes first)", inbound, l.inboundTarget, l.inboundQueue)
	}
	return out + fmt.Sprintf("; %s, the next rejected at once", inbound)
}

// outboundLimit is the local outbound limit the service will have.
func (l *limitFlags) outboundLimit() int {
	switch {
	case l == nil:
		return quoteflow.DefaultOutbound
	case l.outbound > 0:
		return l.outbound
	case !l.off:
		return 3 * (l.hi + adaptive.DefaultQueueMax)
	}
	return quoteflow.DefaultOutbound
}

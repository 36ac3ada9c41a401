package budget

import (
	"fmt"
	"slices"
	"strings"
)

// Timing tolerances, in ms. A limit never fires early by more than early; a
// process may take up to slack longer than what it waited for (start-up and
// scheduling on a busy two-core machine). A run that misses a bound by less
// than loadAllowance may be the machine's fault: it is run again, and is
// inconclusive when it misses again on a busy machine. A miss larger than
// that, like a wrong phase or a number no clock could have measured, is the
// tool's: every broken variant misses by more.
const (
	early         = 30.0
	slack         = 700.0
	loadAllowance = 2000.0
	// rounding: a tool rounds its milliseconds (to 0.1 or to whole ms);
	// a reported time may exceed what the grader measured by this much.
	rounding = 2.0
	// stampLate: how much later than the bytes the partner (a handler in
	// the lab's own process) may stamp a call's arrival on a busy machine.
	stampLate = 100.0
)

// passExcuse is the most of a tool's CPU wait (starvedMS) that widens a
// bound the tool must meet to pass. A tool can make its own threads wait
// (a burst of spinning threads, a child process spinning) without using
// enough CPU itself to be judged as computing, so an unbounded excuse would
// let it lie by as much as it waited (a broken variant that spun eight
// threads passed fanout_shrinking with budgets 60 ms too large). A longer
// wait only makes the miss a timing miss, run again alone.
const passExcuse = 25.0

// excuse is the part of r's CPU wait that widens a bound it must meet to
// pass.
func excuse(r run) float64 { return min(max(r.starvedMS, 0), passExcuse) }

// allowFor is how far a timing bound on run r may be missed before the miss
// is the tool's: loadAllowance, plus the time the process's threads waited
// for a CPU (a process held back that long by the machine was late by that
// much through no fault of its own; a tool that sleeps or waits too long is
// not runnable while it waits, so this never excuses one).
func allowFor(r run) float64 {
	return loadAllowance + max(r.starvedMS, 0)
}

// A verdict collects the conditions of one property that failed: one
// clause each for the sentence, and whether any of them is more than a
// timing bound missed by a little.
type verdict struct {
	buts []string
	hard bool
}

// need records but when ok is false: a failure no load can explain.
func (v *verdict) need(ok bool, but string, args ...any) bool {
	if !ok {
		v.add(fmt.Sprintf(but, args...))
		v.hard = true
	}
	return ok
}

// within records but when measured exceeds bound. A miss by no more than
// allowance is a timing miss (the machine may be to blame); a larger one
// is a failure.
func (v *verdict) within(measured, bound, allowance float64, but string, args ...any) bool {
	if measured <= bound {
		return true
	}
	v.add(fmt.Sprintf(but, args...))
	if measured > bound+allowance {
		v.hard = true
	}
	return false
}

// slow records but as a timing miss: the scenario could not test what it
// meant to because the machine was slow (a correct tool under load may do
// this), so the property is run again.
func (v *verdict) slow(but string, args ...any) {
	v.add(fmt.Sprintf(but, args...))
}

func (v *verdict) add(but string) {
	if !slices.Contains(v.buts, but) {
		v.buts = append(v.buts, but)
	}
}

func (v *verdict) ok() bool { return len(v.buts) == 0 }

// judge records the verdict on property name, with the observations as
// its detail.
func (g *grader) judge(name string, v verdict, format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := finding{ok: v.ok(), detail: fmt.Sprintf(format, args...)}
	if !f.ok {
		f.but = strings.Join(v.buts, "; and ")
		f.timed = !v.hard
	}
	g.findings[name] = f
}

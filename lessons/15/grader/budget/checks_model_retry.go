package budget

import (
	"context"
	"fmt"
	"math"
	"slices"
)

// capOf is the cap of wait k (0-based): base·2^k.
func capOf(base float64, k int) float64 { return base * math.Pow(2, float64(k)) }

// lateAllowance is how much later than planned a run's measured waits may
// be, together: the contract's 25 ms each, plus the time the process's
// threads waited for a CPU (no timer of it can be later than that). Where
// that time cannot be measured, -1: a miss is then judged as timing.
func lateAllowance(r run, waits int) float64 {
	if r.starvedMS < 0 {
		return -1
	}
	return capLateness*float64(waits) + r.starvedMS
}

// passLate is how much later than planned a run's measured waits may be,
// together, and pass: the contract's 25 ms each, plus at most passExcuse of
// the CPU wait. Later, up to lateAllowance, is a timing miss (run again);
// later still, no late timer explains it.
func passLate(r run, waits int) float64 {
	return capLateness*float64(waits) + excuse(r)
}

// overCaps is how far a run's waits went over their caps beyond the
// contract's 25 ms each, summed.
func overCaps(waits []float64, base float64) float64 {
	over := 0.0
	for k, w := range waits {
		over += max(w-capOf(base, k)-capLateness, 0)
	}
	return over
}

// modelRetry compares every field of one retry run with the model: the
// partner's log says how many attempts there were and how each ended.
func modelRetry(m *model, x *retried) {
	j, o, wall := x.job, x.out, x.run.wallMS()
	calls := x.log.Calls
	budget := float64(j.budgetMS)
	floor := max(float64(j.minMS), 1)
	least := 1
	if floor > budget {
		least = 0 // no attempt may start: --min-ms is above the whole budget
	}
	m.need("attempts", o.Attempts >= least && o.Attempts <= j.attempts, "is %d for --attempts %d and --min-ms %d of a %d ms budget", o.Attempts, j.attempts, j.minMS, j.budgetMS)
	if j.partner() {
		m.need("attempts", o.Attempts == len(calls), "is %d, the partner received %d", o.Attempts, len(calls))
	}
	if j.sure && o.StoppedReason == j.expect {
		m.need("attempts", o.Attempts == j.attemptsWant, "is %d with stopped_reason %q, want %d (%s)", o.Attempts, o.StoppedReason, j.attemptsWant, j.why())
	}
	lastOK := len(calls) > 0 && calls[len(calls)-1].Status/100 == 2
	if j.partner() {
		m.need("ok", !o.OK || lastOK, "is true, but the partner's last answer was not a success")
	} else {
		m.need("ok", !o.OK, "is true for %s", j.target())
	}
	switch o.StoppedReason {
	case "ok":
		m.need("stopped_reason", o.OK, "is ok for a run that did not succeed")
	case "attempts":
		// A 4xx may be taken for final (lesson 14 retries transient
		// failures only): the contract names no other reason for it.
		final := j.code/100 == 4 && o.Attempts >= 1
		m.need("stopped_reason", !o.OK && (o.Attempts == j.attempts || final), "is attempts after %d of %d attempts (ok %v)", o.Attempts, j.attempts, o.OK)
	case "budget":
		m.need("stopped_reason", !o.OK, "is budget for a run that succeeded")
		if j.partner() && lastOK && !o.OK {
			m.saw("stopped_reason", "the last answer was cut by the budget")
		}
	default:
		m.need("stopped_reason", false, "is %q, want ok, attempts or budget", o.StoppedReason)
	}
	if j.partner() && lastOK && !o.OK {
		// Only the budget can cut a call the partner answered well. When
		// that call was the last attempt, "attempts" is true as well; the
		// run then lasted its whole budget (the call was read until the
		// budget ran out), where a tool that took the success for a failure
		// stops at once.
		lastCut := o.StoppedReason == "attempts" && o.Attempts == j.attempts && wall >= budget-rounding
		m.need("ok", o.StoppedReason == "budget" || lastCut, "is false after the partner's success, which only the budget may cut (stopped_reason %q after %.0f ms of a %.0f ms budget)", o.StoppedReason, wall, budget)
	}
	if want := j.expect; want != "" && o.StoppedReason != want {
		// A run stops with budget only once the budget left, less the next
		// wait (at most its cap), is under the floor: a run that spent less
		// than that did not run out of budget, however slow the machine.
		spent := budget - floor - capOf(j.base(), max(o.Attempts-1, 0)) - capLateness
		switch {
		case o.StoppedReason == "budget" && wall < spent-rounding:
			m.need("stopped_reason", false, "is budget after %.0f ms of a %.0f ms budget (--min-ms %d, next cap %.0f ms): nothing ran it out; want %q (%s)", wall, budget, j.minMS, capOf(j.base(), max(o.Attempts-1, 0)), want, j.why())
		case o.StoppedReason == "budget":
			m.slow("stopped_reason", "is budget where the run's budget leaves it %q: the machine made it slower", want)
		default:
			m.need("stopped_reason", false, "is %q, want %q", o.StoppedReason, want)
		}
	}

	// waits_ms: one before each attempt but the first; a late wake-up may
	// leave less than the floor after a wait, so a last wait with no attempt
	// after it is a timing miss, never more.
	switch n := len(o.WaitsMS); {
	case n == o.Attempts-1 || o.Attempts == 0 && n == 0:
		m.seen["waits_ms"] = true
	case n == o.Attempts && o.StoppedReason == "budget":
		m.slow("waits_ms", "has %d waits for %d attempts: a wait that no attempt follows", n, o.Attempts)
	default:
		m.need("waits_ms", false, "has %d waits for %d attempts, want one fewer", n, o.Attempts)
	}
	base := j.base()
	for k, w := range o.WaitsMS {
		m.need("waits_ms", w >= 0, "has a negative wait %.1f", w)
		if k+1 < len(calls) {
			gap := calls[k+1].ArrivalMs - calls[k].ArrivalMs - j.work()
			if calls[k].End != "done" {
				gap = calls[k+1].ArrivalMs - calls[k].ArrivalMs
			}
			m.need("waits_ms", w <= gap+rounding, "has wait %d of %.1f ms, but the partner saw %.1f ms between the end of attempt %d and the next", k+1, w, gap, k+1)
		}
	}
	if over := overCaps(o.WaitsMS, base); over > 0 {
		allow := lateAllowance(x.run, len(o.WaitsMS))
		switch {
		case allow < 0:
			m.slow("waits_ms", "went %.0f ms over the caps %s (+%.0f ms each)", over, capsText(base, len(o.WaitsMS)), capLateness)
		case over > passLate(x.run, len(o.WaitsMS)) && over <= allow:
			m.slow("waits_ms", "went %.0f ms over the caps %s (+%.0f ms each, and at most %.0f ms of CPU wait)", over, capsText(base, len(o.WaitsMS)), capLateness, passExcuse)
		case over > allow:
			m.need("waits_ms", false, "%v went %.0f ms over the caps %s (+%.0f ms each), more than the %.0f ms its threads waited for a CPU", o.WaitsMS, over, capsText(base, len(o.WaitsMS)), capLateness, x.run.starvedMS)
		}
	}
	switch but, timed := unpaid(x); {
	case but != "" && timed:
		m.slow("waits_ms", "%s", but)
	case but != "":
		m.need("waits_ms", false, "%s", but)
	}
	answered := 0.0
	for k := 0; k < len(o.WaitsMS) && k < len(calls); k++ {
		if calls[k].End == "done" {
			answered += j.work()
		}
	}

	el := o.ElapsedMS
	m.need("elapsed_ms", el <= wall+rounding, "is %.1f, more than the %.0f ms the process lived", el, wall)
	if len(calls) >= 2 {
		span := calls[len(calls)-2].ArrivalMs - calls[0].ArrivalMs + j.work()
		m.need("elapsed_ms", el >= span-rounding, "is %.1f, less than the %.0f ms from the first attempt's arrival to the answer before the last", el, span)
	}
	atLeast := sum(o.WaitsMS)
	switch {
	case j.hole:
		atLeast += float64(max(o.Attempts-1, 0)) * (min(secondsOr(j.connect, 1), budget) - early)
	case j.partner():
		atLeast += answered
	}
	m.need("elapsed_ms", el >= atLeast-rounding-early, "is %.1f, less than its waits and the attempts before them (%.0f ms)", el, atLeast)
	m.within("elapsed_ms", el, budget+slack, "is %.1f for a budget of %.0f ms", el, budget)
}

func capsText(base float64, n int) string {
	var caps []float64
	for k := range n {
		caps = append(caps, capOf(base, k))
	}
	return fmt.Sprint(caps)
}

// checkRetryModel compares every retry run with the model.
func (g *grader) checkRetryModel(ctx context.Context, res map[string]*retried) {
	var v verdict
	per := map[string]verdict{}
	jobs := map[string]retryJob{}
	var unseen, names []string
	for _, name := range sortedNames(res) {
		x := res[name]
		names = append(names, name)
		var one verdict
		m := newModel(&one, x.job.String())
		modelRetry(m, x)
		unseen = append(unseen, checkFields("retry", m)...)
		per[name] = one
		jobs[name] = x.job
		v.absorb(one)
	}
	small, drawn := shrunk("retry_model", jobs, per, retryJob.smaller, func(j retryJob) verdict { return g.retryOnce(ctx, j) })
	slices.Sort(unseen)
	g.modelJudge("retry_model", "retry", v, names, slices.Compact(unseen), g.seed, small, drawn)
}

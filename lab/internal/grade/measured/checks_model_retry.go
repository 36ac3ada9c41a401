package measured

import (
	"fmt"
	"math"
	"math/rand/v2"
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

// randomRetryJobs draws n retry runs.
func randomRetryJobs(r *rand.Rand, n int) map[string]retryJob {
	out := map[string]retryJob{}
	for i := range n {
		j := retryJob{
			callMS:   r.IntN(150),
			fail:     []int{0, 1, 2, 100}[r.IntN(4)],
			budgetMS: 500 + r.IntN(1300),
			attempts: 1 + r.IntN(5),
			baseMS:   10 + r.IntN(150),
		}
		if r.IntN(2) == 0 {
			j.minMS = 20 + r.IntN(150)
		}
		out[fmt.Sprintf("random%d", i)] = j
	}
	return out
}

// modelRetry compares every field of one retry run with the model: the
// partner's log says how many attempts there were and how each ended.
func modelRetry(m *model, x *retried) {
	j, o, wall := x.job, x.out, x.run.wallMS()
	calls := x.log.Calls
	budget := float64(j.budgetMS)
	m.need("attempts", o.Attempts >= 1 && o.Attempts <= j.attempts, "is %d for --attempts %d", o.Attempts, j.attempts)
	if !j.hole {
		m.need("attempts", o.Attempts == len(calls), "is %d, the partner received %d", o.Attempts, len(calls))
	}
	lastOK := len(calls) > 0 && calls[len(calls)-1].Status/100 == 2
	if j.hole {
		m.need("ok", !o.OK, "is true for the blackhole")
	} else {
		m.need("ok", !o.OK || lastOK, "is true, but the partner's last answer was not a success")
	}
	switch o.StoppedReason {
	case "ok":
		m.need("stopped_reason", o.OK, "is ok for a run that did not succeed")
	case "attempts":
		m.need("stopped_reason", !o.OK && o.Attempts == j.attempts, "is attempts after %d of %d attempts (ok %v)", o.Attempts, j.attempts, o.OK)
	case "budget":
		m.need("stopped_reason", !o.OK, "is budget for a run that succeeded")
		if !j.hole && lastOK && !o.OK {
			m.saw("stopped_reason", "the last answer was cut by the budget")
		}
	default:
		m.need("stopped_reason", false, "is %q, want ok, attempts or budget", o.StoppedReason)
	}
	if !j.hole && lastOK && !o.OK {
		// Only the budget can cut a call the partner answered well. When
		// that call was the last attempt, "attempts" is true as well; the
		// run then lasted its whole budget (the call was read until the
		// budget ran out), where a tool that took the success for a failure
		// stops at once.
		lastCut := o.StoppedReason == "attempts" && o.Attempts == j.attempts && wall >= budget-rounding
		m.need("ok", o.StoppedReason == "budget" || lastCut, "is false after the partner's success, which only the budget may cut (stopped_reason %q after %.0f ms of a %.0f ms budget)", o.StoppedReason, wall, budget)
	}
	if want := j.expect; want != "" && o.StoppedReason != want {
		if o.StoppedReason == "budget" {
			m.slow("stopped_reason", "is budget where the run's budget leaves it %q: the machine made it slower", want)
		} else {
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
			gap := calls[k+1].ArrivalMs - calls[k].ArrivalMs - float64(j.callMS)
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
	if but := unpaid(x); but != "" {
		m.need("waits_ms", false, "%s", but)
	}
	answered := 0.0
	for k := 0; k < len(o.WaitsMS) && k < len(calls); k++ {
		if calls[k].End == "done" {
			answered += float64(j.callMS)
		}
	}

	el := o.ElapsedMS
	m.need("elapsed_ms", el <= wall+rounding, "is %.1f, more than the %.0f ms the process lived", el, wall)
	if len(calls) >= 2 {
		span := calls[len(calls)-2].ArrivalMs - calls[0].ArrivalMs + float64(j.callMS)
		m.need("elapsed_ms", el >= span-rounding, "is %.1f, less than the %.0f ms from the first attempt's arrival to the answer before the last", el, span)
	}
	least := sum(o.WaitsMS)
	if j.hole {
		least += float64(max(o.Attempts-1, 0)) * (min(secondsOr(j.connect, 1), budget) - early)
	} else {
		least += answered
	}
	m.need("elapsed_ms", el >= least-rounding-early, "is %.1f, less than its waits and the attempts before them (%.0f ms)", el, least)
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
func (g *grader) checkRetryModel(res map[string]*retried, seed uint64) {
	var v verdict
	var unseen, names []string
	for _, name := range sortedNames(res) {
		x := res[name]
		names = append(names, name)
		m := newModel(&v, x.job.String())
		modelRetry(m, x)
		unseen = append(unseen, checkFields("retry", m)...)
	}
	slices.Sort(unseen)
	g.modelJudge("retry_model", "retry", v, names, slices.Compact(unseen), seed)
}

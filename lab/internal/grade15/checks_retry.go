package grade15

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

type retryOut struct {
	OK            bool      `json:"ok"`
	Attempts      int       `json:"attempts"`
	ElapsedMS     float64   `json:"elapsed_ms"`
	WaitsMS       []float64 `json:"waits_ms"`
	StoppedReason string    `json:"stopped_reason"`
}

// retryTimeout bounds each retry run.
const retryTimeout = 7 * time.Second

var retryKeys = []string{"ok", "attempts", "elapsed_ms", "waits_ms", "stopped_reason"}

// A retry scenario: a partner call that takes callMS and fails fail times.
type retryJob struct {
	callMS, fail, budgetMS, attempts, baseMS, minMS int
}

func (j retryJob) args(base, key string) []string {
	return []string{
		"--url", fmt.Sprintf("%s/call?ms=%d&fail=%d&key=%s", base, j.callMS, j.fail, key),
		"--budget-ms", fmt.Sprint(j.budgetMS), "--attempts", fmt.Sprint(j.attempts),
		"--base-ms", fmt.Sprint(j.baseMS), "--min-ms", fmt.Sprint(j.minMS), "--connect", "1",
	}
}

// The retry scenarios: a call that recovers, one that runs out of attempts,
// and one that always fails with attempts to spare, so only the budget stops it.
var retryJobs = map[string]retryJob{
	"recovers": {callMS: 20, fail: 1, budgetMS: 3000, attempts: 3, baseMS: 100},
	"attempts": {callMS: 20, fail: 100, budgetMS: 5000, attempts: 3, baseMS: 50},
	"budget":   {callMS: 100, fail: 100, budgetMS: 1000, attempts: 30, baseMS: 100, minMS: 100},
}

func (g *grader) checkRetry(ctx context.Context) {
	jobs := map[string][]string{}
	for name, j := range retryJobs {
		jobs[name] = j.args(g.lab.base, nonce()+"-"+name)
	}
	all := []string{"retry_json", "retry_recovers", "retry_attempts", "retry_wait_caps", "retry_waits_charged", "retry_waits_real", "retry_jitter"}
	// A correct retry ends within its budget (5 s at most here); one whose
	// waits are not charged can sleep for minutes: cut it short.
	runs := g.runAll(ctx, "retry", retryTimeout, jobs)
	outs := map[string]retryOut{}
	if r := runs["budget"]; r.killed && runs["recovers"].problem == "" && runs["attempts"].problem == "" {
		// Only the run that the budget alone can stop went on: its waits were not paid from it.
		g.set("retry_waits_charged", false, "/call of 100 ms always failing, budget 1000 ms, --attempts 30: still running after %v, killed", retryTimeout)
		delete(runs, "budget")
		all = slices.DeleteFunc(all, func(n string) bool { return n == "retry_waits_charged" })
	}
	for name, r := range runs {
		if r.problem != "" {
			g.failAllOf(r.problem, all...)
			return
		}
		var o retryOut
		if err := r.decode(&o, retryKeys...); err != nil {
			g.failAllOf("retry "+name+": "+err.Error(), all...)
			return
		}
		outs[name] = o
	}
	g.set("retry_json", true, "")

	o := outs["recovers"]
	g.set("retry_recovers", o.OK && o.Attempts == 2 && len(o.WaitsMS) == 1 && o.StoppedReason == "ok",
		"/call failing once: ok %v, attempts %d, waits %v, stopped_reason %q", o.OK, o.Attempts, o.WaitsMS, o.StoppedReason)

	o = outs["attempts"]
	g.set("retry_attempts", !o.OK && o.Attempts == 3 && len(o.WaitsMS) == 2 && o.StoppedReason == "attempts",
		"/call always failing, --attempts 3, budget 5000 ms: ok %v, attempts %d, waits %v, stopped_reason %q", o.OK, o.Attempts, o.WaitsMS, o.StoppedReason)

	g.checkWaitCaps(outs)

	if o, ok := outs["budget"]; ok {
		r, j := runs["budget"], retryJobs["budget"]
		limit := float64(j.budgetMS) + slack
		g.set("retry_waits_charged", !o.OK && o.StoppedReason == "budget" && r.wallMS() <= limit,
			"/call of 100 ms always failing, budget 1000 ms, --attempts 30: stopped_reason %q after %d attempts, waits %v, the run took %.0f ms (want budget, at most %.0f ms)",
			o.StoppedReason, o.Attempts, o.WaitsMS, r.wallMS(), limit)
	}

	var short []string
	for name, o := range outs {
		if name == "recovers" {
			continue
		}
		r, j := runs[name], retryJobs[name]
		least := sum(o.WaitsMS) + float64(o.Attempts*j.callMS)
		if r.wallMS() < least-early {
			short = append(short, fmt.Sprintf("%s: %d calls of %d ms and waits %v need %.0f ms, the run took %.0f ms", name, o.Attempts, j.callMS, o.WaitsMS, least, r.wallMS()))
		}
	}
	g.set("retry_waits_real", len(short) == 0, "%s", joinOr(short, "every run lasted at least its calls plus its waits"))
}

// checkWaitCaps checks every wait against its cap and that waits are random.
func (g *grader) checkWaitCaps(outs map[string]retryOut) {
	var over []string
	waits, atCap := 0, 0
	distinct := map[float64]bool{}
	for name, o := range outs {
		base := float64(retryJobs[name].baseMS)
		for i, w := range o.WaitsMS {
			ceiling := base * math.Pow(2, float64(i))
			waits++
			distinct[w] = true
			if math.Abs(w-ceiling) < 1 {
				atCap++
			}
			if w < 0 || w > ceiling+1 {
				over = append(over, fmt.Sprintf("%s: wait %d is %.1f ms, cap %.0f ms", name, i+1, w, ceiling))
			}
		}
	}
	g.set("retry_wait_caps", len(over) == 0, "%s", joinOr(over, fmt.Sprintf("%d waits, each within its cap", waits)))
	random := waits < 2 || (atCap < waits && len(distinct) > 1)
	g.set("retry_jitter", random, "%d waits, %d exactly at their cap, %d distinct values", waits, atCap, len(distinct))
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

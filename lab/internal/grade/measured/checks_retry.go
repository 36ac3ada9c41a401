package measured

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/provider"
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

var (
	retryKeys  = []string{"ok", "attempts", "elapsed_ms", "waits_ms", "stopped_reason"}
	retryProps = []string{"retry_json", "retry_recovers", "retry_attempts", "retry_wait_caps", "retry_waits_charged",
		"retry_waits_real", "retry_jitter", "retry_floor", "retry_read_left", "retry_elapsed_honest"}
)

// A retry scenario: a partner call that takes callMS and fails fail times.
// A zero baseMS or minMS is left out of the command: the tool's default
// (--base-ms 100, --min-ms 0) applies.
type retryJob struct {
	callMS, fail, budgetMS, attempts, baseMS, minMS int
}

// base is the --base-ms the run used.
func (j retryJob) base() float64 {
	if j.baseMS == 0 {
		return 100 // the contract's default
	}
	return float64(j.baseMS)
}

func (j retryJob) args(base, key string) []string {
	args := []string{
		"--url", fmt.Sprintf("%s/call?ms=%d&fail=%d&key=%s", base, j.callMS, j.fail, key),
		"--budget-ms", fmt.Sprint(j.budgetMS), "--attempts", fmt.Sprint(j.attempts), "--connect", "1",
	}
	if j.baseMS != 0 {
		args = append(args, "--base-ms", fmt.Sprint(j.baseMS))
	}
	if j.minMS != 0 {
		args = append(args, "--min-ms", fmt.Sprint(j.minMS))
	}
	return args
}

// The retry scenarios: a call that recovers; one that runs out of attempts
// (with the default --base-ms); one that always fails with attempts to
// spare, so only the budget stops it; one whose 300 ms calls meet a 350 ms
// floor; one whose second attempt must be cut at the budget left.
var retryJobs = map[string]retryJob{
	"recovers": {callMS: 20, fail: 1, budgetMS: 3000, attempts: 3, baseMS: 100},
	"attempts": {callMS: 20, fail: 100, budgetMS: 5000, attempts: 3},
	"budget":   {callMS: 100, fail: 100, budgetMS: 1000, attempts: 30, baseMS: 100, minMS: 100},
	"floor":    {callMS: 100, fail: 100, budgetMS: 1000, attempts: 20, baseMS: 1, minMS: 700},
	"readleft": {callMS: 700, fail: 1, budgetMS: 1000, attempts: 3, baseMS: 1},
}

// The jitter sample: jitterRuns clients that fail together, jitterParallel
// at a time, each waiting twice (caps 200 and 400 ms) before giving up.
const (
	jitterRuns     = 30
	jitterParallel = 10
	jitterMinWaits = 50
)

var jitterJob = retryJob{callMS: 0, fail: 100, budgetMS: 5000, attempts: 3, baseMS: 200}

// A retried run: the scenario, the tool's run and output, and what the
// partner recorded for its key.
type retried struct {
	job retryJob
	run run
	out retryOut
	log provider.PartnerLog
}

func (g *grader) checkRetry(ctx context.Context) {
	keys := map[string]string{}
	jobs := map[string][]string{}
	all := map[string]retryJob{}
	for name, j := range retryJobs {
		keys[name] = nonce() + "-" + name
		jobs[name] = j.args(g.lab.base, keys[name])
		all[name] = j
	}
	for i := range jitterRuns {
		name := fmt.Sprintf("jitter%02d", i)
		keys[name] = nonce() + "-" + name
		jobs[name] = jitterJob.args(g.lab.base, keys[name])
		all[name] = jitterJob
	}
	props := slices.Clone(retryProps)
	// A correct retry ends within its budget (5 s at most here); one whose
	// waits are not charged can sleep for minutes: cut it short.
	runs := g.runLimited(ctx, "retry", retryTimeout, jobs, jitterParallel+len(retryJobs))
	if r := runs["budget"]; r.killed && runs["recovers"].problem == "" && runs["attempts"].problem == "" {
		// Only the run that the budget alone can stop went on: its waits were not paid from it.
		g.set("retry_waits_charged", false, "/call of 100 ms always failing, budget 1000 ms, --attempts 30: still running after %v, killed", retryTimeout)
		delete(runs, "budget")
		props = slices.DeleteFunc(props, func(n string) bool { return n == "retry_waits_charged" })
	}
	res := map[string]*retried{}
	for name, r := range runs {
		if r.problem != "" {
			g.failAllOf(r.problem, props...)
			return
		}
		var o retryOut
		if err := r.decode(&o, retryKeys...); err != nil {
			g.failAllOf("retry "+name+": "+err.Error(), props...)
			return
		}
		log, err := g.lab.settle(ctx, keys[name])
		if err != nil {
			g.failAllOf(err.Error(), props...)
			return
		}
		res[name] = &retried{job: all[name], run: r, out: o, log: log}
	}
	g.set("retry_json", true, "")

	x := res["recovers"]
	o := x.out
	g.set("retry_recovers", o.OK && o.Attempts == 2 && len(o.WaitsMS) == 1 && o.StoppedReason == "ok" && len(x.log.Calls) == 2,
		"/call failing once: ok %v, attempts %d, waits %v, stopped_reason %q; the partner received %d calls", o.OK, o.Attempts, o.WaitsMS, o.StoppedReason, len(x.log.Calls))

	x = res["attempts"]
	o = x.out
	g.set("retry_attempts", !o.OK && o.Attempts == 3 && len(o.WaitsMS) == 2 && o.StoppedReason == "attempts" && len(x.log.Calls) == 3,
		"/call always failing, --attempts 3, budget 5000 ms, --base-ms left to its default: ok %v, attempts %d, waits %v, stopped_reason %q; the partner received %d calls",
		o.OK, o.Attempts, o.WaitsMS, o.StoppedReason, len(x.log.Calls))

	g.checkWaitCaps(res)
	g.checkJitter(res)

	if x, ok := res["budget"]; ok {
		o, j := x.out, x.job
		limit := float64(j.budgetMS) + slack
		var v verdict
		v.need(!o.OK && o.StoppedReason == "budget", "it stopped with stopped_reason %q (ok %v)", o.StoppedReason, o.OK)
		v.within(x.run.wallMS(), limit, loadAllowance, "the run went past its budget")
		g.judge("retry_waits_charged", v,
			"/call of 100 ms always failing, budget 1000 ms, --attempts 30: stopped_reason %q after %d attempts, waits %v, the run took %.0f ms (want budget, at most %.0f ms)",
			o.StoppedReason, o.Attempts, o.WaitsMS, x.run.wallMS(), limit)
	}
	g.checkWaitsReal(res)
	g.checkRetryFloor(res["floor"])
	g.checkReadLeft(res["readleft"])
	g.checkRetryTimes(res)
}

// runLimited is runAll with at most limit runs at a time.
func (g *grader) runLimited(ctx context.Context, tool string, within time.Duration, jobs map[string][]string, limit int) map[string]run {
	out := make(map[string]run, len(jobs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, limit)
	names := make([]string, 0, len(jobs))
	for name := range jobs {
		names = append(names, name)
	}
	sort.Strings(names) // the scenarios first, then the jitter sample
	for _, name := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			r := g.execWithin(ctx, within, tool, jobs[name]...)
			mu.Lock()
			out[name] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// Waits may exceed their cap by the lateness of a measured sleep.
const (
	capLateness = 25.0 // ms
	// capWayOver: this many waits above 1.5 × cap + capLateness cannot be
	// lateness: the caps are wrong (a doubled cap puts a fifth of the
	// waits there).
	capWayOver = 4
)

// checkWaitCaps checks every wait against its cap.
func (g *grader) checkWaitCaps(res map[string]*retried) {
	var v verdict
	var over []string
	waits, wayOver := 0, 0
	for _, name := range sortedNames(res) {
		x := res[name]
		for i, w := range x.out.WaitsMS {
			ceiling := x.job.base() * math.Pow(2, float64(i))
			waits++
			if w < 0 || w > ceiling+capLateness {
				over = append(over, fmt.Sprintf("%s: wait %d is %.1f ms, cap %.0f ms", name, i+1, w, ceiling))
			}
			if w > 1.5*ceiling+capLateness {
				wayOver++
			}
			if w < 0 {
				wayOver += capWayOver // no clock runs backwards
			}
		}
	}
	if len(over) > 0 {
		v.add("a wait was larger than its cap")
		v.hard = wayOver >= capWayOver
	}
	g.judge("retry_wait_caps", v, "%s", joinOr(shortList(over, 6), fmt.Sprintf("%d waits, each within its cap (+%.0f ms)", waits, capLateness)))
}

// checkJitter is the statistical test of full jitter on the waits of
// jitterRuns clients that failed together. Each reported wait is divided
// by its cap: under full jitter that fraction is uniform on [0, 1], so at
// least one of N waits lies below 0.3 and at least one above 0.7. A
// correct tool fails this with probability at most 0.7^N + 0.7^N (a union
// bound): 1.0e-9 for N = 60, 2.0e-8 for N = 50, the fewest the test accepts.
// A tool that reports a measured sleep a timer made up to 5 % of its cap
// late (10 ms here: the caps are 200 and 400 ms) still lands below 0.3 with
// probability 0.25: 0.75^N + 0.7^N = 3.2e-8 for N = 60, 5.7e-7 for N = 50.
// A fixed wait (cap/2, the cap), or "equal jitter" in [cap/2, cap], never
// lands in both. The first waits of the clients must also differ (at least
// 15 distinct values of 30): with 1 ms resolution and a 200 ms cap, a
// correct tool gives fewer with probability 4e-15 — clients seeded alike
// come back together, which is what jitter is for.
func (g *grader) checkJitter(res map[string]*retried) {
	var v verdict
	n, low, high := 0, 0, 0
	nearLow := false
	firsts := map[float64]bool{}
	for _, name := range sortedNames(res) {
		if !strings.HasPrefix(name, "jitter") {
			continue
		}
		x := res[name]
		for i, w := range x.out.WaitsMS {
			ceiling := x.job.base() * math.Pow(2, float64(i))
			u := w / ceiling
			n++
			switch {
			case u < 0.3:
				low++
			case u > 0.7:
				high++
			}
			if u >= 0.3 && w < 0.3*ceiling+capLateness {
				nearLow = true
			}
			if i == 0 {
				firsts[math.Round(w*10)/10] = true
			}
		}
	}
	if v.need(n >= jitterMinWaits, "only %d waits came back from %d clients, too few to judge", n, jitterRuns) {
		if low == 0 {
			v.add(fmt.Sprintf("none of %d waits was below 0.3 of its cap", n))
			v.hard = v.hard || !nearLow // a late timer may have pushed one just over
		}
		v.need(high > 0, "none of %d waits was above 0.7 of its cap", n)
		v.need(len(firsts) >= 15, "the %d clients' first waits took only %d distinct values, so clients that failed together come back together", jitterRuns, len(firsts))
	}
	g.judge("retry_jitter", v, "%d clients failing together (caps 200, 400 ms): %d waits, %d below 0.3 of their cap, %d above 0.7, %d distinct first waits",
		jitterRuns, n, low, high, len(firsts))
}

// checkWaitsReal checks each reported wait against the partner's clock: the
// next attempt cannot arrive sooner than the call's own delay plus the wait
// after the previous one arrived. It also checks, by the grader's clock,
// that a run lasted at least its calls plus its waits.
func (g *grader) checkWaitsReal(res map[string]*retried) {
	var v verdict
	var short []string
	for _, name := range sortedNames(res) {
		x := res[name]
		calls, waits := x.log.Calls, x.out.WaitsMS
		for k := 0; k < len(waits) && k+1 < len(calls); k++ {
			gap := calls[k+1].ArrivalMs - calls[k].ArrivalMs - float64(x.job.callMS)
			if !v.need(waits[k] <= gap+rounding, "a reported wait is longer than the time between the attempts the partner received") {
				short = append(short, fmt.Sprintf("%s: wait %d is %.1f ms, the partner saw %.1f ms between the end of attempt %d and the next", name, k+1, waits[k], gap, k+1))
			}
		}
		answered := 0 // attempts the partner answered took its whole delay; a cut one less
		for _, c := range calls {
			if c.End == "done" {
				answered++
			}
		}
		least := sum(waits) + float64(answered*x.job.callMS)
		if !v.need(x.run.wallMS() >= least-early, "the run was shorter than its calls plus its reported waits") {
			short = append(short, fmt.Sprintf("%s: %d answered calls of %d ms and waits %v need %.0f ms, the run took %.0f ms", name, answered, x.job.callMS, waits, least, x.run.wallMS()))
		}
	}
	g.judge("retry_waits_real", v, "%s", joinOr(shortList(short, 4), "every wait fits between the attempts the partner received, and every run lasted at least its calls plus its waits"))
}

// checkRetryFloor: 100 ms calls that always fail, a 1000 ms budget and
// --min-ms 700. An attempt starts only with 700 ms left, so by 300 ms at
// the latest, and each attempt takes at least 100 ms: at most 4 attempts.
// A busy machine only makes attempts slower, so fewer; a tool that ignores
// the floor goes on until the budget is spent: 8 or more on a quiet
// machine, 5 or more even when every call takes twice its time.
func (g *grader) checkRetryFloor(x *retried) {
	o := x.out
	var v verdict
	v.need(len(x.log.Calls) <= 4, "the partner received %d attempts: one started with less than --min-ms 700 left", len(x.log.Calls))
	v.need(o.Attempts == len(x.log.Calls), "retry reports %d attempts, the partner received %d", o.Attempts, len(x.log.Calls))
	v.need(!o.OK && o.StoppedReason == "budget", "it stopped with stopped_reason %q (ok %v), not budget", o.StoppedReason, o.OK)
	v.within(x.run.wallMS(), float64(x.job.budgetMS)+slack, loadAllowance, "the run took %.0f ms for a 1000 ms budget", x.run.wallMS())
	g.judge("retry_floor", v, "/call of 100 ms always failing, budget 1000 ms, --min-ms 700, --attempts 20: %d attempts (the partner received %d), stopped_reason %q, %.0f ms",
		o.Attempts, len(x.log.Calls), o.StoppedReason, x.run.wallMS())
}

// checkReadLeft: a 700 ms call that fails once under a 1000 ms budget. The
// second attempt starts with at most 300 ms left and must be cut there;
// with the whole budget as its read limit it would succeed at 1400 ms.
func (g *grader) checkReadLeft(x *retried) {
	o := x.out
	var v verdict
	// The partner's log shows how each attempt ended, but its "done" is no
	// proof that the tool read the answer (a write into a socket the client
	// has just closed succeeds): the tool's own ok is.
	v.need(!o.OK, "it reports ok true: the second attempt, started with at most 300 ms left, read the partner's 700 ms answer: its read limit was not the budget left")
	v.need(o.StoppedReason == "budget", "it stopped with stopped_reason %q, not budget", o.StoppedReason)
	v.within(x.run.wallMS(), float64(x.job.budgetMS)+slack, loadAllowance, "the run took %.0f ms for a 1000 ms budget", x.run.wallMS())
	ends := []string{}
	for _, c := range x.log.Calls {
		ends = append(ends, fmt.Sprintf("%s %d after %.0f ms", c.End, c.Status, c.DurationMs))
	}
	g.judge("retry_read_left", v, "/call of 700 ms failing once, budget 1000 ms: ok %v, %d attempts, stopped_reason %q, %.0f ms; the partner saw: %s",
		o.OK, o.Attempts, o.StoppedReason, x.run.wallMS(), strings.Join(ends, ", "))
}

// checkRetryTimes compares each run's elapsed_ms with the grader's clock and
// the partner's: at most the process's wall time, at least from the first
// attempt's arrival to the last answer the partner sent.
func (g *grader) checkRetryTimes(res map[string]*retried) {
	var v verdict
	var seen []string
	for _, name := range sortedNames(res) {
		x := res[name]
		el, wall := x.out.ElapsedMS, x.run.wallMS()
		if !strings.HasPrefix(name, "jitter") || name == "jitter00" {
			seen = append(seen, fmt.Sprintf("%s %.1f of %.0f ms", name, el, wall))
		}
		v.need(el <= wall+rounding, "%s reported %.1f ms, more than the %.0f ms its process lived", name, el, wall)
		// The tool lived at least from the first attempt's arrival until it
		// had the answer to the one before the last (it sent the last one
		// after): that answer left the partner callMS after its arrival.
		if calls := x.log.Calls; len(calls) >= 2 {
			span := calls[len(calls)-2].ArrivalMs - calls[0].ArrivalMs + float64(x.job.callMS)
			v.need(el >= span-rounding, "%s reported %.1f ms, less than the %.0f ms from its first attempt's arrival to the answer before its last attempt", name, el, span)
		}
		v.within(wall, 2*(el+300), loadAllowance, "%s reported %.1f ms of a %.0f ms run", name, el, wall)
	}
	g.judge("retry_elapsed_honest", v, "elapsed_ms reported of wall time measured: %s (and %d more clients)", strings.Join(seen, ", "), jitterRuns-1)
}

func sortedNames[T any](m map[string]T) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// shortList keeps the first n items and says how many more there were.
func shortList(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	return append(items[:n:n], fmt.Sprintf("%d more", len(items)-n))
}

func sum(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t
}

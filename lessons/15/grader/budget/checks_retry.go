package budget

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
		"retry_waits_real", "retry_jitter", "retry_wait_drawn", "retry_floor", "retry_read_left", "retry_elapsed_honest", "retry_model"}
)

// A retry scenario: a partner call that takes callMS and fails fail times
// (or the blackhole, hole). A zero baseMS, minMS or connect is left out of
// the command: the tool's default (--base-ms 100, --min-ms 0, --connect 1)
// applies. expect, when set, is the stopped_reason the run's parameters
// leave it on a quiet machine.
type retryJob struct {
	callMS, fail, budgetMS, attempts, baseMS, minMS int
	hole                                            bool
	connect                                         float64
	expect                                          string
	// Targets other than the partner's /call (drawn cases): a closed port,
	// a reset before any byte, a status answered at once; and a body
	// trickled over dripMS after the partner's headers.
	refused, reset bool
	code, dripMS   int
	// attemptsWant is the attempts the contract makes of the run, when
	// sure says it is certain (0 when --min-ms is above the budget).
	attemptsWant int
	sure         bool
	// cut: the run's first attempt is cut by the budget (its answer comes
	// after the budget): the run stops with budget after one attempt.
	cut bool
}

// partner reports whether the job calls the partner's /call, whose log
// counts its attempts.
func (j retryJob) partner() bool { return !j.hole && !j.refused && !j.reset && j.code == 0 }

// work is what one attempt at the partner takes when it is read in full.
func (j retryJob) work() float64 { return float64(j.callMS + j.dripMS) }

// target is the job's target as a case word.
func (j retryJob) target() dlTarget {
	return dlTarget{hole: j.hole, refused: j.refused, reset: j.reset, code: j.code, delayMS: j.callMS, dripMS: j.dripMS}
}

// setTarget points the job at t.
func (j *retryJob) setTarget(t dlTarget) {
	j.hole, j.refused, j.reset, j.code, j.callMS, j.dripMS = t.hole, t.refused, t.reset, t.code, t.delayMS, t.dripMS
}

// base is the --base-ms the run used.
func (j retryJob) base() float64 {
	if j.baseMS == 0 {
		return 100 // the contract's default
	}
	return float64(j.baseMS)
}

func (j retryJob) args(l *lab, key string) []string {
	url := fmt.Sprintf("%s/call?ms=%d&fail=%d&key=%s", l.base, j.callMS, j.fail, key)
	if j.dripMS > 0 {
		url = fmt.Sprintf("%s/call?ms=%d&drip_ms=%d&fail=%d&key=%s", l.base, j.callMS, j.dripMS, j.fail, key)
	}
	switch {
	case j.hole:
		url = "http://" + l.blackhole + "/"
	case j.refused:
		url = "http://" + l.closed + "/"
	case j.reset:
		url = l.status + "/reset"
	case j.code != 0:
		url = fmt.Sprintf("%s/status/%d", l.status, j.code)
	}
	args := []string{"--url", url, "--budget-ms", fmt.Sprint(j.budgetMS), "--attempts", fmt.Sprint(j.attempts)}
	if j.connect != 0 {
		args = append(args, "--connect", fmt.Sprint(j.connect))
	}
	if j.baseMS != 0 {
		args = append(args, "--base-ms", fmt.Sprint(j.baseMS))
	}
	if j.minMS != 0 {
		args = append(args, "--min-ms", fmt.Sprint(j.minMS))
	}
	return args
}

// String names the run in a sentence.
func (j retryJob) String() string {
	s := fmt.Sprintf("retry /call?ms=%d&fail=%d", j.callMS, j.fail)
	if j.dripMS > 0 {
		s = fmt.Sprintf("retry /call?ms=%d&drip_ms=%d&fail=%d", j.callMS, j.dripMS, j.fail)
	}
	if !j.partner() {
		s = "retry " + j.target().String()
	}
	s += fmt.Sprintf(" --budget-ms %d --attempts %d", j.budgetMS, j.attempts)
	if j.connect != 0 {
		s += fmt.Sprintf(" --connect %v", j.connect)
	}
	if j.baseMS != 0 {
		s += fmt.Sprintf(" --base-ms %d", j.baseMS)
	}
	if j.minMS != 0 {
		s += fmt.Sprintf(" --min-ms %d", j.minMS)
	}
	return s
}

// The retry scenarios: a call that recovers; one that runs out of attempts
// (with the default --base-ms); one that always fails with attempts to
// spare, so only the budget stops it (its calls cost next to nothing even on
// a busy machine, so a tool that charges only the calls to the budget makes
// up to 30 attempts, its caps growing to 200·2^28 ms: it runs far past the
// budget whatever is drawn); one whose 100 ms
// calls meet a 700 ms floor; one whose second attempt must be cut at the
// budget left; one with no optional flags; the blackhole under a budget
// shorter and one longer than the connect limit.
var retryJobs = map[string]retryJob{
	"recovers":   {callMS: 20, fail: 1, budgetMS: 3000, attempts: 3, baseMS: 100, connect: 1, expect: "ok"},
	"attempts":   {callMS: 20, fail: 100, budgetMS: 5000, attempts: 3, connect: 1, expect: "attempts"},
	"budget":     {callMS: 0, fail: 100, budgetMS: 1500, attempts: 30, baseMS: 200, minMS: 100, connect: 1, expect: "budget"},
	"floor":      {callMS: 100, fail: 100, budgetMS: 1000, attempts: 20, baseMS: 1, minMS: 700, connect: 1, expect: "budget"},
	"readleft":   {callMS: 700, fail: 1, budgetMS: 1000, attempts: 3, baseMS: 1, connect: 1, expect: "budget"},
	"defaults":   {callMS: 10, fail: 1, budgetMS: 2000, attempts: 2, expect: "ok"},
	"hole_under": {hole: true, budgetMS: 600, attempts: 3, connect: 2, expect: "budget"},
	"hole_over":  {hole: true, budgetMS: 3000, attempts: 3, connect: 0.3, baseMS: 50, expect: "attempts"},
}

// The jitter sample: jitterRuns clients that fail together, all at once,
// each waiting five times (caps 100, 200, 400, 800 and 1600 ms) before
// giving up: every wait at its cap adds up to 3100 ms, well within the
// 5000 ms budget, so a correct tool always makes its six attempts.
const (
	jitterRuns     = 30
	jitterParallel = jitterRuns
	jitterWaits    = 5
	jitterMinWaits = 100
)

var jitterJob = retryJob{callMS: 0, fail: 100, budgetMS: 5000, attempts: jitterWaits + 1, baseMS: 100, connect: 1}

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
	if g.replayed(ctx, "retry") {
		return
	}
	r := g.rng(streamRetry)
	scenarios := drawRetryJobs(r)
	for name, j := range drawWaitJobs(r) {
		scenarios[name] = j
	}
	for name, j := range retryJobs {
		scenarios[name] = j
	}
	for name, j := range scenarios {
		if j.hole && g.lab.blackhole == "" {
			continue
		}
		keys[name] = nonce() + "-" + name
		jobs[name] = j.args(g.lab, keys[name])
		all[name] = j
	}
	for i := range jitterRuns {
		name := fmt.Sprintf("jitter%02d", i)
		keys[name] = nonce() + "-" + name
		jobs[name] = jitterJob.args(g.lab, keys[name])
		all[name] = jitterJob
	}
	props := slices.Clone(retryProps)
	// A correct retry ends within its budget (5 s at most here); one whose
	// waits are not charged can sleep for minutes: cut it short.
	runs := g.runLimited(ctx, "retry", retryTimeout, jobs, jitterParallel+len(retryJobs)+drawnRetries+waitRuns)
	if r := runs["budget"]; r.killed && !r.heldUp && runs["recovers"].problem == "" && runs["attempts"].problem == "" {
		// Only the run that the budget alone can stop went on: its waits were not paid from it.
		g.set("retry_waits_charged", false, "/call always failing at once, budget 1500 ms, --attempts 30: still running after %v, killed", retryTimeout)
		delete(runs, "budget")
		props = slices.DeleteFunc(props, func(n string) bool { return n == "retry_waits_charged" })
	}
	res := map[string]*retried{}
	for name, r := range runs {
		if r.problem != "" {
			g.failRun(r, r.problem, props...)
			return
		}
		var o retryOut
		if err := r.decode(&o, retryKeys...); err != nil {
			g.failAllOf("retry "+name+": "+err.Error(), props...)
			return
		}
		var log provider.PartnerLog
		var err error
		if all[name].partner() {
			log, err = g.lab.settle(ctx, keys[name])
		}
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

	g.checkWaitsCharged(res)
	g.checkWaitsReal(res)
	g.checkRetryFloor(res["floor"])
	g.checkReadLeft(res["readleft"])
	g.checkRetryTimes(res)
	g.checkWaitDrawn(res)
	g.checkRetryModel(ctx, res)
}

// checkWaitsCharged: /call failing at once, a budget of 1500 ms and 30
// attempts: only the budget can stop the run, and only if the waits are
// paid from it.
func (g *grader) checkWaitsCharged(res map[string]*retried) {
	x, ok := res["budget"]
	if !ok {
		return
	}
	o, j := x.out, x.job
	limit := float64(j.budgetMS) + slack
	var v verdict
	// The calls fail at once: the budget is spent on waits, which is
	// what the scenario is about. When the partner (a busy machine's
	// lab) took most of the budget answering, a tool that pays only the
	// calls from it stops in time too, its defect unseen: the run
	// tested nothing, whatever it reports, and is run again.
	callsMS := partnerMS(x.log)
	if callsMS > float64(j.budgetMS)/2 {
		v.slow("the partner took %.0f ms of the %d ms budget answering calls that fail at once, so the run could not show whether waits are paid from it", callsMS, j.budgetMS)
	}
	v.need(!o.OK && o.StoppedReason == "budget", "it stopped with stopped_reason %q (ok %v)", o.StoppedReason, o.OK)
	v.within(x.run.wallMS(), limit, allowFor(x.run), "the run went past its budget")
	for _, name := range sortedNames(res) {
		switch but, timed := unpaid(res[name]); {
		case but != "" && timed:
			v.slow("%s: %s", name, but)
		case but != "":
			v.need(false, "%s: %s", name, but)
		}
	}
	g.judge("retry_waits_charged", v,
		"/call always failing at once, budget 1500 ms, --attempts 30: stopped_reason %q after %d attempts, waits %v, the run took %.0f ms (want budget, at most %.0f ms); the partner spent %.0f ms answering the calls",
		o.StoppedReason, o.Attempts, o.WaitsMS, x.run.wallMS(), limit, callsMS)
}

// partnerMS is how long the partner spent on the calls it logged, summed.
func partnerMS(log provider.PartnerLog) float64 {
	total := 0.0
	for _, c := range log.Calls {
		total += c.DurationMs
	}
	return total
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
const capLateness = 25.0 // ms

// checkWaitCaps checks every wait against its cap, and that the caps
// double: a wait over its cap by more than 25 ms is a failure unless the
// run's threads waited at least that long for a CPU (no timer of the
// process can have been later than that: load explains it, and it is not
// a failure at all); where that time cannot be measured it is a timing
// miss. And the caps must grow (checkDoubling).
func (g *grader) checkWaitCaps(res map[string]*retried) {
	var v verdict
	var over []string
	waits := 0
	for _, name := range sortedNames(res) {
		x := res[name]
		base := x.job.base()
		for i, w := range x.out.WaitsMS {
			waits++
			if w < 0 || w > capOf(base, i)+capLateness {
				over = append(over, fmt.Sprintf("%s: wait %d is %.1f ms, cap %.0f ms", name, i+1, w, capOf(base, i)))
			}
		}
		excess := overCaps(x.out.WaitsMS, base)
		allow := lateAllowance(x.run, len(x.out.WaitsMS))
		switch {
		case slices.ContainsFunc(x.out.WaitsMS, func(w float64) bool { return w < 0 }):
			v.need(false, "a wait was negative")
		case excess == 0:
		case allow < 0:
			v.slow("a wait was larger than its cap")
		case excess > passLate(x.run, len(x.out.WaitsMS)) && excess <= allow:
			v.slow("a wait was larger than its cap by more than %.0f ms of CPU wait excuse (%s: the waits %v went %.0f ms over their caps %s)",
				passExcuse, name, x.out.WaitsMS, excess, capsText(base, len(x.out.WaitsMS)))
		case excess > allow:
			v.need(false, "a wait was larger than its cap (%s: the waits %v went %.0f ms over their caps %s, +%.0f ms each, more than the %.0f ms its threads waited for a CPU: no late timer explains it)",
				name, x.out.WaitsMS, excess, capsText(base, len(x.out.WaitsMS)), capLateness, x.run.starvedMS)
		default:
			over = over[:len(over)-countOver(x.out.WaitsMS, base)] // late by no more than the CPU made it
		}
	}
	grew := checkDoubling(res, &v)
	g.judge("retry_wait_caps", v, "%s; %s", joinOr(shortList(over, 6), fmt.Sprintf("%d waits, each within its cap (+%.0f ms, or as late as the CPU made it)", waits, capLateness)), grew)
}

// The doubling test, on the jitter sample: for each of the waits
// doubleFirst to jitterWaits (caps 400, 800 and 1600 ms), the largest of
// the jitterRuns clients' waits must be over doubleShare of its cap. Under
// full jitter each wait is uniform in [0, cap]: all 30 under 0.6 of the
// cap has probability 0.6^30 = 2.2e-7, so a correct tool fails one of the
// three with probability under 7e-7. Caps that grow linearly (base·k:
// wait 4 at most 400 of its 800 ms, wait 5 at most 500 of 1600) or stop
// doubling (base·2^min(k-1, 2): waits 4 and 5 at most 400 ms) keep every
// such wait at half its cap or less, and fail every time.
const (
	doubleShare = 0.6
	doubleFirst = 3
	// lateShare: a wait over doubleShare whose share of its cap, less what
	// load can have made it late, is not over lateShare is a timing miss.
	// The caps that do not double keep every such wait at half its cap.
	lateShare = 0.5
)

// checkDoubling applies the doubling test to res's jitter clients, records
// what failed in v, and says what it saw. A wait counts by what it
// measured (a timer is never early): none over the share is a failure.
// When no wait is over half its cap once what the machine can have made it
// late is taken off (the run's threads' CPU wait and the lab's own timer
// lag while it ran: a wrong tool's late timer looks like a larger draw), it
// is a timing miss, run again: caps that do not double, made late, never
// pass.
func checkDoubling(res map[string]*retried, v *verdict) string {
	type index struct {
		n        int
		raw, adj float64 // the largest share of the cap: measured, and less what load explains
		at       float64 // the largest wait
	}
	per := make([]index, jitterWaits+1)
	short, starvedOut := 0, 0 // clients with fewer waits; of them, those the partner's slow answers ran out of budget
	for _, name := range sortedNames(res) {
		if !strings.HasPrefix(name, "jitter") {
			continue
		}
		x := res[name]
		if len(x.out.WaitsMS) < jitterWaits {
			short++
			if x.out.StoppedReason == "budget" && partnerMS(x.log) > float64(x.job.budgetMS)-sum(capsOf(x.job.base(), jitterWaits)) {
				starvedOut++
			}
		}
		late := loadLate(x.run)
		for i, w := range x.out.WaitsMS {
			k := i + 1
			if k < doubleFirst || k > jitterWaits {
				continue
			}
			c := capOf(x.job.base(), i)
			p := &per[k]
			p.n++
			if w/c > p.raw {
				p.raw, p.at = w/c, w
			}
			p.adj = max(p.adj, (w-late)/c)
		}
	}
	if jitterClients(res) == 0 {
		return "no jitter sample"
	}
	var seen []string
	for k := doubleFirst; k <= jitterWaits; k++ {
		p, c := per[k], capOf(jitterJob.base(), k-1)
		seen = append(seen, fmt.Sprintf("wait %d (cap %.0f ms): the largest of %d is %.1f ms", k, c, p.n, p.at))
		switch {
		case p.n < jitterRuns && short > 0 && starvedOut == short:
			v.slow("only %d of %d clients made wait %d: the partner's answers, slow on a busy machine, took the budget", p.n, jitterRuns, k)
		case p.n < jitterRuns:
			v.need(false, "only %d of %d clients made wait %d, too few to see whether the caps double (every wait at its cap fits the budget)", p.n, jitterRuns, k)
		case p.raw <= doubleShare:
			v.need(false, "of %d clients' wait %d (cap %.0f ms) none was over %.0f%% of the cap (the largest %.1f ms): the waits do not grow with a cap that doubles", p.n, k, c, 100*doubleShare, p.at)
		case p.adj <= lateShare:
			v.slow("of %d clients' wait %d (cap %.0f ms) none was over %.0f%% of the cap by more than the machine can have made it late (the largest %.1f ms)", p.n, k, c, 100*lateShare, p.at)
		}
	}
	return fmt.Sprintf("of %d jitter clients, %s (each must be over %.0f%% of its cap)", jitterRuns, strings.Join(seen, ", "), 100*doubleShare)
}

// capsOf lists the first n caps of base.
func capsOf(base float64, n int) []float64 {
	var caps []float64
	for k := range n {
		caps = append(caps, capOf(base, k))
	}
	return caps
}

func countOver(waits []float64, base float64) int {
	n := 0
	for i, w := range waits {
		if w > capOf(base, i)+capLateness {
			n++
		}
	}
	return n
}

func jitterClients(res map[string]*retried) int {
	n := 0
	for name := range res {
		if strings.HasPrefix(name, "jitter") {
			n++
		}
	}
	return n
}

// checkJitter is the statistical test of full jitter on the waits of
// jitterRuns clients that failed together, five waits each (caps 100, 200,
// 400, 800, 1600 ms). Each wait divided by its cap, u, is uniform on
// [0, 1] under full jitter. The first two tests look at the 120 waits of
// 200 ms caps or more (the 25 ms a timer may be late is a quarter of a
// 100 ms cap); three tests, with their false-reject rates for a correct
// tool:
//
//   - the whole [0, cap]: each quarter of [0, 1] holds at least 3 of the
//     120 u. A measured wait may be late by 25 ms (or by what the CPU made
//     it), so a wait counts for every quarter its interval
//     [u − late/cap, u] touches: lateness never empties a quarter.
//     P(a quarter holds ≤ 2 of 120) < 1e-12, and of the 100 the test
//     needs at least, < 2e-10: under 1e-9 for the four.
//   - draws that differ within one client: a client is in step when its
//     four u lie within 0.15 of one another (one draw scaled by each cap);
//     at most half of the clients may be. For a correct tool P(in step) =
//     4·0.15³ − 3·0.15⁴ < 0.012 each, and P(15 or more of 30) < 1e-20.
//   - clients that differ: their first waits take at least 15 distinct
//     values (0.1 ms resolution): fewer has probability under 1e-12.
//
// So a correct tool fails retry_jitter with probability under 1e-9. A
// fixed wait (cap/2, the cap), "equal jitter" in [cap/2, cap], a draw in
// [0, cap/2], or one draw per client fail every time.
func (g *grader) checkJitter(res map[string]*retried) {
	var v verdict
	n := 0
	var quarters [4]int
	inStep, clients := 0, 0
	firsts := map[float64]bool{}
	for _, name := range sortedNames(res) {
		if !strings.HasPrefix(name, "jitter") {
			continue
		}
		x := res[name]
		late := capLateness + max(x.run.starvedMS, 0)
		var us []float64
		for i, w := range x.out.WaitsMS {
			if i == 0 {
				firsts[math.Round(w*10)/10] = true
				continue
			}
			ceiling := capOf(x.job.base(), i)
			u := w / ceiling
			lo := max(u-late/ceiling, 0)
			n++
			us = append(us, u)
			for q := range quarters {
				if lo < float64(q+1)/4 && u >= float64(q)/4 {
					quarters[q]++
				}
			}
		}
		if len(us) >= 2 {
			clients++
			if slices.Max(us)-slices.Min(us) <= 0.15 {
				inStep++
			}
		}
	}
	if v.need(n >= jitterMinWaits, "only %d waits came back from %d clients, too few to judge", n, jitterRuns) {
		for q, c := range quarters {
			v.need(c >= 3, "only %d of %d waits fell in [%.2f, %.2f] of their cap: the draws do not cover the whole [0, cap]", c, n, float64(q)/4, float64(q+1)/4)
		}
		v.need(2*inStep <= clients, "%d of %d clients waited the same share of each cap: one draw per client, scaled, instead of a draw per wait", inStep, clients)
		v.need(len(firsts) >= jitterRuns/2, "the %d clients' first waits took only %d distinct values, so clients that failed together come back together", jitterRuns, len(firsts))
	}
	g.judge("retry_jitter", v, "%d clients failing together (caps 200, 400, 800, 1600 ms after a first of 100 ms): %d waits, by quarter of their cap %v, %d clients in step, %d distinct first waits",
		jitterRuns, n, quarters, inStep, len(firsts))
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
			gap := calls[k+1].ArrivalMs - calls[k].ArrivalMs - x.job.work()
			if calls[k].End != "done" {
				gap = calls[k+1].ArrivalMs - calls[k].ArrivalMs
			}
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
		least := sum(waits) + float64(answered)*x.job.work()
		if !v.need(x.run.wallMS() >= least-early, "the run was shorter than its calls plus its reported waits") {
			short = append(short, fmt.Sprintf("%s: %d answered calls of %.0f ms and waits %v need %.0f ms, the run took %.0f ms", name, answered, x.job.work(), waits, least, x.run.wallMS()))
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
	// Only attempts that fit after 300 ms show the floor: when a busy
	// machine's partner took twice the calls' 100 ms to answer, a tool that
	// ignores the floor makes as few attempts as one that keeps it, and
	// the run tested nothing, whatever it reports.
	if n := len(x.log.Calls); n > 0 && partnerMS(x.log)/float64(n) > 2*float64(x.job.callMS) {
		v.slow("the partner took %.0f ms a call on average to answer calls of %d ms, so too few attempts fit in the budget to show the floor", partnerMS(x.log)/float64(n), x.job.callMS)
	}
	v.need(len(x.log.Calls) <= 4, "the partner received %d attempts: one started with less than --min-ms 700 left", len(x.log.Calls))
	// A busy machine makes attempts fewer, but never later to start than
	// the floor allows: every attempt of a correct tool is sent by 300 ms
	// into the run, so by 300 ms after the first one (the run began before
	// it), and arrives within 150 ms of transit more. A tool that ignores the
	// floor goes on sending until the budget is spent, however slow it is.
	if n := len(x.log.Calls); n > 1 {
		first, last := x.log.Calls[0].ArrivalMs, x.log.Calls[n-1].ArrivalMs
		v.need(last-first <= 300+150, "the partner received attempt %d %.0f ms after the first: it started with less than --min-ms 700 of the 1000 ms budget left", n, last-first)
	}
	v.need(o.Attempts == len(x.log.Calls), "retry reports %d attempts, the partner received %d", o.Attempts, len(x.log.Calls))
	v.need(!o.OK && o.StoppedReason == "budget", "it stopped with stopped_reason %q (ok %v), not budget", o.StoppedReason, o.OK)
	v.within(x.run.wallMS(), float64(x.job.budgetMS)+slack, allowFor(x.run), "the run took %.0f ms for a 1000 ms budget", x.run.wallMS())
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
	if len(x.log.Calls) < 2 {
		// Only a second attempt shows its read limit: one never started
		// (a first attempt that a busy machine made slow leaves too little
		// for one) tests nothing, even if the run looks right.
		v.slow("the partner received %d attempt(s): no second attempt was made, so its read limit could not be seen", len(x.log.Calls))
	}
	v.need(!o.OK, "it reports ok true: the second attempt, started with at most 300 ms left, read the partner's 700 ms answer: its read limit was not the budget left")
	v.need(o.StoppedReason == "budget", "it stopped with stopped_reason %q, not budget", o.StoppedReason)
	v.within(x.run.wallMS(), float64(x.job.budgetMS)+slack, allowFor(x.run), "the run took %.0f ms for a 1000 ms budget", x.run.wallMS())
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
			span := calls[len(calls)-2].ArrivalMs - calls[0].ArrivalMs + x.job.work()
			v.need(el >= span-rounding, "%s reported %.1f ms, less than the %.0f ms from its first attempt's arrival to the answer before its last attempt", name, el, span)
		}
		v.within(wall, 2*(el+300), allowFor(x.run), "%s reported %.1f ms of a %.0f ms run", name, el, wall)
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

// unpaid says how a run's waits were not paid from its budget, or "". Each
// wait a correct tool takes ends with at least the floor left, after the
// attempts before it, which the partner answered no sooner than their
// delay: the waits and those attempts add up to at most the budget less the
// floor. Measured waits may be late by 25 ms each and by the time the
// process waited for a CPU. Later than that, but by no more than the lab's
// own timer was late while the run lasted (a busy machine can wake a
// sleeping tool that late without its threads having waited for a CPU: a
// load of 15 once woke one 400 ms late), is a timing miss: timed is true,
// and the run is judged again. (Waits taken but not charged add up to far
// more: the budget run's caps grow past 25 s.)
func unpaid(x *retried) (but string, timed bool) {
	j, o := x.job, x.out
	floor := max(float64(j.minMS), 1)
	answered := 0.0
	for k := 0; k < len(o.WaitsMS) && k < len(x.log.Calls); k++ {
		if x.log.Calls[k].End == "done" {
			answered += j.work()
		}
	}
	paid := sum(o.WaitsMS) + answered
	allow := lateAllowance(x.run, len(o.WaitsMS))
	if allow < 0 {
		allow = capLateness*float64(len(o.WaitsMS)) + loadAllowance
	}
	bound := max(float64(j.budgetMS)-floor, 0) + rounding
	if paid <= bound+allow {
		return "", false
	}
	return fmt.Sprintf("the waits %v and the %.0f ms of answered attempts before them add up to %.0f ms, past the budget of %d ms less the floor of %.0f ms (and %.0f ms a late timer may add, %.0f ms more on a machine whose own timers were that late)",
		o.WaitsMS, answered, paid, j.budgetMS, floor, allow, max(x.run.lagMS, 0)), paid <= bound+allow+max(x.run.lagMS, 0)
}

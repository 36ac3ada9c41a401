package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"quoteflowlab.dev/provider"
)

type deadlineCall struct {
	URL           string  `json:"url"`
	OK            bool    `json:"ok"`
	Phase         string  `json:"phase"`
	ElapsedMS     float64 `json:"elapsed_ms"`
	ReadTimeoutMS float64 `json:"read_timeout_ms"`
}

type deadlineOut struct {
	BudgetMS float64        `json:"budget_ms"`
	Calls    []deadlineCall `json:"calls"`
	Skipped  int            `json:"skipped"`
	TotalMS  float64        `json:"total_ms"`
	Exceeded bool           `json:"exceeded"`
}

var (
	deadlineKeys     = []string{"budget_ms", "calls", "skipped", "total_ms", "exceeded"}
	deadlineCallKeys = []string{"url", "ok", "phase", "elapsed_ms", "read_timeout_ms"}
	deadlineProps    = []string{"deadline_json", "deadline_read_limit", "deadline_budget_cut", "deadline_floor",
		"deadline_connect_budget", "deadline_times_honest", "deadline_model"}
)

// A deadline scenario: its budget and the partner delay of each --url (0
// for the blackhole).
type deadlineJob struct {
	budget float64
	delays []int
	log    provider.PartnerLog // what the partner recorded for the job's key
}

// checkDeadline runs three budgets: "left" (two 600 ms calls, then a slow
// one the budget must cut; with the full budget as its read limit it would
// run 1200 ms longer), "floor" (two calls leave less than --min-ms) and
// "connect" (the blackhole with a connect limit far longer than the budget).
func (g *grader) checkDeadline(ctx context.Context) {
	if g.replayed(ctx, "deadline") {
		return
	}
	cases := drawDeadlineCases(g.rng(streamDeadline))
	for name, c := range deadlineCases {
		cases[name] = c
	}
	keys := map[string]string{}
	urls := map[string][]string{}
	jobs := map[string][]string{}
	specs := map[string]*deadlineJob{}
	for name, c := range cases {
		if slices.ContainsFunc(c.targets, func(t dlTarget) bool { return t.hole }) && g.lab.blackhole == "" {
			delete(cases, name)
			continue
		}
		keys[name] = nonce()
		jobs[name], urls[name] = c.args(g.lab, keys[name])
		specs[name] = &deadlineJob{budget: float64(c.budget), delays: c.delays()}
	}
	runs := g.runAll(ctx, "deadline", g.runBound(), jobs)
	outs := map[string]deadlineOut{}
	for key := range jobs {
		r := runs[key]
		if r.problem != "" {
			g.failRun(r, "deadline "+key+": "+r.problem, deadlineProps...)
			return
		}
		var o deadlineOut
		err := r.decode(&o, deadlineKeys...)
		if err == nil {
			err = nestedKeys(firstValue(r.stdout), "calls", deadlineCallKeys...)
		}
		if err == nil && len(o.Calls) != len(specs[key].delays) {
			err = fmt.Errorf("%d calls for %d --url", len(o.Calls), len(specs[key].delays))
		}
		if err == nil {
			specs[key].log, err = g.lab.settle(ctx, keys[key])
		}
		if err != nil {
			g.failAllOf("deadline "+key+": "+err.Error(), deadlineProps...)
			return
		}
		outs[key] = o
	}
	g.set("deadline_json", true, "")
	g.checkReadLimits(outs["left"], specs["left"].log)
	g.checkBudgetCut(outs["left"], runs["left"])
	g.checkFloor(outs["floor"])
	g.checkDeadlineTimes(outs, runs, specs)
	g.checkDeadlineModel(ctx, cases, urls, outs, runs, specs)
	if _, ok := jobs["connect"]; !ok {
		g.set("deadline_connect_budget", true, "skipped: this system has no blackhole (Linux only)")
		return
	}
	g.checkConnectBudget(outs["connect"], runs["connect"])
}

// started returns the calls that were made (not no_budget), in order.
func started(o deadlineOut) []deadlineCall {
	var out []deadlineCall
	for _, c := range o.Calls {
		if c.Phase != "no_budget" {
			out = append(out, c)
		}
	}
	return out
}

// checkReadLimits compares each call's read_timeout_ms with the budget left
// when it started, by the partner's clock: the budget less the time between
// the first call's arrival and this one's.
func (g *grader) checkReadLimits(o deadlineOut, log provider.PartnerLog) {
	const budget = 1600.0
	var v verdict
	made := started(o)
	var got, want []string
	if v.need(len(made) == len(log.Calls), "the partner received %d calls where deadline reports %d made", len(log.Calls), len(made)) {
		for i, c := range made {
			left := budget - (log.Calls[i].ArrivalMs - log.Calls[0].ArrivalMs)
			got = append(got, fmt.Sprintf("%.0f", c.ReadTimeoutMS))
			want = append(want, fmt.Sprintf("%.0f", left))
			// Load can delay when the partner stamps an arrival, so this
			// estimate is a timing bound. A hard one: call i started after the
			// answer to call i-1, which the partner sent its delay after
			// that call's arrival, and the run started before call 1 arrived.
			if i > 0 && made[i-1].Phase == "done" {
				most := budget - (log.Calls[i-1].ArrivalMs + float64(delayOf(made[i-1].URL)) - log.Calls[0].ArrivalMs) + 1
				v.need(c.ReadTimeoutMS <= most, "a later call got more than was left, as if every call got the full budget (call %d: %.0f ms with at most %.0f ms left)", i+1, c.ReadTimeoutMS, most)
			}
			v.within(c.ReadTimeoutMS, left+15, loadAllowance, "a later call got more than was left, as if every call got the full budget (call %d: %.0f ms with about %.0f ms left)", i+1, c.ReadTimeoutMS, left)
			v.within(left, c.ReadTimeoutMS+500, loadAllowance, "call %d got %.0f ms with about %.0f ms left: the budget was taken before the run started", i+1, c.ReadTimeoutMS, left)
		}
		if len(made) < 2 { // correct on a slow machine: the first call ate the budget
			v.slow("only %d call was made, so no later read limit could be seen", len(made))
		}
	}
	g.judge("deadline_read_limit", v, "budget 1600 ms, calls of 600, 600, 5000 ms: read_timeout_ms %s where the budget left was about %s (by the partner's arrival times)",
		strings.Join(got, ", "), strings.Join(want, ", "))
}

// checkBudgetCut checks that the slow third call was cut by the budget,
// with one clause for each condition that failed.
func (g *grader) checkBudgetCut(o deadlineOut, r run) {
	const budget = 1600.0
	last := o.Calls[2]
	var v verdict
	switch {
	case last.Phase == "no_budget" && last.ReadTimeoutMS < 100+rounding:
		// Correct on a slow machine: the first two calls left less than
		// --min-ms. The cut was not tested; run it again.
		v.slow("the first two calls took so long that the third was skipped (%.0f ms left), so no cut could be seen", last.ReadTimeoutMS)
	default:
		v.need(last.Phase == "read", "the slow third call ended in phase %q instead of being cut in phase read", last.Phase)
	}
	v.need(o.Exceeded, "exceeded was false although the budget cut a read")
	v.within(r.wallMS(), budget+slack, allowFor(r), "the run went past its budget: %.0f ms for 1600 ms (at most %.0f ms allowed)", r.wallMS(), budget+slack)
	g.judge("deadline_budget_cut", v, "third call (5000 ms) ended in phase %q, exceeded %v, the run took %.0f ms (want read, true, at most %.0f ms)",
		last.Phase, o.Exceeded, r.wallMS(), budget+slack)
}

// checkFloor checks that no call starts with less than --min-ms left.
func (g *grader) checkFloor(o deadlineOut) {
	c := deadlineCases["floor"]
	minMS := float64(c.minMS)
	var bad []string
	skipped := 0
	for i, call := range o.Calls {
		switch {
		case call.Phase == "no_budget":
			skipped++
			if call.ElapsedMS != 0 {
				bad = append(bad, fmt.Sprintf("call %d is no_budget but took %.0f ms", i+1, call.ElapsedMS))
			}
		case call.ReadTimeoutMS < minMS:
			bad = append(bad, fmt.Sprintf("call %d started with %.0f ms left, below --min-ms %.0f (phase %q)", i+1, call.ReadTimeoutMS, minMS, call.Phase))
		}
	}
	if o.Calls[2].Phase != "no_budget" {
		bad = append(bad, fmt.Sprintf("call 3 has phase %q after two %d ms calls of a %d ms budget", o.Calls[2].Phase, c.targets[0].delayMS, c.budget))
	}
	if o.Skipped != skipped {
		bad = append(bad, fmt.Sprintf("skipped is %d for %d no_budget calls", o.Skipped, skipped))
	}
	if skipped > 0 && !o.Exceeded {
		bad = append(bad, "exceeded is false although a call was skipped")
	}
	detail := fmt.Sprintf("budget %d ms, --min-ms %d, calls of %d, %d, %d ms: ", c.budget, c.minMS, c.targets[0].delayMS, c.targets[1].delayMS, c.targets[2].delayMS) + strings.Join(bad, "; ")
	if len(bad) == 0 {
		detail = fmt.Sprintf("budget %d ms, --min-ms %d: call 3 skipped with %.0f ms left", c.budget, c.minMS, o.Calls[2].ReadTimeoutMS)
	}
	g.set("deadline_floor", len(bad) == 0, "%s", detail)
}

// checkConnectBudget checks deadline against the blackhole: with --connect 6
// and a budget of 800 ms, the connect phase must end when the budget does.
func (g *grader) checkConnectBudget(o deadlineOut, r run) {
	const budget = 800.0
	first, second := o.Calls[0], o.Calls[1]
	var v verdict
	v.need(first.Phase == "connect", "the first call ended in phase %q, not connect", first.Phase)
	v.need(r.wallMS() >= budget-early, "the run ended after %.0f ms, before its budget", r.wallMS())
	v.within(r.wallMS(), budget+slack, allowFor(r), "the connect went on past the budget: the run took %.0f ms for 800 ms, as if the connect limit (6 s) were not cut to the budget left", r.wallMS())
	v.need(second.Phase == "no_budget", "the second call, with nothing left, has phase %q instead of no_budget", second.Phase)
	v.need(o.Exceeded, "exceeded was false although the budget ran out")
	g.judge("deadline_connect_budget", v, "blackhole twice, --budget-ms 800 --connect 6: phases %q, %q; exceeded %v; the run took %.0f ms (want connect, no_budget, true, 800–%.0f ms)",
		first.Phase, second.Phase, o.Exceeded, r.wallMS(), budget+slack)
}

// checkDeadlineTimes compares the times deadline reports with the grader's
// clock and the partner's: no call or run may report more time than its
// process lived, a call that the partner answered cannot have taken less
// than the partner's delay, the calls fit in total_ms, and total_ms spans
// at least from the first call's arrival to the last answer sent.
func (g *grader) checkDeadlineTimes(outs map[string]deadlineOut, runs map[string]run, jobs map[string]*deadlineJob) {
	var v verdict
	var seen []string
	for _, key := range []string{"left", "floor", "connect"} {
		o, ok := outs[key]
		if !ok {
			continue
		}
		wall, job := runs[key].wallMS(), jobs[key]
		sum := 0.0
		for i, c := range o.Calls {
			sum += c.ElapsedMS
			v.need(c.ElapsedMS <= wall+rounding, "%s: call %d reported %.1f ms, more than the %.0f ms its process lived", key, i+1, c.ElapsedMS, wall)
			if c.Phase == "done" && job.delays[i] > 0 {
				v.need(c.ElapsedMS >= float64(job.delays[i])-rounding, "%s: call %d reported %.1f ms for an answer the partner sent after %d ms", key, i+1, c.ElapsedMS, job.delays[i])
			}
		}
		seen = append(seen, fmt.Sprintf("%s: total_ms %.1f, calls %.1f ms together, wall %.0f ms", key, o.TotalMS, sum, wall))
		v.need(o.TotalMS <= wall+rounding, "%s: total_ms %.1f is more than the %.0f ms the process lived", key, o.TotalMS, wall)
		v.need(sum <= o.TotalMS+rounding, "%s: the calls' elapsed_ms add up to %.1f ms, more than total_ms %.1f", key, sum, o.TotalMS)
		// The partner's log says when each call arrived. A call the tool read
		// in full (phase done) cannot have ended before the partner's delay
		// after its arrival. (The partner's own "done" is no proof: a write
		// into a socket the client has just closed succeeds.)
		if log, made := job.log.Calls, started(o); len(log) > 0 && len(log) == len(made) {
			span := 0.0
			for i, c := range log {
				if made[i].Phase == "done" {
					span = max(span, c.ArrivalMs+float64(delayOf(made[i].URL))-log[0].ArrivalMs)
				}
			}
			v.need(o.TotalMS >= span-rounding, "%s: total_ms %.1f is less than the %.0f ms from the first call's arrival to the last answer the partner sent", key, o.TotalMS, span)
		}
		v.within(wall, 2*(o.TotalMS+300), allowFor(runs[key]), "%s: total_ms %.1f of a %.0f ms run", key, o.TotalMS, wall)
	}
	g.judge("deadline_times_honest", v, "%s", strings.Join(seen, "; "))
}

// nestedKeys checks that every object in the array raw[field] has keys.
func nestedKeys(raw []byte, field string, keys ...string) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(top[field], &items); err != nil {
		return fmt.Errorf("%s: want an array: %v", field, err)
	}
	for i, item := range items {
		if err := missingKeys(item, keys...); err != nil {
			return fmt.Errorf("%s[%d]: %v", field, i, err)
		}
	}
	return nil
}

// delayOf is the ms= of a partner /call URL (0 when there is none).
func delayOf(u string) int {
	_, q, _ := strings.Cut(u, "?")
	for _, kv := range strings.Split(q, "&") {
		if v, ok := strings.CutPrefix(kv, "ms="); ok {
			n := 0
			fmt.Sscan(v, &n)
			return n
		}
	}
	return 0
}

// checkDeadlineModel compares every deadline run with the model.
func (g *grader) checkDeadlineModel(ctx context.Context, cases map[string]deadlineCase, urls map[string][]string, outs map[string]deadlineOut, runs map[string]run, jobs map[string]*deadlineJob) {
	var v verdict
	per := map[string]verdict{}
	var unseen, names []string
	for _, name := range sortedNames(cases) {
		o, ok := outs[name]
		if !ok {
			continue
		}
		names = append(names, name)
		var log []arrival
		for _, e := range jobs[name].log.Calls {
			log = append(log, arrival{at: e.ArrivalMs, end: e.End, dur: e.DurationMs})
		}
		var one verdict
		m := newModel(&one, cases[name].String())
		modelDeadline(m, cases[name], urls[name], o, runs[name], log)
		unseen = append(unseen, checkFields("deadline", m)...)
		per[name] = one
		v.absorb(one)
	}
	small, drawn := shrunk("deadline_model", cases, per, deadlineCase.smaller, func(c deadlineCase) verdict { return g.deadlineOnce(ctx, c) })
	g.modelJudge("deadline_model", "deadline", v, names, dedupe(unseen), g.seed, small, drawn)
}

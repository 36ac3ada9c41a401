package budget

import (
	"context"
	"fmt"
	"math"
	"strings"

	"quoteflowlab.dev/provider"
)

type fanoutCall struct {
	SentBudgetMS float64  `json:"sent_budget_ms"`
	Received     *float64 `json:"received"`
	ElapsedMS    float64  `json:"elapsed_ms"`
}

type fanoutOut struct {
	Calls []fanoutCall `json:"calls"`
}

var (
	fanoutCallKeys = []string{"sent_budget_ms", "received", "elapsed_ms"}
	fanoutProps    = []string{"fanout_json", "fanout_header", "fanout_shrinking", "fanout_budget_cut", "fanout_elapsed_honest", "fanout_model"}
)

// randomFanoutRuns is how many fanout runs drawn from its classes each
// grading adds (randomFanouts): one per class of where the budget ends.
const randomFanoutRuns = fanoutClasses

// fanoutWork is the partner's work per call: fanout calls BASE/budget?ms=200.
const fanoutWork = 200.0

// A fanout case: its budget, the tool's run and output, and the partner's
// log of the calls it received (fanout sends no key, so each case has a
// provider lab of its own and reads the log of the empty key).
type fanned struct {
	budget float64
	n      int
	run    run
	out    fanoutOut
	log    []provider.PartnerLogEntry
	made   []fanoutCall // the tool's calls that were sent (sent_budget_ms > 0), in order
	// connect is the --connect of the run (seconds); 0 leaves it out.
	connect float64
	stamps  []stamp // each call's arrival by the grader's clock, and its X-Budget-Ms
}

// checkFanout runs two cases: four /budget?ms=200 calls under 1100 ms (all
// fit, each carrying about 200 ms less than the one before) and four under
// 500 ms (the third must be cut when the budget runs out, the fourth not
// sent).
func (g *grader) checkFanout(ctx context.Context) {
	cases := randomFanouts(g.rng(streamFanout), randomFanoutRuns)
	// "out" leaves --connect to its default.
	cases["fits"], cases["out"] = &fanned{budget: 1100, n: 4, connect: 1}, &fanned{budget: 500, n: 4}
	errs := make(chan error, len(cases))
	done := make(chan struct{})
	for name, c := range cases {
		go func() {
			defer func() { done <- struct{}{} }()
			errs <- g.runFanout(ctx, name, c)
		}()
	}
	for range cases {
		<-done
	}
	close(errs)
	for err := range errs {
		if err != nil {
			g.failAllOf(err.Error(), fanoutProps...)
			return
		}
	}
	g.set("fanout_json", true, "")
	g.checkFanoutHeader(cases)
	g.checkShrinking(cases["fits"])
	g.checkFanoutCut(cases["out"])
	g.checkFanoutTimes(cases)
	g.checkFanoutModel(cases, g.seed)
}

// runFanout runs one case against a lab of its own and reads its log.
func (g *grader) runFanout(ctx context.Context, name string, c *fanned) error {
	l, err := startLab(false)
	if err != nil {
		return fmt.Errorf("starting a provider lab for fanout: %w", err)
	}
	defer l.stop()
	args := []string{"--base", l.base, "--budget-ms", fmt.Sprint(c.budget), "--n", fmt.Sprint(c.n)}
	if c.connect != 0 {
		args = append(args, "--connect", fmt.Sprint(c.connect))
	}
	done := make(chan struct{})
	stamps := l.watchArrivals(ctx, "", done)
	c.run = g.exec(ctx, "fanout", args...)
	close(done)
	r := c.run
	if r.problem != "" {
		return fmt.Errorf("%s", r.problem)
	}
	err = r.decode(&c.out, "calls")
	if err == nil {
		err = nestedKeys(firstValue(r.stdout), "calls", fanoutCallKeys...)
	}
	if err == nil && len(c.out.Calls) != c.n {
		err = fmt.Errorf("%d calls for --n %d", len(c.out.Calls), c.n)
	}
	if err != nil {
		return fmt.Errorf("fanout --budget-ms %.0f: %v", c.budget, err)
	}
	log, err := l.settle(ctx, "")
	if err != nil {
		return err
	}
	c.stamps = stamps()
	for _, e := range log.Calls {
		if e.Path == "/budget" {
			c.log = append(c.log, e)
		}
	}
	for _, call := range c.out.Calls {
		if call.SentBudgetMS > 0 {
			c.made = append(c.made, call)
		}
	}
	return nil
}

// logged lists the X-Budget-Ms values the partner received.
func logged(log []provider.PartnerLogEntry) string {
	var s []string
	for _, e := range log {
		if e.BudgetMs == nil {
			s = append(s, "none")
		} else {
			s = append(s, fmt.Sprint(*e.BudgetMs))
		}
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func sent(calls []fanoutCall) string {
	var s []string
	for _, c := range calls {
		s = append(s, fmt.Sprintf("%.0f", c.SentBudgetMS))
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// checkFanoutHeader checks, from the partner's own log, that every call
// carried X-Budget-Ms and that it is what fanout says it sent.
func (g *grader) checkFanoutHeader(cases map[string]*fanned) {
	var v verdict
	var seen []string
	for _, name := range []string{"fits", "out"} {
		c := cases[name]
		seen = append(seen, fmt.Sprintf("budget %.0f: sent_budget_ms %s, the partner received %s", c.budget, sent(c.out.Calls), logged(c.log)))
		missing := 0
		for _, e := range c.log {
			if e.BudgetMs == nil {
				missing++
			}
		}
		if !v.need(missing == 0, "the partner did not receive it (%d of %d calls carried no X-Budget-Ms)", missing, len(c.log)) {
			continue
		}
		if len(c.log) != len(c.made) {
			if lostInTransit(c) {
				// A call sent with little left can be cut before a busy
				// machine delivers it: the partner never sees it.
				v.slow("the partner received %d calls where fanout reports %d sent (the last ones cut before they arrived)", len(c.log), len(c.made))
			} else {
				v.need(false, "the partner received %d calls where fanout reports %d sent", len(c.log), len(c.made))
			}
			continue
		}
		for i, e := range c.log {
			m := c.made[i]
			v.need(math.Abs(float64(*e.BudgetMs)-m.SentBudgetMS) <= 1, "fanout printed sent_budget_ms %.0f but the partner received %d", m.SentBudgetMS, *e.BudgetMs)
			if m.Received != nil {
				v.need(math.Abs(*m.Received-float64(*e.BudgetMs)) <= 1, "fanout printed received %.0f but the partner logged %d", *m.Received, *e.BudgetMs)
			}
		}
	}
	g.judge("fanout_header", v, "%s", strings.Join(seen, "; "))
}

// checkShrinking checks, from the partner's log, that the calls went one
// after another and that each carried the budget left: the first about
// the whole budget, each next one less by the time between their arrivals.
func (g *grader) checkShrinking(c *fanned) {
	var v verdict
	log := c.log
	ok := len(log) >= 2
	switch {
	case ok:
	case c.run.wallMS() >= c.budget-2*fanoutWork:
		// A machine slow enough that the first call ate most of the budget.
		v.slow("the partner received %d calls in a run of %.0f ms, so no shrinking could be seen", len(log), c.run.wallMS())
	default:
		v.need(false, "the partner received %d calls", len(log))
	}
	for _, e := range log {
		ok = ok && e.BudgetMs != nil
	}
	if ok {
		b := func(i int) float64 { return float64(*log[i].BudgetMs) }
		v.need(b(0) <= c.budget, "the first call carried %.0f ms, more than the budget", b(0))
		v.within(c.budget-b(0), 150, loadAllowance, "the first call carried only %.0f ms of %.0f", b(0), c.budget)
		// Each budget is computed by the tool a moment before its call
		// leaves; a thread waiting for a CPU in between makes the partner's
		// gap differ from the tool's by that wait: the 25 ms grow by what
		// the tool's threads waited for a CPU, as measured on the process.
		tol := 25 + excuse(c.run)
		for i := 1; i < len(log); i++ {
			gap := log[i].ArrivalMs - log[i-1].ArrivalMs
			v.need(gap >= fanoutWork-rounding, "the calls overlapped (call %d arrived %.0f ms after call %d, before its 200 ms answer): fanout must call one after another", i+1, gap, i)
			v.need(b(i) <= b(i-1)-fanoutWork+1, "X-Budget-Ms did not shrink by the 200 ms each call took (%.0f, then %.0f)", b(i-1), b(i))
			v.within(b(i), b(i-1)-gap+tol, loadAllowance, "call %d carried %.0f ms, more than the %.0f ms left after the %.0f ms between arrivals (±%.0f ms)", i+1, b(i), b(i-1)-gap, gap, tol)
			v.within(b(i-1)-gap, b(i)+tol, loadAllowance, "call %d carried %.0f ms, less than the %.0f ms left after the %.0f ms between arrivals (±%.0f ms)", i+1, b(i), b(i-1)-gap, gap, tol)
		}
	}
	v.within(c.run.wallMS(), c.budget+slack, allowFor(c.run), "the run took %.0f ms for a %.0f ms budget", c.run.wallMS(), c.budget)
	g.judge("fanout_shrinking", v, "budget 1100 ms, four calls of 200 ms: the partner received X-Budget-Ms %s (want about 1100, 900, 700, 500, one call after another); the run took %.0f ms",
		logged(log), c.run.wallMS())
}

// checkFanoutCut checks the case that runs out of budget: a call carrying
// less than the partner's 200 ms of work must be cut when the budget ends
// (the partner logs it as gone, not done), and no call may be sent with
// nothing left.
func (g *grader) checkFanoutCut(c *fanned) {
	var v verdict
	var ends []string
	short := false // some call carried less than the partner's work
	for i, e := range c.log {
		if e.BudgetMs == nil {
			ends = append(ends, fmt.Sprintf("call %d: no X-Budget-Ms, %s", i+1, e.End))
			continue
		}
		ends = append(ends, fmt.Sprintf("call %d: %d ms, %s after %.0f ms", i+1, *e.BudgetMs, e.End, e.DurationMs))
		v.need(*e.BudgetMs > 0, "a call was sent with nothing left (X-Budget-Ms %d)", *e.BudgetMs)
		if float64(*e.BudgetMs) < fanoutWork-25 {
			short = true
		}
		// A call carrying b < 200 ms whose answer fanout read (received is
		// set) was read 200 − b ms past its budget. A timer that late is
		// possible on a loaded machine up to 100 ms, and later by as late as
		// the machine measurably made timers while the run lasted: the
		// tool's threads' CPU wait, the lab's own timer lag, and how late
		// the partner itself sent the answer of its 200 ms of work. Those
		// are timing misses (run again, inconclusive when the machine is
		// busy again); beyond them the call was not cut. (The partner's own
		// "done" is no proof: a write into a socket the client has just
		// closed succeeds.)
		if b := float64(*e.BudgetMs); i < len(c.made) && c.made[i].Received != nil && b < fanoutWork-25 {
			late := fanoutWork - b
			explained := 100 + loadLate(c.run) + max(e.DurationMs-fanoutWork, 0)
			but := "a call carrying %d ms read the answer of the partner's 200 ms of work %.0f ms past its budget, more than the %.0f ms the machine can have made its timer late: fanout waited past the budget instead of cutting it"
			if late > explained {
				v.need(false, but, *e.BudgetMs, late, explained)
			} else {
				v.slow("a call carrying %d ms read the answer of the partner's 200 ms of work %.0f ms past its budget (the machine can have made its timer %.0f ms late)", *e.BudgetMs, late, explained)
			}
		}
	}
	if !short {
		v.slow("no call ran short of budget (the first calls took long), so the cut could not be seen")
	}
	v.within(c.run.wallMS(), c.budget+slack, allowFor(c.run), "the run took %.0f ms for a 500 ms budget", c.run.wallMS())
	g.judge("fanout_budget_cut", v, "budget 500 ms, four calls of 200 ms: the partner saw %s; the run took %.0f ms",
		joinOr(ends, "no call"), c.run.wallMS())
}

// checkFanoutTimes compares the calls' elapsed_ms with the grader's clock
// and the partner's: no more than the process lived, together no more than
// its wall time, a call the partner answered no less than its 200 ms.
func (g *grader) checkFanoutTimes(cases map[string]*fanned) {
	var v verdict
	var seen []string
	for _, name := range []string{"fits", "out"} {
		c := cases[name]
		wall, total := c.run.wallMS(), 0.0
		for _, call := range c.out.Calls {
			total += call.ElapsedMS
			v.need(call.ElapsedMS <= wall+rounding, "a call reported %.1f ms, more than the %.0f ms the process lived", call.ElapsedMS, wall)
		}
		if len(c.log) == len(c.made) {
			for _, m := range c.made {
				v.need(m.Received == nil || m.ElapsedMS >= fanoutWork-rounding, "a call reported %.1f ms for an answer the partner sent after 200 ms", m.ElapsedMS)
			}
		}
		v.need(total <= wall+rounding, "budget %.0f: the calls' elapsed_ms add up to %.1f ms, more than the %.0f ms the process lived", c.budget, total, wall)
		v.within(wall, 2*(total+300), allowFor(c.run), "budget %.0f: the calls report %.1f ms of a %.0f ms run", c.budget, total, wall)
		seen = append(seen, fmt.Sprintf("budget %.0f: calls %.1f ms together, wall %.0f ms", c.budget, total, wall))
	}
	g.judge("fanout_elapsed_honest", v, "%s", strings.Join(seen, "; "))
}

// joinOr joins problems, or returns fine when there are none.
func joinOr(problems []string, fine string) string {
	if len(problems) == 0 {
		return fine
	}
	return strings.Join(problems, "; ")
}

// lostInTransit reports whether the calls fanout says it sent and the
// partner never received are its last ones, unanswered, with less than a
// second of budget each: calls a busy machine may cut before they arrive.
func lostInTransit(c *fanned) bool {
	if len(c.log) >= len(c.made) {
		return false
	}
	for _, m := range c.made[len(c.log):] {
		if m.Received != nil || m.SentBudgetMS >= 1000 {
			return false
		}
	}
	return true
}

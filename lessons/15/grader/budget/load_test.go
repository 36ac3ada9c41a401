package budget

import (
	"slices"
	"strings"
	"testing"
	"time"

	"quoteflowlab.dev/kit/runner"

	"quoteflowlab.dev/provider"
)

// The load fixes of three properties: a miss a busy machine can cause is a
// timing miss (re-run, inconclusive when busy twice); the same check still
// fails hard when the miss is larger than load explains.

func judged(t *testing.T, g *grader, name string) finding {
	t.Helper()
	f, ok := g.findings[name]
	if !ok {
		t.Fatalf("%s was not judged", name)
	}
	return f
}

func newTestGrader() *grader {
	return &grader{findings: map[string]finding{}, todo: map[string]bool{}}
}

func TestReadLeftWithoutASecondAttemptIsATimingMiss(t *testing.T) {
	one := []provider.PartnerLogEntry{{End: "done", Status: 503, DurationMs: 701}}
	two := append(one, provider.PartnerLogEntry{End: "gone", DurationMs: 300})
	for _, c := range []struct {
		name      string
		log       []provider.PartnerLogEntry
		ok        bool
		wantOK    bool
		wantTimed bool
	}{
		{"one attempt, looks right", one, false, false, true},
		{"two attempts, second cut", two, false, true, false},
		{"two attempts, second read the whole answer", two, true, false, false},
	} {
		g := newTestGrader()
		g.checkReadLeft(&retried{
			job: retryJob{callMS: 700, fail: 1, budgetMS: 1000},
			run: quietRun(1100),
			out: retryOut{OK: c.ok, Attempts: len(c.log), StoppedReason: "budget"},
			log: provider.PartnerLog{Calls: c.log},
		})
		f := judged(t, g, "retry_read_left")
		if f.ok != c.wantOK || !f.ok && f.timed != c.wantTimed {
			t.Errorf("%s: ok %v timed %v, want ok %v timed %v (%s)", c.name, f.ok, f.timed, c.wantOK, c.wantTimed, f.but)
		}
	}
}

// A tool that pays only its calls from the budget stops in time when a busy
// partner is slow to answer them: such a run shows nothing about the waits
// and is a timing miss (run again), never a pass; with quick calls the same
// report is judged as it is.
func TestWaitsChargedNeedsQuickCalls(t *testing.T) {
	for _, c := range []struct {
		name      string
		log       []provider.PartnerLogEntry
		wall      float64
		wantOK    bool
		wantTimed bool
	}{
		{"quick calls, in time", failed503(2, 0, 10, 20, 30), 1450, true, false},
		{"slow partner, looks in time: tested nothing", failed503(380, 0, 390, 780, 1170), 2100, false, true},
		{"slow partner, past the budget: run again", failed503(380, 0, 390, 780, 1170), 3645, false, true},
		{"quick calls, far past the budget", failed503(2, 0, 10, 20, 30), 4500, false, false},
	} {
		g := newTestGrader()
		g.checkWaitsCharged(map[string]*retried{"budget": {
			job: retryJob{fail: 100, budgetMS: 1500, attempts: 30, baseMS: 200, minMS: 100},
			run: quietRun(c.wall),
			out: retryOut{Attempts: len(c.log), WaitsMS: []float64{124.6, 332.3, 354.8}, StoppedReason: "budget"},
			log: provider.PartnerLog{Calls: c.log},
		}})
		f := judged(t, g, "retry_waits_charged")
		if f.ok != c.wantOK || !f.ok && f.timed != c.wantTimed {
			t.Errorf("%s: ok %v timed %v, want ok %v timed %v (%s)", c.name, f.ok, f.timed, c.wantOK, c.wantTimed, f.but)
		}
	}
}

func TestShrinkingToleranceGrowsWithTheToolsCPUWait(t *testing.T) {
	b := func(v int64) *int64 { return &v }
	// The tool's gap between budgets is 233 ms, the partner's 207: 26 ms apart.
	log := []provider.PartnerLogEntry{{ArrivalMs: 0, BudgetMs: b(1099)}, {ArrivalMs: 207, BudgetMs: b(866)}}
	for _, c := range []struct {
		name    string
		starved float64
		wantOK  bool
	}{
		{"not held back: 26 ms is over 25", 0, false},
		{"held back 40 ms: within 25 + 25", 40, true},
		{"held back 400 ms: the excuse stops at 25 ms", 400, true},
	} {
		g := newTestGrader()
		r := quietRun(700)
		r.starvedMS = c.starved
		g.checkShrinking(&fanned{budget: 1100, n: 2, run: r, log: log})
		if f := judged(t, g, "fanout_shrinking"); f.ok != c.wantOK {
			t.Errorf("%s: ok %v, want %v (%s)", c.name, f.ok, c.wantOK, f.but)
		}
	}
}

func TestTotalShorterThanTheArrivalSpan(t *testing.T) {
	c := deadlineCase{budget: 1600, minMS: 100, targets: []dlTarget{{delayMS: 600}, {delayMS: 600}}}
	urls := []string{"u1", "u2"}
	for _, tc := range []struct {
		name      string
		span      float64
		wantTimed bool
	}{
		{"stamps 67 ms late: timing miss", 1268, true},
		{"stamps 500 ms late: made-up total", 1701, false},
	} {
		var v verdict
		m := newModel(&v, "deadline")
		out := deadlineOut{BudgetMS: 1600, TotalMS: 1201, Calls: []deadlineCall{
			{URL: "u1", OK: true, Phase: "done", ElapsedMS: 600.5, ReadTimeoutMS: 1600},
			{URL: "u2", OK: true, Phase: "done", ElapsedMS: 600.5, ReadTimeoutMS: 999},
		}}
		modelDeadline(m, c, urls, out, quietRun(1300), []arrival{{at: 0}, {at: tc.span}})
		if v.ok() {
			t.Fatalf("%s: no miss seen", tc.name)
		}
		if len(v.buts) != 1 {
			t.Fatalf("%s: misses %v, want the span alone", tc.name, v.buts)
		}
		if timed := !v.hard; timed != tc.wantTimed {
			t.Errorf("%s: timed %v, want %v (%v)", tc.name, timed, tc.wantTimed, v.buts)
		}
	}
}

// The CPU wait a tool's threads report widens a pass bound by 25 ms at
// most: a tool that lies by 60 ms is not excused by a wait of its own making.
func TestTheCPUWaitExcusesAtMost25ms(t *testing.T) {
	b := func(v int64) *int64 { return &v }
	// Call 2 carries 60 ms more than the 1099 ms less the 207 ms gap.
	log := []provider.PartnerLogEntry{{ArrivalMs: 0, BudgetMs: b(1099)}, {ArrivalMs: 207, BudgetMs: b(952)}}
	g := newTestGrader()
	r := quietRun(700)
	r.starvedMS = 5000
	g.checkShrinking(&fanned{budget: 1100, n: 2, run: r, log: log})
	if f := judged(t, g, "fanout_shrinking"); f.ok {
		t.Errorf("a budget 60 ms too large passed with 5 s of CPU wait (%s)", f.detail)
	}
}

// A tool that used the CPU, or had more threads ready to run than it got
// CPUs for most of its run, computed: its CPU wait is its own doing.
func TestComputedRuns(t *testing.T) {
	for _, c := range []struct {
		res  runner.Result
		want bool
	}{
		{runner.Result{Elapsed: time.Second, CPU: 20 * time.Millisecond, Starved: 0.1}, false},
		{runner.Result{Elapsed: time.Second, CPU: 30 * time.Millisecond, Starved: 0.6}, false}, // held back by others
		{runner.Result{Elapsed: time.Second, CPU: 600 * time.Millisecond, Starved: 0.2}, true},
		{runner.Result{Elapsed: time.Second, CPU: 145 * time.Millisecond, Starved: 2.5}, true}, // eight spinning threads, most of them waiting
		{runner.Result{Elapsed: 50 * time.Millisecond, CPU: 40 * time.Millisecond, Starved: -1}, false},
		{runner.Result{Elapsed: 1550 * time.Millisecond, CPU: 6 * time.Millisecond, Starved: 1.3}, false}, // idle runtime threads of a waiting tool, load 16
	} {
		if got := computed(c.res); got != c.want {
			t.Errorf("CPU %v in %v, starved %.1f: computed %v, want %v", c.res.CPU, c.res.Elapsed, c.res.Starved, got, c.want)
		}
	}
}

// On a busy machine the last attempt's answer can come after the budget
// ran out: the partner logged a success the tool never read. "attempts" is
// then as true as "budget" (the run lasted its budget); a tool that took
// the success for a failure and stopped at once is still wrong.
func TestLastAttemptCutByTheBudget(t *testing.T) {
	j := retryJob{callMS: 111, fail: 2, budgetMS: 897, attempts: 3, baseMS: 30}
	log := provider.PartnerLog{Calls: []provider.PartnerLogEntry{
		{ArrivalMs: 0, Status: 503, End: "done", DurationMs: 111},
		{ArrivalMs: 130, Status: 503, End: "done", DurationMs: 111},
		{ArrivalMs: 290, Status: 200, End: "done", DurationMs: 111},
	}}
	for _, c := range []struct {
		name    string
		stopped string
		wall    float64
		want    bool
	}{
		{"cut at the budget, attempts", "attempts", 898, true},
		{"cut at the budget, budget", "budget", 898, true},
		{"success taken for a failure", "attempts", 420, false},
	} {
		var v verdict
		m := newModel(&v, c.name)
		modelRetry(m, &retried{job: j, run: quietRun(c.wall), log: log,
			out: retryOut{Attempts: 3, WaitsMS: []float64{18, 49}, StoppedReason: c.stopped, ElapsedMS: c.wall - 1}})
		okField := !slices.ContainsFunc(v.buts, func(b string) bool { return strings.Contains(b, "after the partner's success") })
		if okField != c.want {
			t.Errorf("%s: ok field accepted %v, want %v (%v)", c.name, okField, c.want, v.buts)
		}
	}
}

// retry_floor: a partner too slow to let more than the floor's attempts
// fit shows nothing about the floor (a timing miss, run again), never a
// pass; with 100 ms answers the count and timing of attempts decide.
func TestFloorNeedsQuickCalls(t *testing.T) {
	for _, c := range []struct {
		name      string
		log       []provider.PartnerLogEntry
		wantOK    bool
		wantTimed bool
	}{
		{"quick calls, floor kept", failed503(101, 0, 110, 230, 290), true, false},
		{"slow partner, one attempt: tested nothing", failed503(990, 0), false, true},
		{"quick calls, floor ignored", failed503(101, 0, 110, 230, 350, 470, 590, 710), false, false},
	} {
		g := newTestGrader()
		g.checkRetryFloor(&retried{
			job: retryJob{callMS: 100, fail: 100, budgetMS: 1000, attempts: 20, baseMS: 1, minMS: 700},
			run: quietRun(1000),
			out: retryOut{Attempts: len(c.log), StoppedReason: "budget"},
			log: provider.PartnerLog{Calls: c.log},
		})
		f := judged(t, g, "retry_floor")
		if f.ok != c.wantOK || !f.ok && f.timed != c.wantTimed {
			t.Errorf("%s: ok %v timed %v, want ok %v timed %v (%s)", c.name, f.ok, f.timed, c.wantOK, c.wantTimed, f.but)
		}
	}
}

// failed503 is a partner log of calls, one per arrival (ms), each ending
// in a 503 after durMS.
func failed503(durMS float64, arrivals ...float64) []provider.PartnerLogEntry {
	var log []provider.PartnerLogEntry
	for _, a := range arrivals {
		log = append(log, provider.PartnerLogEntry{ArrivalMs: a, End: "done", Status: 503, DurationMs: durMS})
	}
	return log
}

// A tool that kept the CPUs busy itself gets none of its properties, even
// one whose bounds its numbers happened to meet: its own threads' waits can
// sit where no clock sees them (between reading the budget left and sending
// the call that carries it), so a lie can look like the truth. Another
// tool's properties are not touched, nor the tool's build.
func TestASpinningToolGetsNoProperty(t *testing.T) {
	g := &grader{findings: map[string]finding{
		"build_fanout":      {ok: true},
		"fanout_shrinking":  {ok: true, detail: "the partner received X-Budget-Ms [1099, 945, 732, 517]"},
		"fanout_budget_cut": {detail: "call 3 read past its budget", timed: true},
		"call_json":         {ok: true},
	}}
	g.spun("fanout")
	if f := g.findings["fanout_shrinking"]; !f.ok || f.but != "" {
		t.Errorf("fanout_shrinking failed though no run computed: %+v", f)
	}
	g.computed = "fanout used 344ms of CPU in a run of 563ms"
	g.spun("fanout")
	for _, name := range []string{"fanout_shrinking", "fanout_budget_cut"} {
		f := g.findings[name]
		if f.ok || f.timed || f.busy || !strings.Contains(f.but, "kept the CPUs busy itself (fanout used 344ms") {
			t.Errorf("%s after a computed run: ok %v, timed %v, busy %v, but %q; want failed outright, saying why", name, f.ok, f.timed, f.busy, f.but)
		}
	}
	if !g.findings["call_json"].ok || !g.findings["build_fanout"].ok {
		t.Errorf("another tool's property or the build was failed: %+v", g.findings)
	}
}

// A call not made because the calls before took the budget down below the
// floor is a timing miss whatever its target, a refused one too: a CI run
// at load 30 stretched a 305 ms trickle to 600 ms, and the refused call
// after it was skipped. Skipped with the budget still there, it is a hard
// miss.
func TestASkipAfterSlowCallsIsATimingMiss(t *testing.T) {
	c := deadlineCase{budget: 688, minMS: 93, targets: []dlTarget{{dripMS: 305}, {refused: true}}}
	urls := []string{"u1", "u2"}
	for _, tc := range []struct {
		name      string
		first     float64 // what call 1 took, by its report
		wantTimed bool
	}{
		{"call 1 took 600 ms: 88 ms left, under the floor", 600, true},
		{"call 1 took 305 ms: 383 ms left, skipped anyway", 305, false},
	} {
		var v verdict
		m := newModel(&v, "deadline")
		out := deadlineOut{BudgetMS: 688, TotalMS: tc.first, Skipped: 1, Exceeded: true, Calls: []deadlineCall{
			{URL: "u1", OK: true, Phase: "done", ElapsedMS: tc.first, ReadTimeoutMS: 688},
			{URL: "u2", OK: false, Phase: "no_budget", ElapsedMS: 0, ReadTimeoutMS: 0},
		}}
		modelDeadline(m, c, urls, out, quietRun(tc.first+5), []arrival{{at: 0}})
		if v.ok() {
			t.Fatalf("%s: no miss seen", tc.name)
		}
		if timed := !v.hard; timed != tc.wantTimed {
			t.Errorf("%s: timed %v, want %v (%v)", tc.name, timed, tc.wantTimed, v.buts)
		}
	}
}

// A busy machine can wake a tool's timer late without its threads having
// waited for a CPU (load 15: a fanout read a 200 ms answer with 58 ms of
// budget; a retry slept 400 ms past its draw). Where the lab's own timer
// was that late while the run lasted (injected here as the run's lagMS, no
// real load), the miss is a timing miss: run again, inconclusive when busy
// again. On a quiet machine the same numbers fail.
func TestALateTimerOnABusyMachineIsATimingMiss(t *testing.T) {
	b := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name      string
		lag       float64
		wantTimed bool
	}{
		{"quiet machine", 1, false},
		{"the lab's timer 300 ms late", 300, true},
	} {
		g := newTestGrader()
		r := quietRun(765)
		r.lagMS = c.lag
		log := []provider.PartnerLogEntry{
			{ArrivalMs: 0, BudgetMs: b(499), End: "done", DurationMs: 204},
			{ArrivalMs: 215, BudgetMs: b(274), End: "done", DurationMs: 215},
			{ArrivalMs: 442, BudgetMs: b(58), End: "done", DurationMs: 238},
		}
		recv := func(v float64) *float64 { return &v }
		made := []fanoutCall{{SentBudgetMS: 499, Received: recv(499), ElapsedMS: 205}, {SentBudgetMS: 274, Received: recv(274), ElapsedMS: 216}, {SentBudgetMS: 58, Received: recv(58), ElapsedMS: 239}}
		g.checkFanoutCut(&fanned{budget: 500, n: 4, run: r, log: log, made: made, out: fanoutOut{Calls: append(made, fanoutCall{})}})
		f := judged(t, g, "fanout_budget_cut")
		if f.ok || f.timed != c.wantTimed {
			t.Errorf("fanout, %s: ok %v timed %v, want a miss, timed %v (%s)", c.name, f.ok, f.timed, c.wantTimed, f.but)
		}

		x := &retried{job: retryJob{fail: 100, budgetMS: 858, attempts: 2, baseMS: 1500, minMS: 139}, run: quietRun(1200),
			out: retryOut{Attempts: 2, WaitsMS: []float64{1126.4}, StoppedReason: "budget"}, log: provider.PartnerLog{Calls: failed503(1, 0, 1127)}}
		x.run.starvedMS, x.run.lagMS = 267, c.lag
		but, timed := unpaid(x)
		if but == "" || timed != c.wantTimed {
			t.Errorf("retry, %s: %q timed %v, want a miss, timed %v", c.name, but, timed, c.wantTimed)
		}
	}
}

// The partner's own log of a call cut by its read limit says how long the
// call was held: a limit that fired at half and a sleep before printing
// (the wall clock looks right) fail; a call held the whole limit passes;
// one held short by no more than a busy machine's measured lateness is a
// timing miss.
func TestACutCallIsHeldItsWholeLimitByThePartner(t *testing.T) {
	for _, c := range []struct {
		name      string
		held, lag float64
		want      string
	}{
		{"held the limit", 499, 1, "pass"},
		{"half, then slept", 250, 1, "fail"},
		{"half, then slept, on a busy machine", 250, 100, "fail"},
		{"180 ms short, lab timer 200 ms late", 320, 200, "miss"},
	} {
		r := quietRun(505)
		r.lagMS = c.lag
		log := provider.PartnerLog{Calls: []provider.PartnerLogEntry{{End: "client_gone", Status: 0, DurationMs: c.held}}}
		g := newTestGrader()
		g.checkCut("call_read_limit", callOut{Phase: "read", ElapsedMS: 502.4}, r, log, "GET /call?ms=4000 --read 0.5", "not cut", "")
		f := judged(t, g, "call_read_limit")
		got := "pass"
		switch {
		case !f.ok && f.timed:
			got = "miss"
		case !f.ok:
			got = "fail"
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s (%s)", c.name, got, c.want, f.but)
		}
	}
}

// A skipped call's read_timeout_ms is the budget left when it was
// skipped: negative once the budget is spent (a cut read can end a little
// after it), never below the budget less the run's whole life.
func TestASkippedCallMayReportANegativeBudgetLeft(t *testing.T) {
	c := deadlineCase{budget: 500, minMS: 50, targets: []dlTarget{{delayMS: 2000}, {delayMS: 10}}}
	for _, tc := range []struct {
		left   float64
		wantOK bool
	}{{-3, true}, {-400, false}} {
		var v verdict
		m := newModel(&v, "deadline")
		out := deadlineOut{BudgetMS: 500, TotalMS: 503, Skipped: 1, Exceeded: true, Calls: []deadlineCall{
			{URL: "u1", Phase: "read", ElapsedMS: 502.8, ReadTimeoutMS: 499},
			{URL: "u2", Phase: "no_budget", ElapsedMS: 0, ReadTimeoutMS: tc.left},
		}}
		modelDeadline(m, c, []string{"u1", "u2"}, out, quietRun(506), []arrival{{at: 0}})
		bad := slices.ContainsFunc(v.buts, func(b string) bool { return strings.Contains(b, "read_timeout_ms of call 2") })
		if bad == tc.wantOK {
			t.Errorf("read_timeout_ms %.0f on a skipped call: accepted %v, want %v (%v)", tc.left, !bad, tc.wantOK, v.buts)
		}
	}
}

// deadline's call cut by its read limit was held that long by the
// partner, by its own log: a limit that fired at half fails, however the
// times it printed add up.
func TestDeadlinesCutCallIsHeldByThePartner(t *testing.T) {
	c := deadlineCase{budget: 500, minMS: 50, targets: []dlTarget{{delayMS: 2000}}}
	for _, tc := range []struct {
		held   float64
		wantOK bool
	}{{497, true}, {250, false}} {
		var v verdict
		m := newModel(&v, "deadline")
		out := deadlineOut{BudgetMS: 500, TotalMS: 501, Exceeded: true, Calls: []deadlineCall{
			{URL: "u1", Phase: "read", ElapsedMS: 500.6, ReadTimeoutMS: 499},
		}}
		modelDeadline(m, c, []string{"u1"}, out, quietRun(506), []arrival{{at: 0, end: "client_gone", dur: tc.held}})
		bad := slices.ContainsFunc(v.buts, func(b string) bool { return strings.Contains(b, "the partner held the call only") })
		if bad == tc.wantOK || bad && !v.hard {
			t.Errorf("held %.0f ms of a 499 ms limit: accepted %v (hard %v), want %v (%v)", tc.held, !bad, v.hard, tc.wantOK, v.buts)
		}
	}
}

// A run killed at its time bound fails its tool's properties, unless the
// machine held it back then (a load of 43 kept a correct retry of a
// 1155 ms budget running past 7 s): then it is a timing miss, run again.
func TestAKillWhileHeldBackIsATimingMiss(t *testing.T) {
	for _, held := range []bool{false, true} {
		g := newTestGrader()
		g.failRun(run{killed: true, heldUp: held, problem: "retry was still running after 7s and was killed"}, "retry was still running after 7s and was killed", "retry_json", "retry_model")
		f := judged(t, g, "retry_model")
		if f.ok || f.timed != held {
			t.Errorf("held back %v: ok %v timed %v, want a miss, timed %v", held, f.ok, f.timed, held)
		}
	}
}

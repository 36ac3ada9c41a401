package budget

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// jitterSample is the jitter clients' results for a tool whose cap for
// wait k (1-based) is capFor(k): each wait drawn uniformly in [0, cap],
// then made late by late ms; each run starved as given and with the lab's
// timer lag given (a busy machine, injected: no real load).
func jitterSample(seed uint64, capFor func(k int) float64, late, starvedMS, lagMS float64) map[string]*retried {
	r := rand.New(rand.NewPCG(seed, 15))
	res := map[string]*retried{}
	for i := range jitterRuns {
		var waits []float64
		for k := 1; k <= jitterWaits; k++ {
			waits = append(waits, r.Float64()*capFor(k)+late)
		}
		run := quietRun(3000)
		run.starvedMS, run.lagMS = starvedMS, lagMS
		res[fmt.Sprintf("jitter%02d", i)] = &retried{job: jitterJob, run: run,
			out: retryOut{Attempts: jitterWaits + 1, WaitsMS: waits, StoppedReason: "attempts"}}
	}
	return res
}

// The caps must double, judged on the jitter sample's waits 3 to 5: caps
// that grow linearly or stop doubling fail outright on a quiet machine,
// whatever the draws; a correct tool passes. A wrong tool whose waits a
// busy machine made late enough to look like larger draws is a timing
// miss (run again, inconclusive when busy again), never a pass.
func TestCapsMustDouble(t *testing.T) {
	base := jitterJob.base()
	doubling := func(k int) float64 { return capOf(base, k-1) }
	linear := func(k int) float64 { return base * float64(k) }
	stops := func(k int) float64 { return capOf(base, min(k-1, 2)) }
	// want: "pass", "fail" (outright), "miss" (a timing miss); "not
	// fail": a pass or a timing miss; "not pass": a failure or a timing
	// miss (run again).
	for _, c := range []struct {
		name          string
		capFor        func(int) float64
		late, starved float64
		lag           float64
		want          string
	}{
		{"doubling, quiet", doubling, 1, 0, 1, "pass"},
		{"doubling, timers 300 ms late on a busy machine", doubling, 300, 20, 400, "not fail"},
		{"linear, quiet", linear, 1, 0, 1, "fail"},
		{"stops doubling, quiet", stops, 1, 0, 1, "fail"},
		{"linear, timers 400 ms late on a busy machine", linear, 400, 50, 400, "not pass"},
		{"stops doubling, timers 400 ms late on a busy machine", stops, 400, 50, 400, "not pass"},
		// Late enough to look doubled by what it measured: a timing miss.
		{"linear, timers 700 ms late on a busy machine", linear, 700, 50, 700, "miss"},
	} {
		for seed := range uint64(50) {
			var v verdict
			checkDoubling(jitterSample(seed, c.capFor, c.late, c.starved, c.lag), &v)
			got := "pass"
			switch {
			case v.hard:
				got = "fail"
			case !v.ok():
				got = "miss"
			}
			if got != c.want && (c.want != "not fail" || got == "fail") && (c.want != "not pass" || got == "pass") {
				t.Fatalf("%s (seed %d): %s, want %s (%v)", c.name, seed, got, c.want, v.buts)
			}
		}
	}
}

// Too few waits to judge (clients that stopped early) fail, unless the
// partner's own log shows its answers took the budget.
func TestDoublingNeedsEveryClientsWaits(t *testing.T) {
	res := jitterSample(1, func(k int) float64 { return capOf(jitterJob.base(), k-1) }, 1, 0, 1)
	x := res["jitter03"]
	x.out.WaitsMS, x.out.StoppedReason = x.out.WaitsMS[:2], "budget"
	var v verdict
	checkDoubling(res, &v)
	if v.ok() || !v.hard {
		t.Fatalf("a client stopped after 3 attempts on quick calls: ok %v, hard %v, want a failure (%v)", v.ok(), v.hard, v.buts)
	}
	x.log.Calls = failed503(700, 0, 800, 1700)
	v = verdict{}
	checkDoubling(res, &v)
	if v.ok() || v.hard {
		t.Fatalf("a client the partner's slow answers ran out of budget: ok %v, hard %v, want a timing miss (%v)", v.ok(), v.hard, v.buts)
	}
}

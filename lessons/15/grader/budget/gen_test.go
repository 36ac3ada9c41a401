package budget

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestDrawsCoverEveryClass: for any seed, one grading's drawn cases hold
// every class of each dimension that the contract's outcome depends on,
// each certain on the model's ideal clock; the found gaps are among them by
// construction: a deadline run whose first call starts below --min-ms, a
// retry run that meets a refused connection with attempts to spare, and
// the drawn-wait sample, whose caps exceed what is left.
func TestDrawsCoverEveryClass(t *testing.T) {
	for seed := range uint64(300) {
		r := func(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

		dl := drawDeadlineCases(r(streamDeadline))
		firstBelow, classes := false, map[string]bool{}
		for name, c := range dl {
			if c.margin() < 250 {
				t.Fatalf("seed %d: %s %s is not certain (margin %.0f)", seed, name, c, c.margin())
			}
			if c.minMS > c.budget {
				firstBelow = true
			}
			if c.minMS > 0 && c.minMS >= c.budget {
				continue // its targets are never called
			}
			phases, _ := c.plan()
			for i, tg := range c.targets {
				classes[targetClass(tg, phases[i])] = true
			}
		}
		if !firstBelow {
			t.Errorf("seed %d: no deadline run starts below --min-ms", seed)
		}
		// answered, hung past the budget, a body trickled within and past
		// it, 4xx, 5xx, refused, reset, the blackhole.
		if len(classes) < 9 {
			t.Errorf("seed %d: deadline targets cover %v only", seed, classes)
		}

		rt := drawRetryJobs(r(streamRetry))
		refused, noAttempt := false, false
		for name, j := range rt {
			if j.refused && j.attempts >= 2 && j.minMS < j.budgetMS {
				refused = true
			}
			if j.expect == "budget" && j.sure && j.attemptsWant == 0 {
				noAttempt = true
			}
			if got := (&j).certain(); got != j.expect {
				t.Errorf("seed %d: %s expects %q, certain() says %q", seed, name, j.expect, got)
			}
		}
		if !refused || !noAttempt {
			t.Errorf("seed %d: retry draws: a refused connection with attempts to spare %v, --min-ms above the budget %v", seed, refused, noAttempt)
		}
		for name, j := range drawWaitJobs(r(streamRetry)) {
			if left := float64(j.budgetMS - j.minMS); j.base() <= left || left/j.base() < 0.75 {
				t.Errorf("seed %d: %s: cap %.0f against %.0f ms left: a cap-decider must never wait, a correct tool mostly must", seed, name, j.base(), left)
			}
		}

		// fanout: the budget under one call's work, ending inside a later
		// call, and leaving every call time to spare; --connect left out,
		// short and long; each budget at least 30 ms from a call's end.
		fan := map[string]bool{}
		for name, c := range randomFanouts(r(streamFanout), randomFanoutRuns) {
			switch w := c.budget; {
			case w < fanoutWork:
				fan["first cut"] = true
			case w > float64(c.n)*fanoutWork+250:
				fan["all fit"] = true
			case c.n >= 2:
				fan["cut mid"] = true
			}
			if end := math.Mod(c.budget, fanoutWork); c.budget < float64(c.n)*fanoutWork && (end < 30 || end > fanoutWork-30) {
				t.Errorf("seed %d: %s %s ends %.0f ms into a call: too near a call's end to be certain", seed, name, c, end)
			}
			switch {
			case c.connect == 0:
				fan["connect default"] = true
			case c.connect < 1:
				fan["connect short"] = true
			default:
				fan["connect long"] = true
			}
		}
		for _, k := range []string{"first cut", "cut mid", "all fit", "connect default", "connect short", "connect long"} {
			if !fan[k] {
				t.Errorf("seed %d: no fanout draw of class %q (%v)", seed, k, fan)
			}
		}

		for name, c := range drawCallCases(r(streamCall), drawnCalls) {
			if !c.certain() {
				t.Errorf("seed %d: %s %s is not certain", seed, name, c)
			}
		}
	}
	// The same seed draws the same cases.
	a, b := drawDeadlineCases(rand.New(rand.NewPCG(7, streamDeadline))), drawDeadlineCases(rand.New(rand.NewPCG(7, streamDeadline)))
	if !reflect.DeepEqual(a, b) {
		t.Error("seed 7 drew different deadline cases twice")
	}
}

func targetClass(t dlTarget, phase string) string {
	switch {
	case t.code/100 == 4:
		return "4xx"
	case t.code/100 == 5:
		return "5xx"
	case t.dripMS > 0:
		return "drip " + phase
	case t.partner():
		return "ms " + phase
	}
	return t.word()
}

// TestCaseStringsRoundTrip: every drawn case's --case string reads back
// as the same case.
func TestCaseStringsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range drawDeadlineCases(r) {
		rc, err := ParseCase(c.Encode())
		if err != nil || !reflect.DeepEqual(rc.deadline, c) {
			t.Errorf("%s: read back as %+v, %v", c.Encode(), rc.deadline, err)
		}
	}
	for _, j := range drawRetryJobs(r) {
		rc, err := ParseCase(j.Encode())
		if err != nil || rc.retry.Encode() != j.Encode() || rc.retry.expect != j.expect {
			t.Errorf("%s: read back as %s (expect %q, want %q), %v", j.Encode(), rc.retry.Encode(), rc.retry.expect, j.expect, err)
		}
	}
	for _, c := range drawCallCases(r, drawnCalls) {
		rc, err := ParseCase(c.Encode())
		if err != nil || rc.call.Encode() != c.Encode() {
			t.Errorf("%s: read back as %s, %v", c.Encode(), rc.call.Encode(), err)
		}
	}
	for _, bad := range []string{"deadline?budget=300", "retry?url=nowhere&budget=100&attempts=2", "probe?x=1", "call?url=ms200&read=-1"} {
		if _, err := ParseCase(bad); err == nil || !strings.Contains(err.Error(), "--case") && !strings.Contains(err.Error(), "target") {
			t.Errorf("%q: error %v, want a usage error", bad, err)
		}
	}
}

// TestShrinkKeepsTheSmallestFailingForm: the shrink drops what does not
// matter to the failure and keeps what does, within its bound of runs.
func TestShrinkKeepsTheSmallestFailingForm(t *testing.T) {
	c := deadlineCase{budget: 400, minMS: 900, connect: 0.5, targets: []dlTarget{{delayMS: 100}, {refused: true}, {code: 404}}}
	// A tool that applies the floor from the second call only fails on
	// any case whose first call is below the floor.
	fails := func(s deadlineCase) bool { return s.minMS > s.budget }
	small, runs := shrink(c, deadlineCase.smaller, fails)
	if len(small.targets) != 1 || small.minMS != 900 || small.connect != 0 {
		t.Errorf("shrunk to %s in %d runs, want one target, --min-ms 900 and no --connect", small, runs)
	}
	if runs > maxShrinkRuns {
		t.Errorf("%d runs, more than %d", runs, maxShrinkRuns)
	}
}

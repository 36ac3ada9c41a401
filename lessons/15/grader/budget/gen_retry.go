package budget

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"strings"
)

// drawnRetries is how many drawn retry runs each grading adds, besides the
// drawn-wait sample: one per target class, and three for the flags.
const drawnRetries = retryTargetClasses + 3

// The classes of a retry case's target.
const (
	rRecovers  = iota // the partner fails fail times with a 503, then answers
	rAlways5xx        // the partner always fails (503), or a 500/502 at once
	r4xx              // a 4xx at once
	rRefused          // a closed port
	rReset            // a reset before any byte
	rHang             // headers after the budget: the first attempt is cut
	rDripFits         // the body trickled within the budget
	rDripCut          // the body trickled past the budget
	rHole             // the blackhole
	retryTargetClasses
)

// The classes of a retry case's flags.
const (
	rFloorNone  = iota // no --min-ms
	rFloorBelow        // --min-ms below the budget
	rFloorAbove        // --min-ms above the budget: no attempt at all
	rFloorClasses
)

const (
	baseSmall   = iota // every cap fits the budget many times over
	baseLarge          // caps longer than the budget left: the draw decides
	baseDefault        // --base-ms left out (100)
	baseClasses
)

// drawRetryJobs draws the retry runs of one grading: one for each target
// class, with attempts 2…5 and a floor none or below the budget (so that
// retrying shows), its base dealt from the base classes; then one with
// --min-ms above the budget (no attempt may start), one with --attempts 1
// and one with --base-ms left to its default, each with a target drawn.
func drawRetryJobs(r *rand.Rand) map[string]retryJob {
	bases := deck(r, baseClasses, retryTargetClasses)
	floors := deck(r, rFloorAbove, retryTargetClasses) // none, below
	out := map[string]retryJob{}
	for t := range retryTargetClasses {
		j := drawRetry(r, t, floors[t], bases[t])
		if j.attempts == 1 {
			j.attempts = 2 + r.IntN(4)
			j.expect = j.certain()
		}
		out[fmt.Sprintf("drawn%d", t)] = j
	}
	above := drawRetry(r, r.IntN(retryTargetClasses), rFloorAbove, r.IntN(baseClasses))
	one := drawRetry(r, r.IntN(retryTargetClasses), r.IntN(rFloorAbove), r.IntN(baseClasses))
	one.attempts = 1
	one.expect = one.certain()
	def := drawRetry(r, r.IntN(retryTargetClasses), r.IntN(rFloorAbove), baseDefault)
	for i, j := range []retryJob{above, one, def} {
		out[fmt.Sprintf("drawn%d", retryTargetClasses+i)] = j
	}
	return out
}

// drawRetry draws the numbers of one retry case of the classes given.
func drawRetry(r *rand.Rand, target, floor, base int) retryJob {
	j := retryJob{budgetMS: 500 + r.IntN(1000), attempts: 1 + r.IntN(5)}
	switch floor {
	case rFloorBelow:
		j.minMS = 20 + r.IntN(150)
	case rFloorAbove:
		j.minMS = j.budgetMS + 251 + r.IntN(500)
	}
	switch base {
	case baseSmall:
		j.baseMS = 1 + r.IntN(15)
	case baseLarge:
		j.baseMS = j.budgetMS/2 + r.IntN(j.budgetMS)
	}
	if r.IntN(3) > 0 {
		j.connect = float64(2+r.IntN(9)) / 10
	}
	switch target {
	case rRecovers:
		j.callMS = r.IntN(80)
		j.fail = r.IntN(j.attempts + 1) // sometimes more failures than attempts
	case rAlways5xx:
		if r.IntN(2) == 0 {
			j.callMS, j.fail = r.IntN(50), 100
		} else {
			j.code = []int{500, 502, 503}[r.IntN(3)]
		}
	case r4xx:
		j.code = []int{400, 404, 429}[r.IntN(3)]
	case rRefused:
		j.refused = true
	case rReset:
		j.reset = true
	case rHang:
		j.callMS = j.budgetMS + 250 + r.IntN(800)
	case rDripFits:
		j.dripMS = 1 + r.IntN(j.budgetMS/3)
	case rDripCut:
		j.dripMS = j.budgetMS + 250 + r.IntN(600)
	case rHole:
		j.hole = true
		j.connect = []float64{0.2, 0.3, 2, 3}[r.IntN(4)]
	}
	j.expect = j.certain()
	return j
}

// certain returns the stopped_reason the contract makes of the job with
// certainty on a quiet machine (and sets attemptsWant and sure), or ""
// when the draws of the waits decide it. It is certain when even every
// wait at its cap leaves 250 ms more than the floor, or when no attempt can
// start, or when the first attempt is cut by the budget.
func (j *retryJob) certain() string {
	budget, floor := float64(j.budgetMS), max(float64(j.minMS), 1)
	caps := func(waits int) float64 { // every wait at its cap
		t := 0.0
		for k := range waits {
			t += capOf(j.base(), k)
		}
		return t
	}
	j.sure, j.attemptsWant = false, 0
	var cost float64 // one failing attempt, on the ideal clock
	switch {
	case floor > budget+250:
		j.sure, j.attemptsWant = true, 0
		return "budget"
	case floor > budget-250:
		return ""
	case j.code/100 == 4:
		return "" // a tool may take a 4xx for final: the contract names no reason for it
	case j.hole:
		cost = min(secondsOr(j.connect, 1), budget)
		if secondsOr(j.connect, 1) > budget+250 {
			j.sure, j.attemptsWant = true, 1
			if j.attempts == 1 {
				return "" // attempts and budget are both true of it
			}
			return "budget"
		}
	case j.refused, j.reset, j.code != 0:
		cost = 0
	case j.work() > budget+250:
		// The first attempt is cut by the budget.
		j.sure, j.attemptsWant, j.cut = true, 1, true
		if j.attempts == 1 {
			return ""
		}
		return "budget"
	case j.work() > budget-250:
		return ""
	default:
		cost = j.work()
	}
	if j.partner() && j.fail < j.attempts {
		// It succeeds at attempt fail+1 if the failures and their waits leave room.
		if float64(j.fail+1)*cost+caps(j.fail) <= budget-floor-250 {
			j.sure, j.attemptsWant = true, j.fail+1
			return "ok"
		}
		return ""
	}
	if float64(j.attempts)*cost+caps(j.attempts-1) <= budget-floor-250 {
		j.sure, j.attemptsWant = true, j.attempts
		return "attempts"
	}
	return ""
}

// why says in a few words what makes the job's outcome certain.
func (j retryJob) why() string {
	switch {
	case j.expect == "budget" && j.attemptsWant == 0:
		return fmt.Sprintf("--min-ms %d is above the whole budget: no attempt may start", j.minMS)
	case j.expect == "budget":
		return "the first attempt runs past the budget"
	case j.expect == "ok":
		return fmt.Sprintf("it succeeds at attempt %d, and even waits at their caps leave room", j.fail+1)
	case j.expect == "attempts":
		return fmt.Sprintf("every attempt fails, and %d attempts with every wait at its cap fit in the budget", j.attempts)
	}
	return "the draws decide"
}

// Encode writes the job as a --case string.
func (j retryJob) Encode() string {
	q := url.Values{}
	q.Set("url", j.target().word())
	if j.fail != 0 {
		q.Set("fail", fmt.Sprint(j.fail))
	}
	q.Set("budget", fmt.Sprint(j.budgetMS))
	q.Set("attempts", fmt.Sprint(j.attempts))
	if j.baseMS != 0 {
		q.Set("base", fmt.Sprint(j.baseMS))
	}
	if j.minMS != 0 {
		q.Set("min", fmt.Sprint(j.minMS))
	}
	if j.connect != 0 {
		q.Set("connect", fmt.Sprint(j.connect))
	}
	return "retry?" + encodeOrdered(q, "url", "fail", "budget", "attempts", "base", "min", "connect")
}

// smaller lists the job's smaller forms: fewer attempts, fewer failures,
// a flag left out; each keeps its outcome certain when the job's was.
func (j retryJob) smaller() []retryJob {
	var out []retryJob
	add := func(s retryJob) {
		s.expect = s.certain()
		if j.expect == "" || s.expect != "" {
			out = append(out, s)
		}
	}
	if j.attempts > 1 {
		s := j
		s.attempts--
		if s.fail > s.attempts && s.fail < 100 {
			s.fail = s.attempts
		}
		add(s)
	}
	if j.fail > 0 && j.fail < 100 {
		s := j
		s.fail--
		add(s)
	}
	for _, drop := range []func(*retryJob){
		func(s *retryJob) { s.minMS = 0 },
		func(s *retryJob) { s.baseMS = 0 },
		func(s *retryJob) { s.connect = 0 },
	} {
		s := j
		drop(&s)
		if s != j && !s.hole {
			add(s)
		}
	}
	return out
}

// The drawn-wait sample: whether a call still fits after a wait is
// decided from the wait drawn, never from its cap. Each of waitRuns
// clients fails at once (a 503) under a budget B, a floor F and a base
// (the first cap) C larger than B − F: a tool that decides from the cap
// never waits, whatever the machine; a correct one waits, and makes its
// second attempt, when its draw is at most what is left less the floor,
// with probability about (B − F)/C ≥ 0.75 each. At least one of waitRuns
// clients must: a correct tool fails with probability under 0.25^10 ≈
// 1e-6; one that decides by the cap, every time.
const waitRuns = 10

// drawWaitJobs draws the sample's clients.
func drawWaitJobs(r *rand.Rand) map[string]retryJob {
	out := map[string]retryJob{}
	for i := range waitRuns {
		j := retryJob{callMS: 0, fail: 100, budgetMS: 500 + r.IntN(400), attempts: 2, minMS: 50 + r.IntN(100), connect: 1}
		left := float64(j.budgetMS - j.minMS)
		j.baseMS = int(math.Ceil(left / (0.78 + 0.04*r.Float64())))
		out[fmt.Sprintf("drawnwait%02d", i)] = j
	}
	return out
}

// checkWaitDrawn judges the drawn-wait sample: at least one client whose
// draw fitted must have waited and made its second attempt.
func (g *grader) checkWaitDrawn(res map[string]*retried) {
	var v verdict
	clients, waited, starved := 0, 0, 0
	var seen []string
	for _, name := range sortedNames(res) {
		if !strings.HasPrefix(name, "drawnwait") {
			continue
		}
		x := res[name]
		clients++
		if len(x.log.Calls) >= 2 && len(x.out.WaitsMS) >= 1 {
			waited++
		}
		if x.run.starvedMS > 100 {
			starved++
		}
		if len(seen) < 3 {
			seen = append(seen, fmt.Sprintf("--budget-ms %d --min-ms %d --base-ms %d: %d attempts, waits %v, stopped_reason %q",
				x.job.budgetMS, x.job.minMS, x.job.baseMS, x.out.Attempts, x.out.WaitsMS, x.out.StoppedReason))
		}
	}
	if clients == 0 {
		return
	}
	if waited == 0 && 2*starved > clients {
		// The first attempts, held back by a busy machine, left too little
		// for any draw to fit: the sample showed nothing.
		v.slow("none of %d clients waited, but most of them were held back by the machine (over 100 ms waiting for a CPU)", clients)
	} else {
		v.need(waited > 0, "none of %d clients waited: each stopped with %q where its draw (uniform in [0, cap], under what is left less the floor for about 3 in 4 of them) left room for a second attempt, as if it decided from the cap", clients, "budget")
	}
	g.judge("retry_wait_drawn", v, "%d clients failing at once, --attempts 2, a cap (--base-ms) over the budget less --min-ms: %d waited and made a second attempt (%s, …)",
		clients, waited, strings.Join(seen, "; "))
}

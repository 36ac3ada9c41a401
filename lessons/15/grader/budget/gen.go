package budget

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
)

// Drawn cases. Besides its fixed runs (each property's scenario), every
// tool that takes parameters (call, deadline, retry) is run on cases drawn
// from its input space, and every field of every run is compared with the
// model. The space is described by its classes, never by a list of cases:
//
//   - each flag relative to the others: deadline's --min-ms none, below,
//     at and above --budget-ms (above: not even the first call is made);
//     retry's the same, and its --base-ms small (every wait fits) or large
//     (a cap longer than the budget left); --connect shorter and longer
//     than --read, and left to its default;
//   - each partner behaviour: an answer within what is left, a 4xx, a 5xx,
//     a refused connection, a reset before any byte, headers later than
//     the limit (a hang, or an answer after the budget), a body trickled
//     past it or within it, the blackhole;
//   - attempts 1…5, failures before a success 0…attempts.
//
// Draws are stratified: the cases of one grading deal every class of each
// dimension at least once (a shuffled deck), and draw the numbers inside a
// class (a delay, a budget) from its range, far enough (250 ms) from every
// boundary that the contract's outcome is certain on a quiet machine. So
// every grading runs every class; the seed only changes the numbers and
// which classes meet in one case.
//
// Grading is deterministic per seed: one seed per grading (the report
// names it; `lab check E15 --seed N` draws the same cases again), and each
// tool draws from its own stream of it. A drawn case that fails the model
// (not on timing alone) is shrunk: its smaller forms (a target fewer, a
// flag left out, fewer attempts) are run, smallest first, and the smallest
// that still fails is reported with the command that replays it alone
// (`lab check E15 --case '...'`).
//
// Why not pgregory.net/rapid: its shrinker replays a property hundreds of
// times, and here each replay is a tool process run against a partner for
// up to a second and a half; a grading must stay under 15 s. The shrink
// below is a bounded greedy one over the case's own structure
// (maxShrinkRuns runs at most, only when a case failed).

// maxShrinkRuns bounds the runs one shrink may make.
const maxShrinkRuns = 6

// Streams of the grading's seed, one per tool.
const (
	streamCall     = 1
	streamDeadline = 2
	streamRetry    = 3
	streamFanout   = 4
)

// rng returns the random source of one tool's draws.
func (g *grader) rng(stream uint64) *rand.Rand { return rand.New(rand.NewPCG(g.seed, stream)) }

// deck deals n draws from k classes: every class at least once when n ≥ k,
// in an order drawn from r.
func deck(r *rand.Rand, k, n int) []int {
	var out []int
	for len(out) < n {
		round := r.Perm(k)
		out = append(out, round...)
	}
	return out[:n]
}

// shrink returns the smallest form of c that still fails, trying smaller
// forms (smaller, each already certain on the model's ideal clock) and
// keeping the first that fails, until none does or maxShrinkRuns runs were
// made; and how many runs it made.
func shrink[C any](c C, smaller func(C) []C, fails func(C) bool) (C, int) {
	runs := 0
	for {
		next, found := c, false
		for _, s := range smaller(c) {
			if runs >= maxShrinkRuns {
				return c, runs
			}
			runs++
			if fails(s) {
				next, found = s, true
				break
			}
		}
		if !found {
			return c, runs
		}
		c = next
	}
}

// replay is the command that runs one case alone.
func replay(prop, encoded string) string {
	return fmt.Sprintf("lab check E15 --only %s --case '%s'", prop, encoded)
}

// Case strings: the tool, then its parameters as a URL query, each target
// as a word: ms200 (the partner answers after 200 ms), ms0drip900 (headers
// at once, the body trickled over 900 ms), s404 (a 404 at once), refused,
// reset, hole. retry's target is one word, and fail=N its partner's
// failures before a success.

// targetWord writes a deadline target as its case word.
func (t dlTarget) word() string {
	switch {
	case t.hole:
		return "hole"
	case t.refused:
		return "refused"
	case t.reset:
		return "reset"
	case t.code != 0:
		return fmt.Sprintf("s%d", t.code)
	case t.dripMS > 0:
		return fmt.Sprintf("ms%ddrip%d", t.delayMS, t.dripMS)
	}
	return fmt.Sprintf("ms%d", t.delayMS)
}

// parseTarget reads a target word.
func parseTarget(w string) (dlTarget, error) {
	var t dlTarget
	switch {
	case w == "hole":
		t.hole = true
	case w == "refused":
		t.refused = true
	case w == "reset":
		t.reset = true
	case strings.HasPrefix(w, "s"):
		n, err := strconv.Atoi(w[1:])
		if err != nil || n < 200 || n > 599 {
			return t, fmt.Errorf("target %q: want s and a status, s404", w)
		}
		t.code = n
	case strings.HasPrefix(w, "ms"):
		d, drip, hasDrip := strings.Cut(w[2:], "drip")
		var err error
		if t.delayMS, err = strconv.Atoi(d); err != nil || t.delayMS < 0 || t.delayMS > 10000 {
			return t, fmt.Errorf("target %q: want ms and a delay up to 10000, ms200", w)
		}
		if hasDrip {
			if t.dripMS, err = strconv.Atoi(drip); err != nil || t.dripMS < 1 || t.dripMS > 10000 {
				return t, fmt.Errorf("target %q: want ms0drip900", w)
			}
		}
	default:
		return t, fmt.Errorf("target %q: want ms200, ms0drip900, s404, refused, reset or hole", w)
	}
	return t, nil
}

// Encode writes the case as a --case string.
func (c deadlineCase) Encode() string {
	q := url.Values{}
	q.Set("budget", fmt.Sprint(c.budget))
	if c.minMS != 0 {
		q.Set("min", fmt.Sprint(c.minMS))
	}
	if c.connect != 0 {
		q.Set("connect", fmt.Sprint(c.connect))
	}
	for _, t := range c.targets {
		q.Add("url", t.word())
	}
	return "deadline?" + encodeOrdered(q, "budget", "min", "connect", "url")
}

// encodeOrdered writes q with its keys in the order given.
func encodeOrdered(q url.Values, keys ...string) string {
	var parts []string
	for _, k := range keys {
		for _, v := range q[k] {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, "&")
}

// A parsed --case: which tool, and its case.
type replayCase struct {
	tool     string
	deadline deadlineCase
	retry    retryJob
	call     callCase
}

// ParseCase reads a --case string: call?..., deadline?... or retry?....
func ParseCase(s string) (replayCase, error) {
	tool, query, _ := strings.Cut(s, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return replayCase{}, fmt.Errorf("--case %q: %v", s, err)
	}
	rc := replayCase{tool: tool}
	num := func(key string, def int) (int, error) {
		v := q.Get(key)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 60000 {
			return 0, fmt.Errorf("--case: %s=%q: want a whole number of ms", key, v)
		}
		return n, nil
	}
	secs := func(key string) (float64, error) {
		v := q.Get(key)
		if v == "" {
			return 0, nil
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 60 {
			return 0, fmt.Errorf("--case: %s=%q: want seconds, 0.5", key, v)
		}
		return f, nil
	}
	var errs []error
	must := func(n int, err error) int { errs = append(errs, err); return n }
	mustF := func(f float64, err error) float64 { errs = append(errs, err); return f }
	switch tool {
	case "deadline":
		c := deadlineCase{budget: must(num("budget", 0)), minMS: must(num("min", 0)), connect: mustF(secs("connect"))}
		for _, w := range q["url"] {
			t, err := parseTarget(w)
			errs = append(errs, err)
			c.targets = append(c.targets, t)
		}
		if c.budget == 0 || len(c.targets) == 0 {
			errs = append(errs, fmt.Errorf("--case %q: deadline needs budget= and at least one url=", s))
		}
		rc.deadline = c
	case "retry":
		j := retryJob{budgetMS: must(num("budget", 0)), attempts: must(num("attempts", 0)), baseMS: must(num("base", 0)),
			minMS: must(num("min", 0)), fail: must(num("fail", 0)), connect: mustF(secs("connect"))}
		t, err := parseTarget(q.Get("url"))
		errs = append(errs, err)
		j.setTarget(t)
		if j.budgetMS == 0 || j.attempts == 0 {
			errs = append(errs, fmt.Errorf("--case %q: retry needs budget=, attempts= and url=", s))
		}
		j.expect = j.certain()
		rc.retry = j
	case "call":
		c := callCase{connect: mustF(secs("connect")), read: mustF(secs("read"))}
		t, err := parseTarget(q.Get("url"))
		errs = append(errs, err)
		c.setTarget(t, q.Get("fail") == "1")
		rc.call = c
	default:
		return rc, fmt.Errorf("--case %q: want call?…, deadline?… or retry?… (as a report prints it)", s)
	}
	for _, err := range errs {
		if err != nil {
			return rc, err
		}
	}
	return rc, nil
}

// The classes of a deadline case.
const (
	floorNone  = iota // no --min-ms
	floorBelow        // --min-ms below --budget-ms
	floorAt           // --min-ms equal to --budget-ms
	floorAbove        // --min-ms above --budget-ms: not even the first call
	floorClasses
)

const (
	tAnswers  = iota // an answer within what is left
	tQuick           // an answer at once
	t4xx             // a 4xx at once
	t5xx             // a 5xx at once
	tRefused         // a closed port
	tReset           // a reset before any byte
	tHang            // headers later than the budget left: the answer comes after the budget
	tDripFits        // the body trickled, within what is left
	tDripCut         // the body trickled past what is left
	tHole            // the blackhole
	targetClasses
)

// drawDeadlineCases draws the deadline runs of one grading: two cases
// for each of the --min-ms classes under which calls are made (none,
// below), each with two targets that leave budget behind them (an answer,
// a quick one, a 4xx, a 5xx, a refusal, a reset, a body trickled within
// what is left: dealt from a deck that holds each) and then one that may
// end it (a hang past the budget, a body trickled past it, the blackhole:
// dealt the same way), since after a cut nothing more is called; then one
// case with --min-ms at the budget and one above it (its first call below
// the floor), with targets of their own.
func drawDeadlineCases(r *rand.Rand) map[string]deadlineCase {
	leave := []int{tAnswers, tQuick, t4xx, t5xx, tRefused, tReset, tDripFits}
	end := []int{tHang, tDripCut, tHole}
	firsts, lasts := deck(r, len(leave), 8), deck(r, len(end), 4)
	out := map[string]deadlineCase{}
	for i, floor := range []int{floorNone, floorBelow, floorNone, floorBelow, floorAt, floorAbove} {
		var mine []int
		if floor == floorAt || floor == floorAbove {
			for range 1 + r.IntN(3) {
				mine = append(mine, r.IntN(targetClasses))
			}
		} else {
			mine = []int{leave[firsts[2*i]], leave[firsts[2*i+1]], end[lasts[i]]}
		}
		out[fmt.Sprintf("drawn%d", i)] = drawCertainDeadline(r, floor, mine)
	}
	return out
}

// drawCertainDeadline draws numbers for the classes given until the case
// is certain (every decision 250 ms from its boundary); there always are
// such numbers for the classes drawDeadlineCases deals.
func drawCertainDeadline(r *rand.Rand, floor int, classes []int) deadlineCase {
	for try := 1; ; try++ {
		c := drawDeadline(r, floor, classes)
		if c.margin() >= 250 {
			return c
		}
		if try%2000 == 0 && len(classes) > 1 {
			classes = classes[:len(classes)-1] // never seen; a bound on the loop
		}
	}
}

// drawDeadline draws the numbers of one deadline case of the classes given.
func drawDeadline(r *rand.Rand, floor int, classes []int) deadlineCase {
	c := deadlineCase{budget: 400 + r.IntN(1100)}
	switch floor {
	case floorBelow:
		c.minMS = 20 + r.IntN(c.budget/3)
	case floorAt:
		c.minMS = c.budget
	case floorAbove:
		c.minMS = c.budget + 250 + r.IntN(600)
	}
	if r.IntN(3) > 0 {
		c.connect = float64(1+r.IntN(12)) / 10
	}
	used := 0.0
	for _, class := range classes {
		left := int(float64(c.budget) - used)
		var t dlTarget
		switch class {
		case tAnswers:
			t.delayMS = r.IntN(max(left-250, 1))
		case tQuick:
			t.delayMS = r.IntN(30)
		case t4xx:
			t.code = []int{400, 404, 409, 429}[r.IntN(4)]
		case t5xx:
			t.code = []int{500, 502, 503}[r.IntN(3)]
		case tRefused:
			t.refused = true
		case tReset:
			t.reset = true
		case tHang:
			t.delayMS = max(left, 0) + 250 + r.IntN(800)
		case tDripFits:
			t.dripMS = 1 + r.IntN(max(left-250, 1))
		case tDripCut:
			t.dripMS = max(left, 0) + 250 + r.IntN(600)
		case tHole:
			t.hole = true
		}
		c.targets = append(c.targets, t)
		used = c.used()
	}
	return c
}

// used is the budget the case's calls use on the model's ideal clock.
func (c deadlineCase) used() float64 {
	used := 0.0
	floor := max(float64(c.minMS), 1)
	for i, t := range c.targets {
		left := float64(c.budget) - used
		switch {
		case i == 0 && c.atFloor():
			return float64(c.budget)
		case left < floor:
		case t.hole:
			used += min(c.connectMS(), left)
		case t.partner() && t.work() < left:
			used += t.work()
		case t.partner():
			used += left
		}
	}
	return used
}

// smaller lists the case's smaller forms that the model can still judge
// with certainty: a target fewer, --connect or --min-ms left out.
func (c deadlineCase) smaller() []deadlineCase {
	var out []deadlineCase
	add := func(s deadlineCase) {
		if len(s.targets) > 0 && s.margin() >= 250 {
			out = append(out, s)
		}
	}
	for i := range c.targets {
		s := c
		s.targets = append(append([]dlTarget{}, c.targets[:i]...), c.targets[i+1:]...)
		add(s)
	}
	if c.connect != 0 {
		s := c
		s.connect = 0
		add(s)
	}
	if c.minMS != 0 {
		s := c
		s.minMS = 0
		add(s)
	}
	return out
}

// drawnCalls is how many drawn call runs each grading adds.
const drawnCalls = 6

// The classes of a call case's limits.
const (
	limitsConnectShorter = iota // --connect shorter than --read
	limitsConnectLonger         // --connect longer than --read
	limitsDefaults              // no flags: --connect 1, --read 5
	limitsReadOnly              // --read alone: --connect 1
	limitClasses
)

// drawCallCases draws n call runs, dealing every target class and every
// relation of the limits.
func drawCallCases(r *rand.Rand, n int) map[string]callCase {
	targets := deck(r, targetClasses, n)
	limits := deck(r, limitClasses, n)
	out := map[string]callCase{}
	for i := range n {
		for {
			c := drawCall(r, targets[i], limits[i])
			if c.certain() {
				out[fmt.Sprintf("drawn%d", i)] = c
				break
			}
		}
	}
	return out
}

// drawCall draws the numbers of one call case of the classes given.
func drawCall(r *rand.Rand, target, limits int) callCase {
	var c callCase
	a, b := float64(2+r.IntN(8))/10, float64(2+r.IntN(8))/10
	switch limits {
	case limitsConnectShorter:
		c.connect, c.read = min(a, b), max(a, b)+0.3
	case limitsConnectLonger:
		c.connect, c.read = max(a, b)+0.3, min(a, b)
	case limitsReadOnly:
		c.read = a + b
	}
	read := int(c.readMS())
	var t dlTarget
	switch target {
	case tAnswers:
		t.delayMS = r.IntN(min(max(read-250, 1), 1200))
	case tQuick:
		t.delayMS = r.IntN(30)
	case t4xx:
		t.code = []int{400, 404, 409, 429}[r.IntN(4)]
	case t5xx:
		t.code = []int{500, 502, 503}[r.IntN(3)]
	case tRefused:
		t.refused = true
	case tReset:
		t.reset = true
	case tHang:
		t.delayMS = read + 250 + r.IntN(800)
	case tDripFits:
		t.dripMS = 1 + r.IntN(min(max(read-250, 1), 1200))
	case tDripCut:
		t.dripMS = read + 250 + r.IntN(600)
	case tHole:
		t.hole = true
	}
	if c.connect == 0 && c.read == 0 && (target == tHang || target == tDripCut) {
		// With the default 5 s read limit a hang would cost 5 s: the
		// default is run by the fixed cases; here the read limit is set.
		return drawCall(r, target, limitsReadOnly)
	}
	c.setTarget(t, target == t5xx && r.IntN(2) == 0)
	return c
}

// setTarget points the case at t; fail503 makes a 5xx the partner's 503
// instead of the status server's.
func (c *callCase) setTarget(t dlTarget, fail503 bool) {
	*c = callCase{connect: c.connect, read: c.read}
	switch {
	case t.hole:
		c.target = "blackhole"
	case t.refused:
		c.target = "closed"
	case t.reset:
		c.target = "reset"
	case t.code == 503 && fail503:
		c.target, c.fail = "partner", true
	case t.code != 0:
		c.target, c.code = "status", t.code
	default:
		c.target, c.delayMS, c.dripMS = "partner", t.delayMS, t.dripMS
	}
}

// certain reports whether the model can tell the case's outcome on a
// quiet machine: every limit at least 250 ms from the time it races.
func (c callCase) certain() bool {
	if c.target != "partner" || c.fail {
		return true
	}
	d := float64(c.delayMS+c.dripMS) - c.readMS()
	return d <= -250 || d >= 250
}

// Encode writes the case as a --case string.
func (c callCase) Encode() string {
	var t dlTarget
	switch c.target {
	case "blackhole":
		t.hole = true
	case "closed":
		t.refused = true
	case "reset":
		t.reset = true
	case "status":
		t.code = c.code
	default:
		t.delayMS, t.dripMS = c.delayMS, c.dripMS
	}
	q := url.Values{}
	q.Set("url", t.word())
	if c.fail {
		q.Set("fail", "1")
	}
	if c.connect != 0 {
		q.Set("connect", fmt.Sprint(c.connect))
	}
	if c.read != 0 {
		q.Set("read", fmt.Sprint(c.read))
	}
	return "call?" + encodeOrdered(q, "url", "fail", "connect", "read")
}

// smaller lists the case's smaller forms: a flag left out.
func (c callCase) smaller() []callCase {
	var out []callCase
	for _, drop := range []func(*callCase){
		func(s *callCase) { s.connect = 0 },
		func(s *callCase) { s.read = 0 },
	} {
		s := c
		drop(&s)
		if s != c && s.certain() && s.readMS() <= 2000 {
			out = append(out, s)
		}
	}
	return out
}

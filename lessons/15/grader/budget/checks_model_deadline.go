package budget

import (
	"fmt"
	"strings"

	"quoteflowlab.dev/provider"
)

// A deadline target: a partner /call of delayMS (its headers after
// delayMS, its body trickled over dripMS more), the blackhole, a closed
// port (refused), the status server answering code at once, or resetting
// the connection before any byte (reset).
type dlTarget struct {
	hole    bool
	refused bool
	reset   bool
	code    int // the status server's answer; 0: a partner /call
	delayMS int
	dripMS  int
}

// work is what the target takes to answer in full (0 for the blackhole,
// a refusal and a reset: they end at once, or at a limit).
func (t dlTarget) work() float64 {
	if t.hole || t.refused || t.reset || t.code != 0 {
		return 0
	}
	return float64(t.delayMS + t.dripMS)
}

// partner reports whether the target is the partner's /call (logged).
func (t dlTarget) partner() bool { return !t.hole && !t.refused && !t.reset && t.code == 0 }

// A deadlineCase is one run of deadline.
type deadlineCase struct {
	budget, minMS int     // minMS 0 leaves --min-ms out
	connect       float64 // seconds; 0 leaves --connect out (1 s)
	targets       []dlTarget
}

func (c deadlineCase) connectMS() float64 { return secondsOr(c.connect, 1) }

// delays is the partner delay of each target, 0 for the others.
func (c deadlineCase) delays() []int {
	var out []int
	for _, t := range c.targets {
		out = append(out, int(t.work()))
	}
	return out
}

func (c deadlineCase) args(l *lab, key string) ([]string, []string) {
	args := []string{"--budget-ms", fmt.Sprint(c.budget)}
	if c.minMS != 0 {
		args = append(args, "--min-ms", fmt.Sprint(c.minMS))
	}
	if c.connect != 0 {
		args = append(args, "--connect", fmt.Sprint(c.connect))
	}
	var urls []string
	for _, t := range c.targets {
		u := fmt.Sprintf("%s/call?ms=%d&key=%s", l.base, t.delayMS, key)
		if t.dripMS > 0 {
			u = fmt.Sprintf("%s/call?ms=%d&drip_ms=%d&key=%s", l.base, t.delayMS, t.dripMS, key)
		}
		switch {
		case t.hole:
			u = "http://" + l.blackhole + "/"
		case t.refused:
			u = "http://" + l.closed + "/"
		case t.reset:
			u = l.status + "/reset"
		case t.code != 0:
			u = fmt.Sprintf("%s/status/%d", l.status, t.code)
		}
		urls = append(urls, u)
		args = append(args, "--url", u)
	}
	return args, urls
}

func (c deadlineCase) String() string {
	var ts []string
	for _, t := range c.targets {
		ts = append(ts, t.String())
	}
	s := fmt.Sprintf("deadline --budget-ms %d", c.budget)
	if c.minMS != 0 {
		s += fmt.Sprintf(" --min-ms %d", c.minMS)
	}
	if c.connect != 0 {
		s += fmt.Sprintf(" --connect %v", c.connect)
	}
	return s + " [" + strings.Join(ts, ", ") + "]"
}

// String names the target in a sentence.
func (t dlTarget) String() string {
	switch {
	case t.hole:
		return "blackhole"
	case t.refused:
		return "refused"
	case t.reset:
		return "reset"
	case t.code != 0:
		return fmt.Sprint(t.code)
	case t.dripMS > 0:
		return fmt.Sprintf("%d ms + body trickled over %d ms", t.delayMS, t.dripMS)
	}
	return fmt.Sprintf("%d ms", t.delayMS)
}

// atFloor: --min-ms equals --budget-ms, so the first call starts with the
// floor left to the microsecond: whether it is made depends on when the
// tool reads its clock, and the contract does not say. Either is right;
// every later call has less than the floor left.
func (c deadlineCase) atFloor() bool { return c.minMS > 0 && c.minMS == c.budget }

// plan is what the contract makes of the run on an ideal clock (no
// start-up, no transit): each call's phase, and whether the connect of a
// blackhole call was cut by the budget rather than by its own limit. A
// phase "either:P" accepts no_budget or P (see atFloor).
func (c deadlineCase) plan() (phases []string, budgetConnect []bool) {
	used := 0.0
	floor := max(float64(c.minMS), 1)
	for i, t := range c.targets {
		left := float64(c.budget) - used
		cut := false
		switch {
		case i == 0 && c.atFloor():
			phases = append(phases, "either:"+t.phaseWith(left, c.connectMS()))
			used = float64(c.budget) // a later call has less than the floor left, whatever the first did
		case left < floor:
			phases = append(phases, "no_budget")
		case t.refused:
			phases = append(phases, "connect")
		case t.reset:
			phases = append(phases, "read") // or connect: see modelDeadline
		case t.hole:
			phases = append(phases, "connect")
			cut = c.connectMS() >= left
			used += min(c.connectMS(), left)
		case t.work() < left:
			phases = append(phases, "done")
			used += t.work()
		default:
			phases = append(phases, "read")
			used += left
		}
		budgetConnect = append(budgetConnect, cut)
	}
	return phases, budgetConnect
}

// phaseWith is the target's phase when a call starts with left ms.
func (t dlTarget) phaseWith(left, connect float64) string {
	switch {
	case t.refused, t.hole:
		return "connect"
	case t.reset:
		return "read"
	case t.code != 0 || t.work() < left:
		return "done"
	}
	return "read"
}

// margin is how close, on the ideal clock, any decision of the run comes to
// its boundary: a random case is kept only when every one is 250 ms away.
func (c deadlineCase) margin() float64 {
	used, m := 0.0, 1e9
	floor := max(float64(c.minMS), 1)
	for i, t := range c.targets {
		left := float64(c.budget) - used
		if i == 0 && c.atFloor() {
			// Made or not, the first call leaves less than the floor: only
			// its own outcome, if it is made with the whole budget, must be
			// certain.
			switch {
			case t.hole:
				m = min(m, abs(c.connectMS()-left))
			case t.partner():
				m = min(m, abs(left-t.work()))
			}
			used = float64(c.budget)
			continue
		}
		m = min(m, abs(left-floor))
		if left < floor {
			continue
		}
		switch {
		case t.refused, t.reset, t.code != 0:
			// They end at once: nothing races.
		case t.hole:
			m = min(m, abs(c.connectMS()-left))
			used += min(c.connectMS(), left)
		case t.work() < left:
			m = min(m, left-t.work())
			used += t.work()
		default:
			m = min(m, t.work()-left)
			used += left
		}
	}
	return m
}

func abs(x float64) float64 { return max(x, -x) }

// The fixed deadline runs beyond those of the property checks: every call
// answered (exceeded false), no optional flags, the blackhole under a budget
// longer than the connect limit (both connects end at their limit,
// exceeded false), and a received 404.
var deadlineCases = map[string]deadlineCase{
	"left": {budget: 1600, minMS: 100, connect: 1, targets: []dlTarget{{delayMS: 600}, {delayMS: 600}, {delayMS: 5000}}},
	// The floor run's third call starts with about 1400 ms left, below
	// --min-ms 1500: a tool that ignores the floor starts it unless the machine
	// held the first two calls back by 1.4 s, while a correct tool makes the
	// second call unless they were held back by 700 ms (load only ever makes
	// less budget left, so it cannot turn a skip into a start).
	"floor":    {budget: 3000, minMS: 1500, connect: 1, targets: []dlTarget{{delayMS: 800}, {delayMS: 800}, {delayMS: 50}}},
	"connect":  {budget: 800, connect: 6, targets: []dlTarget{{hole: true}, {hole: true}}},
	"fits":     {budget: 1500, minMS: 100, connect: 1, targets: []dlTarget{{delayMS: 100}, {code: 404}, {delayMS: 200}}},
	"defaults": {budget: 1200, targets: []dlTarget{{delayMS: 100}}},
	"holes":    {budget: 2500, connect: 0.4, targets: []dlTarget{{hole: true}, {delayMS: 100}, {hole: true}}},
}

// earlier reports whether got is what a slower clock makes of want: a call
// the ideal clock finishes is cut or skipped, one it cuts is skipped.
func earlier(want, got string) bool {
	switch want {
	case "done", "connect":
		return got == "read" || got == "no_budget" || got == "connect"
	case "read":
		return got == "no_budget"
	}
	return false
}

// modelDeadline compares every field of one deadline run with the model.
func modelDeadline(m *model, c deadlineCase, urls []string, o deadlineOut, r run, log []arrival) {
	wall := r.wallMS()
	budget := float64(c.budget)
	floor := max(float64(c.minMS), 1)
	phases, budgetConnect := c.plan()
	m.need("budget_ms", o.BudgetMS == budget, "is %v, want the --budget-ms %d", o.BudgetMS, c.budget)
	if !m.need("calls", len(o.Calls) == len(c.targets), "has %d entries for %d --url", len(o.Calls), len(c.targets)) {
		for _, f := range fieldsOf(outputTypes["deadline"]) {
			m.saw(f, "the calls do not match the --url flags")
		}
		return
	}
	skipped, read, anyBudgetConnect, resetRead := 0, false, false, false
	usedAtLeast := 0.0 // the time the calls before this one took at least
	slowed := false    // a call came out as a slower clock makes it: later ones shift
	made := 0
	// spent[i] is what the calls before call i took by their own report
	// (each checked against the grader's clock below).
	spent := make([]float64, len(o.Calls)+1)
	for i, call := range o.Calls {
		spent[i+1] = spent[i] + max(call.ElapsedMS, 0)
	}
	for i, call := range o.Calls {
		t := c.targets[i]
		f := func(name string) string { return "calls[]." + name }
		m.need(f("url"), call.URL == urls[i], "of call %d is %q, want %q (the --url flags in order)", i+1, call.URL, urls[i])
		want, either := strings.CutPrefix(phases[i], "either:")
		if t.reset && call.Phase == "connect" {
			want = "connect" // a reset before any byte: the contract names no phase for it; connect or read
		}
		switch {
		case either && (call.Phase == "no_budget" || call.Phase == want):
			m.seen[f("phase")] = true
		case call.Phase == want || slowed && earlier(want, call.Phase):
			m.seen[f("phase")] = true
		case earlier(want, call.Phase) && !t.reset && !t.refused && t.code == 0,
			call.Phase == "no_budget" && budget-spent[i] < floor+rounding:
			// Not made, with less than the floor left after what the calls
			// before took: a slower clock skips any target so, a refused
			// one too (a CI run at load 30 stretched a 305 ms trickle to
			// 600 ms, and the refused call after it was skipped).
			slowed = true
			m.slow(f("phase"), "of call %d is %q where the budget leaves it %q: the calls before took longer than their work", i+1, call.Phase, want)
		default:
			m.need(f("phase"), false, "of call %d (%s) is %q, want %q", i+1, t, call.Phase, phases[i])
		}
		wantOK := call.Phase == "done" && (t.code == 0 || t.code/100 == 2) && !t.hole && !t.refused && !t.reset
		m.need(f("ok"), call.OK == wantOK, "of call %d is %v for phase %q, want %v", i+1, call.OK, call.Phase, wantOK)
		left := budget - usedAtLeast // the most the call can have had left
		m.need(f("elapsed_ms"), call.ElapsedMS <= wall+rounding, "of call %d is %.1f, more than the %.0f ms the process lived", i+1, call.ElapsedMS, wall)
		switch call.Phase {
		case "no_budget":
			skipped++
			m.need(f("elapsed_ms"), call.ElapsedMS == 0, "of call %d is %.1f for a call not made, want 0", i+1, call.ElapsedMS)
			// The budget left when it was skipped: under the floor, and
			// negative once the budget is spent, but never less than the
			// budget less the process's whole life.
			m.need(f("read_timeout_ms"), call.ReadTimeoutMS < floor+rounding, "of call %d is %.0f for a call skipped below the floor of %.0f ms", i+1, call.ReadTimeoutMS, floor)
			m.need(f("read_timeout_ms"), call.ReadTimeoutMS >= min(0, budget-wall-rounding), "of call %d is %.0f, less than the %.0f ms left even at the end of the %.0f ms run", i+1, call.ReadTimeoutMS, budget-wall, wall)
			continue
		case "read":
			read = read || !t.reset // a reset is no cut by the budget
			resetRead = resetRead || t.reset
		}
		made++
		m.need(f("read_timeout_ms"), call.ReadTimeoutMS >= floor-rounding, "of call %d is %.0f: a call started with less than --min-ms %.0f left", i+1, call.ReadTimeoutMS, floor)
		m.need(f("read_timeout_ms"), call.ReadTimeoutMS <= left+1, "of call %d is %.0f, more than the %.0f ms the calls before can have left", i+1, call.ReadTimeoutMS, left)
		switch call.Phase {
		case "done":
			m.need(f("elapsed_ms"), call.ElapsedMS >= t.work()-rounding, "of call %d is %.1f for an answer sent after %.0f ms", i+1, call.ElapsedMS, t.work())
			usedAtLeast += t.work()
		case "read":
			if t.reset {
				break // it ends at once
			}
			m.need(f("elapsed_ms"), call.ElapsedMS >= call.ReadTimeoutMS-early, "of call %d is %.1f, before its read limit of %.0f ms", i+1, call.ElapsedMS, call.ReadTimeoutMS)
			usedAtLeast += max(call.ReadTimeoutMS-early, 0)
		case "connect":
			limit := min(c.connectMS(), call.ReadTimeoutMS)
			if t.hole {
				m.need(f("elapsed_ms"), call.ElapsedMS >= limit-early, "of call %d is %.1f, before its connect limit of %.0f ms", i+1, call.ElapsedMS, limit)
				usedAtLeast += max(limit-early, 0)
			}
			if t.hole && (c.connectMS() >= call.ReadTimeoutMS-early || budgetConnect[i]) {
				anyBudgetConnect = true
			}
		}
	}
	m.need("skipped", o.Skipped == skipped, "is %d for %d calls in phase no_budget", o.Skipped, skipped)
	want := skipped > 0 || read
	switch {
	case anyBudgetConnect && !want:
		m.saw("exceeded", "a connect cut by the budget: the contract names skips and cut reads only")
	case resetRead && !want && o.Exceeded:
		m.saw("exceeded", "a reset read as phase read: a tool may take every read failure for a cut")
	default:
		m.need("exceeded", o.Exceeded == want, "is %v, want %v (%d skipped, a read cut: %v)", o.Exceeded, want, skipped, read)
	}
	sum := 0.0
	for _, call := range o.Calls {
		sum += call.ElapsedMS
	}
	m.need("total_ms", o.TotalMS <= wall+rounding, "is %.1f, more than the %.0f ms the process lived", o.TotalMS, wall)
	m.need("total_ms", o.TotalMS >= sum-rounding, "is %.1f, less than the calls' %.1f ms together", o.TotalMS, sum)
	if len(log) > 0 {
		// The partner stamps an arrival when its handler runs, in the lab's
		// own process: on a busy machine a stamp can come a little after
		// the bytes did, even after the tool gave up on that call. A short
		// miss is a timing miss (run again); a long one is a made-up total.
		span := log[len(log)-1].at - log[0].at
		if miss := span - o.TotalMS; miss > rounding && miss <= stampLate+max(r.starvedMS, 0) {
			m.slow("total_ms", "is %.1f, less than the %.0f ms between the first and the last call the partner received", o.TotalMS, span)
		} else {
			m.need("total_ms", o.TotalMS >= span-rounding, "is %.1f, less than the %.0f ms between the first and the last call the partner received", o.TotalMS, span)
		}
	}
	m.within("total_ms", o.TotalMS, budget+slack, "is %.1f for a %.0f ms budget", o.TotalMS, budget)
	_ = made
	heldByPartner(m, c, o, r, log)
}

// heldByPartner checks, by the partner's own log, that each call made to
// the partner and reported cut by its read limit (read_timeout_ms, shorter
// than the partner's work) was held that long, as cutHeld judges a call's.
// The calls are matched to the log in order, when every call made to the
// partner arrived.
func heldByPartner(m *model, c deadlineCase, o deadlineOut, r run, log []arrival) {
	var made []int
	for i, call := range o.Calls {
		if c.targets[i].partner() && call.Phase != "no_budget" {
			made = append(made, i)
		}
	}
	if len(made) != len(log) {
		return
	}
	for k, i := range made {
		call, t := o.Calls[i], c.targets[i]
		if call.Phase != "read" || t.work() < call.ReadTimeoutMS || log[k].end == "" {
			continue
		}
		f := "calls[].elapsed_ms"
		entry := []provider.PartnerLogEntry{{End: log[k].end, DurationMs: log[k].dur}}
		switch _, miss, hard := cutHeld(entry, call.ReadTimeoutMS, r); {
		case miss != "" && hard:
			m.need(f, false, "of call %d is %.1f, but %s", i+1, call.ElapsedMS, miss)
		case miss != "":
			m.slow(f, "of call %d is %.1f, but %s", i+1, call.ElapsedMS, miss)
		}
	}
}

// An arrival is when the partner received one call, by its clock, and
// (when known) how the call ended there and how long the partner held it.
type arrival struct {
	at  float64
	end string
	dur float64
}

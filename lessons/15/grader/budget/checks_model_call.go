package budget

import (
	"context"
	"fmt"

	"quoteflowlab.dev/provider"
)

// A callCase is one run of call: where it points and with which limits.
type callCase struct {
	target  string // "partner", "status" (the lab's status server), "blackhole", "closed" or "reset"
	delayMS int    // partner: ms= (the partner's work before its headers)
	dripMS  int    // partner: drip_ms= (the body trickled over this long)
	fail    bool   // partner: fail=1 (a 503 at once)
	code    int    // status: the status it answers
	connect float64
	read    float64 // seconds; 0 leaves the flag out: the defaults (1 and 5) apply
}

// connectMS and readMS are the limits the run had, defaults included.
func (c callCase) connectMS() float64 { return secondsOr(c.connect, 1) }
func (c callCase) readMS() float64    { return secondsOr(c.read, 5) }

func secondsOr(s, def float64) float64 {
	if s == 0 {
		return def * 1000
	}
	return s * 1000
}

// code is the status the target answers when the call is read in full.
func (c callCase) status() int {
	switch {
	case c.target == "status":
		return c.code
	case c.fail:
		return 503
	}
	return 200
}

// url is the --url of the run.
func (c callCase) url(l *lab) string {
	switch c.target {
	case "status":
		return fmt.Sprintf("%s/status/%d", l.status, c.code)
	case "blackhole":
		return "http://" + l.blackhole + "/"
	case "closed":
		return "http://" + l.closed + "/"
	case "reset":
		return l.status + "/reset"
	}
	q := fmt.Sprintf("ms=%d", c.delayMS)
	if c.dripMS > 0 {
		q += fmt.Sprintf("&drip_ms=%d", c.dripMS)
	}
	if c.fail {
		q += "&fail=1"
	}
	return l.base + "/call?" + q + "&key=" + nonce()
}

func (c callCase) args(l *lab) []string {
	args := []string{"--url", c.url(l)}
	if c.connect != 0 {
		args = append(args, "--connect", fmt.Sprint(c.connect))
	}
	if c.read != 0 {
		args = append(args, "--read", fmt.Sprint(c.read))
	}
	return args
}

// String names the case in a sentence.
func (c callCase) String() string {
	var s string
	switch c.target {
	case "status":
		s = fmt.Sprintf("a %d", c.code)
	case "blackhole", "closed":
		s = "the " + c.target
		if c.target == "closed" {
			s = "a closed port"
		}
	case "reset":
		s = "a reset before any byte"
	default:
		s = fmt.Sprintf("/call?ms=%d", c.delayMS)
		if c.dripMS > 0 {
			s += fmt.Sprintf("&drip_ms=%d", c.dripMS)
		}
		if c.fail {
			s += "&fail=1"
		}
	}
	flags := ""
	if c.connect != 0 {
		flags += fmt.Sprintf(" --connect %v", c.connect)
	}
	if c.read != 0 {
		flags += fmt.Sprintf(" --read %v", c.read)
	}
	if flags == "" {
		flags = " (no flags: the defaults)"
	}
	return "call " + s + flags
}

// phase is the phase the contract gives the run, on an ideal clock.
func (c callCase) phase() string {
	switch c.target {
	case "blackhole", "closed":
		return "connect"
	case "reset":
		return "read" // or connect: the contract names no phase for it
	}
	if float64(c.delayMS+c.dripMS) < c.readMS() {
		return "done"
	}
	return "read"
}

// The fixed call runs, each parameter on both sides of its boundary: the
// connect limit shorter and longer than the read limit, a slow call longer
// than the connect limit under a long read limit, received 404, 429 and 503,
// a body cut by the read limit, and runs without the optional flags.
var callCases = map[string]callCase{
	"done":    {target: "partner", delayMS: 50, connect: 1, read: 2},
	"503":     {target: "partner", fail: true, read: 2}, // --connect left to its default
	"read":    {target: "partner", delayMS: 4000, connect: 3, read: 0.5},
	"drip":    {target: "partner", dripMS: 2000, connect: 1, read: 0.5},
	"refused": {target: "closed", connect: 5, read: 5},
	"connect": {target: "blackhole", connect: 0.3, read: 4},
	// The connect limit longer than the read limit: the blackhole must cost
	// the connect limit, not the shorter read limit.
	"connect_over_read": {target: "blackhole", connect: 0.8, read: 0.2},
	// A call slower than the connect limit, under a long read limit: done.
	"slow_over_connect": {target: "partner", delayMS: 700, connect: 0.2, read: 3},
	"404":               {target: "status", code: 404, connect: 1, read: 3},
	"429":               {target: "status", code: 429, read: 3},
	"defaults":          {target: "partner", delayMS: 30},
	"defaults_hole":     {target: "blackhole"},
}

// modelCall compares every field of one call run with the model.
// log is what the partner recorded of the call (none for another target).
func modelCall(m *model, c callCase, o callOut, r run, log provider.PartnerLog) {
	wall := r.wallMS()
	want := c.phase()
	work := float64(c.delayMS + c.dripMS)
	switch {
	case o.Phase == want || c.target == "reset" && o.Phase == "connect":
		m.seen["phase"] = true
	case want == "done" && o.Phase == "read" && o.ElapsedMS >= c.readMS()-early:
		m.slow("phase", "is read after %.0f ms: the machine stretched %.0f ms of work past the read limit of %.0f ms", o.ElapsedMS, work, c.readMS())
	default:
		m.need("phase", false, "is %q, want %q", o.Phase, want)
	}
	switch o.Phase {
	case "done":
		m.need("status", status(o.Status) == c.status(), "is %s, want %d (the status received)", statusText(o.Status), c.status())
		wantOK := c.status() >= 200 && c.status() < 300
		m.need("ok", o.OK == wantOK, "is %v for a received %d, want %v", o.OK, c.status(), wantOK)
		if o.OK {
			m.need("error", o.Error == nil, "is %q for a success, want null", deref(o.Error))
		} else {
			m.saw("error", "the contract leaves a received failure's error open (null or a text)")
		}
		m.need("elapsed_ms", o.ElapsedMS >= work-rounding, "is %.1f for an answer the partner sent after %.0f ms", o.ElapsedMS, work)
		m.within("elapsed_ms", o.ElapsedMS, work+slack, "is %.1f for %.0f ms of work", o.ElapsedMS, work)
	case "read":
		// Headers may have arrived before the body was cut: their status may be kept.
		m.need("status", o.Status == nil || c.dripMS > 0 && status(o.Status) == c.status(), "is %s for a call cut before its answer, want null", statusText(o.Status))
		m.need("ok", !o.OK, "is true for a call cut by its read limit")
		m.need("error", deref(o.Error) != "", "is empty for a failed call, want a text")
		m.need("elapsed_ms", o.ElapsedMS >= min(c.readMS(), work)-early, "is %.1f, before the read limit of %.0f ms", o.ElapsedMS, c.readMS())
		m.within("elapsed_ms", o.ElapsedMS, c.readMS()+slack, "is %.1f for a read limit of %.0f ms", o.ElapsedMS, c.readMS())
		if work >= c.readMS() {
			// Cut by its limit: the partner held the call that long.
			switch _, miss, hard := cutHeld(log.Calls, c.readMS(), r); {
			case miss != "" && hard:
				m.need("elapsed_ms", false, "is %.1f, but %s", o.ElapsedMS, miss)
			case miss != "":
				m.slow("elapsed_ms", "is %.1f, but %s", o.ElapsedMS, miss)
			}
		}
	case "connect":
		m.need("status", o.Status == nil, "is %s for a call that never connected, want null", statusText(o.Status))
		m.need("ok", !o.OK, "is true for a call that never connected")
		m.need("error", deref(o.Error) != "", "is empty for a failed call, want a text")
		if c.target == "blackhole" {
			m.need("elapsed_ms", o.ElapsedMS >= c.connectMS()-early, "is %.1f, before the connect limit of %.0f ms", o.ElapsedMS, c.connectMS())
			m.within("elapsed_ms", o.ElapsedMS, c.connectMS()+slack, "is %.1f for a connect limit of %.0f ms", o.ElapsedMS, c.connectMS())
		} else {
			m.within("elapsed_ms", o.ElapsedMS, 500, "is %.1f for a refused connection", o.ElapsedMS)
		}
	default:
		for _, f := range []string{"status", "ok", "error"} {
			m.saw(f, "the phase is wrong: the run fails on it")
		}
	}
	m.need("elapsed_ms", o.ElapsedMS >= 0 && o.ElapsedMS <= wall+rounding, "is %.1f, more than the %.0f ms the process lived", o.ElapsedMS, wall)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkCallModel compares every call run with the model.
func (g *grader) checkCallModel(ctx context.Context, cases map[string]callCase, outs map[string]callOut, runs map[string]run, logs map[string]provider.PartnerLog) {
	var v verdict
	per := map[string]verdict{}
	var unseen []string
	var names []string
	for _, name := range sortedNames(cases) {
		o, ok := outs[name]
		if !ok {
			continue
		}
		names = append(names, name)
		var one verdict
		m := newModel(&one, cases[name].String())
		modelCall(m, cases[name], o, runs[name], logs[name])
		unseen = append(unseen, checkFields("call", m)...)
		per[name] = one
		v.absorb(one)
	}
	small, drawn := shrunk("call_model", cases, per, callCase.smaller, func(c callCase) verdict { return g.callOnce(ctx, c) })
	g.modelJudge("call_model", "call", v, names, dedupe(unseen), g.seed, small, drawn)
}

func dedupe(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

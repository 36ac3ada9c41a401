package budget

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/provider"
)

// runAll runs tool once per argument list, concurrently, each bounded by
// within, and returns the runs by key.
func (g *grader) runAll(ctx context.Context, tool string, within time.Duration, jobs map[string][]string) map[string]run {
	out := make(map[string]run, len(jobs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for key, args := range jobs {
		wg.Go(func() {
			r := g.execWithin(ctx, within, tool, args...)
			mu.Lock()
			out[key] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// failRun fails the named properties, which run r's problem kept from
// being checked: a run killed at its bound while the machine held it back
// is a timing miss (run again, inconclusive when busy again), any other
// problem a failure.
func (g *grader) failRun(r run, detail string, names ...string) {
	if !r.heldUp {
		g.failAllOf(detail, names...)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	but := "a run was still going at its time bound, while the machine held it back (its threads waited for a CPU, or the lab's own timer fired late)"
	for _, n := range names {
		g.findings[n] = finding{detail: detail, but: but, timed: true}
	}
}

// failAllOf fails the named properties, which could not be checked, with
// one detail saying why.
func (g *grader) failAllOf(detail string, names ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range names {
		g.findings[n] = finding{detail: detail, unchecked: true}
	}
}

type callOut struct {
	OK        bool     `json:"ok"`
	Status    *float64 `json:"status"`
	Phase     string   `json:"phase"`
	ElapsedMS float64  `json:"elapsed_ms"`
	Error     *string  `json:"error"`
}

var callKeys = []string{"ok", "status", "phase", "elapsed_ms", "error"}

var callProps = []string{"call_json", "call_done", "call_http_error", "call_read_limit", "call_body_limit",
	"call_connect_phase", "call_connect_limit", "call_refused", "call_elapsed_honest", "call_model"}

// checkCall runs call against a quick 200, a 503, a slow answer, an answer
// whose body trickles, the blackhole and a closed port.
func (g *grader) checkCall(ctx context.Context) {
	if g.replayed(ctx, "call") {
		return
	}
	cases := drawCallCases(g.rng(streamCall), drawnCalls)
	for name, c := range callCases {
		cases[name] = c
	}
	jobs := map[string][]string{}
	for name, c := range cases {
		if c.target == "blackhole" && g.lab.blackhole == "" {
			delete(cases, name)
			continue
		}
		jobs[name] = c.args(g.lab)
	}
	runs := g.runAll(ctx, "call", g.runBound(), jobs)
	outs := map[string]callOut{}
	for key, r := range runs {
		if r.problem != "" {
			g.failRun(r, r.problem, callProps...)
			return
		}
		var o callOut
		if err := r.decode(&o, callKeys...); err != nil {
			g.failAllOf("call "+key+": "+err.Error(), callProps...)
			return
		}
		outs[key] = o
	}
	g.set("call_json", true, "")

	o, r := outs["done"], runs["done"]
	var v verdict
	if lateAnswer(o, callCases["done"]) {
		v.slow("it was cut at its read limit: the machine delayed a 50 ms answer past %.0f ms", callCases["done"].readMS())
	} else {
		v.need(o.OK && status(o.Status) == 200 && o.Phase == "done", "it came back as ok %v, status %s, phase %q", o.OK, statusText(o.Status), o.Phase)
	}
	v.within(r.wallMS(), 2000, allowFor(r), "it took %.0f ms for a 50 ms answer", r.wallMS())
	g.judge("call_done", v, "GET /call?ms=50: ok %v, status %v, phase %q, %.0f ms", o.OK, statusText(o.Status), o.Phase, r.wallMS())

	o = outs["503"]
	v = verdict{}
	if lateAnswer(o, callCases["503"]) {
		v.slow("it was cut at its read limit: the machine delayed the 503 past %.0f ms", callCases["503"].readMS())
	} else {
		v.need(!o.OK && status(o.Status) == 503 && o.Phase == "done", "it came back as ok %v, status %s, phase %q", o.OK, statusText(o.Status), o.Phase)
	}
	g.judge("call_http_error", v, "GET /call?fail=1 (--connect left to its default): ok %v, status %v, phase %q", o.OK, statusText(o.Status), o.Phase)

	logs := map[string]provider.PartnerLog{}
	for name, args := range jobs {
		if log, ok := g.callLog(ctx, args); ok {
			logs[name] = log
		}
	}
	g.checkCut("call_read_limit", outs["read"], runs["read"], logs["read"], "GET /call?ms=4000 with --connect 3 --read 0.5",
		"the slow answer was not cut", "")
	g.checkCut("call_body_limit", outs["drip"], runs["drip"], logs["drip"], "GET /call?ms=0&drip_ms=2000 (headers at once, the body over 2 s) with --read 0.5",
		"the limit stopped at the headers and let the body run on", g.headersLate(ctx, jobs["drip"]))

	o, r = outs["refused"], runs["refused"]
	v = verdict{}
	v.need(o.Phase == "connect", "it ended in phase %q", o.Phase)
	v.within(r.wallMS(), 1500, allowFor(r), "it took %.0f ms, as if it waited for a limit", r.wallMS())
	g.judge("call_refused", v, "closed port %s with --connect 5: phase %q after %.0f ms (want connect, under 1500 ms)", g.lab.closed, o.Phase, r.wallMS())

	g.checkCallTimes(outs, runs)
	g.checkCallModel(ctx, cases, outs, runs, logs)

	if g.lab.blackhole == "" {
		g.set("call_connect_phase", true, "skipped: this system has no blackhole (Linux only)")
		g.set("call_connect_limit", true, "skipped: this system has no blackhole (Linux only)")
		return
	}
	o, r = outs["connect"], runs["connect"]
	g.set("call_connect_phase", o.Phase == "connect",
		"blackhole %s: phase %q (want connect)", g.lab.blackhole, o.Phase)
	v = verdict{}
	v.need(r.wallMS() >= 300-early, "it gave up after %.0f ms, before its connect limit", r.wallMS())
	v.within(r.wallMS(), 300+slack, allowFor(r), "reaching the blackhole waited longer (%.0f ms), as if one timeout served both phases", r.wallMS())
	g.judge("call_connect_limit", v, "blackhole with --connect 0.3 --read 4: ended after %.0f ms (want 300–%.0f ms)", r.wallMS(), 300+slack)
}

// headersLate says why the trickled-body run showed nothing about the
// body's limit, or "": the partner sends its headers as the call arrives,
// so a call it held for less than 50 ms before the tool hung up (a busy
// machine's partner, late to take the call) got its headers after the read
// limit, and a limit on the headers alone was cut there too.
func (g *grader) headersLate(ctx context.Context, args []string) string {
	log, ok := g.callLog(ctx, args)
	switch {
	case !ok:
		return ""
	case len(log.Calls) == 0:
		return "the partner never received the call before the tool gave up (a busy machine), so its headers, and the body's limit, could not be seen"
	case log.Calls[0].DurationMs < 50:
		return fmt.Sprintf("the partner held the call only %.0f ms before the tool hung up (a busy machine took it late), so its headers came after the read limit and the body's limit could not be seen", log.Calls[0].DurationMs)
	}
	return ""
}

// callLog is what the partner recorded for the call run with args (the
// key is in its --url), and whether there is such a record: a call at
// another target has none.
func (g *grader) callLog(ctx context.Context, args []string) (provider.PartnerLog, bool) {
	key := ""
	for _, a := range args {
		if u, err := url.Parse(a); err == nil && u.Query().Has("key") {
			key = u.Query().Get("key")
		}
	}
	if key == "" {
		return provider.PartnerLog{}, false
	}
	log, err := g.lab.settle(ctx, key)
	return log, err == nil
}

// checkCut checks a call that a 0.5 s read limit must cut: by the
// grader's clock, and by the partner's own log of how long it held the
// call. untested, when not "", says why the run could not show the cut: a
// timing miss.
func (g *grader) checkCut(name string, o callOut, r run, log provider.PartnerLog, what, notCut, untested string) {
	var v verdict
	if untested != "" {
		v.slow("%s", untested)
	}
	v.need(o.Phase == "read", "it ended in phase %q (status %s) after %.0f ms: %s", o.Phase, statusText(o.Status), r.wallMS(), notCut)
	v.need(r.wallMS() >= 500-early, "it ended after %.0f ms, before its read limit", r.wallMS())
	v.within(r.wallMS(), 500+slack, allowFor(r), "it ended after %.0f ms, well past its read limit", r.wallMS())
	held := "no record"
	if o.Phase == "read" {
		h, miss, hard := cutHeld(log.Calls, 500, r)
		switch {
		case miss != "" && hard:
			v.need(false, "%s", miss)
		case miss != "":
			v.slow("%s", miss)
		}
		if h >= 0 {
			held = fmt.Sprintf("%.0f ms", h)
		}
	}
	g.judge(name, v, "%s: phase %q after %.0f ms (want read, 500–%.0f ms); the partner held the call %s before the tool went away (want at least %.0f ms)",
		what, o.Phase, r.wallMS(), 500+slack, held, 500-early)
}

// cutHeld judges, from the partner's own log of a call the tool reports
// cut by its read limit of limitMS, how long the partner held it: from
// the call's arrival (the connection was made before it, so the read
// limit ran at least from then) until the client went away. A limit that
// fired early, followed by a sleep before printing, looks right by the
// wall clock, never by the partner's. held is -1 when the log shows no
// one call that the client left. A call held shorter than the limit by
// more than 30 ms (and what the CPU wait excuse allows) misses. By no more
// than the partner may stamp a call late (100 ms on a busy machine, or as
// late as the lab's own timer was while the run lasted, if later) and the
// time the tool's threads waited for a CPU (between starting its limit and
// sending the call), it is a timing miss; by more, it fails.
func cutHeld(log []provider.PartnerLogEntry, limitMS float64, r run) (held float64, miss string, hard bool) {
	if len(log) != 1 || log[0].End != "client_gone" {
		return -1, "", false
	}
	held = log[0].DurationMs
	short := limitMS - held
	if short <= early+excuse(r) {
		return held, "", false
	}
	miss = fmt.Sprintf("the partner held the call only %.0f ms before the tool went away, %.0f ms short of the read limit of %.0f ms: the limit fired early, whatever time the tool reports", held, short, limitMS)
	return held, miss, short > early+max(stampLate, r.lagMS)+max(r.starvedMS, 0)
}

// checkCallTimes compares every elapsed_ms call reported with the wall time
// the grader measured for its process and with what must have taken time:
// the partner's delay, or the limit that cut the call.
func (g *grader) checkCallTimes(outs map[string]callOut, runs map[string]run) {
	var v verdict
	var seen []string
	for _, key := range []string{"done", "503", "read", "drip", "refused", "connect"} {
		o, ok := outs[key]
		if !ok {
			continue
		}
		wall := runs[key].wallMS()
		floor := map[string]float64{"done": 50, "read": 500 - early, "drip": 500 - early, "connect": 300 - early}[key]
		if (key == "read" || key == "drip") && o.Phase != "read" || key == "connect" && o.Phase != "connect" || key == "done" && o.Phase != "done" {
			floor = 0 // judged by its own property
		}
		seen = append(seen, fmt.Sprintf("%s %.1f of %.0f ms", key, o.ElapsedMS, wall))
		v.need(o.ElapsedMS <= wall+rounding, "%s reported %.1f ms, more than the %.0f ms its process lived", key, o.ElapsedMS, wall)
		v.need(o.ElapsedMS >= floor-rounding, "%s reported %.1f ms for a call that cannot have taken less than %.0f ms", key, o.ElapsedMS, floor)
		v.within(wall, 2*(o.ElapsedMS+300), allowFor(runs[key]), "%s reported %.1f ms of a %.0f ms run", key, o.ElapsedMS, wall)
	}
	g.judge("call_elapsed_honest", v, "elapsed_ms reported of wall time measured: %s", strings.Join(seen, ", "))
}

// status is a JSON status or 0 for null.
func status(s *float64) int {
	if s == nil {
		return 0
	}
	return int(*s)
}

func statusText(s *float64) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprint(*s)
}

// lateAnswer reports whether a call whose answer is quick came back cut in
// phase read no sooner than its read limit: the answer (the lab's partner
// runs on the same busy machine) was late, which only load can do to it.
// Anything else than that exact shape is the tool's.
func lateAnswer(o callOut, c callCase) bool {
	return o.Phase == "read" && !o.OK && o.Status == nil && o.ElapsedMS >= c.readMS()-early
}

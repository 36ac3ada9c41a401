// Package budget grades exercise E15, the time-budget tools of lesson 15.
//
// Grade builds the five tools (call, deadline, retry, fanout, probe) found in
// an answer directory, starts the provider lab in-process on free loopback
// ports, runs every tool against it (slow /call, failing keys, /budget echo,
// the blackhole, a closed port), measures each run's wall time itself, and
// checks the plan and the report. The Result lists every property with a
// sentence saying what a failure means.
//
// Grader is what the program lessons/15/grader runs (a grade.Own): `lab
// check E15 [--answer DIR] [--variant NAME]` builds that program and runs
// it with the request's flags; Accept checks the request and loads the
// broken variant, and Check calls Grade and turns its Result into the
// report.Report every grader returns.
package budget

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/machine"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
)

// Tools are the five programs an answer contains, one main package per folder.
var Tools = []string{"call", "deadline", "retry", "fanout", "probe"}

// Files an answer contains besides the tools.
const (
	PlanFile   = "budget_plan.json"
	ReportFile = "budget_report.md"
	ProbeFile  = "probe.json" // optional: a saved probe run the report quotes
)

// Options says what to grade.
type Options struct {
	// Dir is the answer directory: call/, deadline/, retry/, fanout/, probe/,
	// budget_plan.json and budget_report.md. A relative Dir is taken from Root.
	// Dir must be given (lab check passes the manifest's starter by default).
	Dir string
	// Root is the repository root. Empty means the current directory.
	Root string
	// Overlay is an optional `go build -overlay` JSON file. It is passed to
	// every build and is also honoured when reading budget_plan.json and
	// budget_report.md, so any one file of an answer can be swapped for a
	// broken variant without copying the answer.
	Overlay string
	// BinDir is where the tools are built. Empty means a temporary
	// directory, removed afterwards. A stable BinDir per answer (and overlay)
	// lets go build skip relinking tools that did not change.
	BinDir string
	// Progress, when not nil, receives one line per grading step.
	Progress io.Writer
	// Left counts what the tool runs leave running; nil: a count of
	// Grade's own (Result.Left either way).
	Left *grade.LeftBehind
	// Machine watches how busy the machine is; nil: a monitor of Grade's own.
	Machine grade.Monitor
	// Only, when set, names one property: only the scenarios of its tool
	// run (none for a property of the plan or the report, which are read,
	// not run), and the Result lists that tool's build and the property
	// alone. A quick look at one property, never the exercise's verdict.
	// A re-run for a missed timing bound is then made only for Only: the
	// other properties of its tool are not reported.
	Only string
	// Seed draws the cases of call, deadline and retry (see gen.go); 0: a
	// seed of the grading's own, named in the report. The same seed draws
	// the same cases.
	Seed uint64
	// Case, when set, is one case (a --case string, as a report prints a
	// failing one): only that case runs, and only its tool's model property
	// is reported. Only is then that property.
	Case string
	// RunTimeout bounds one tool run where a scenario sets no tighter bound
	// of its own; 0 means runTimeout. Tests of a tool that never ends set it
	// shorter: the verdict on a hung tool is the same at any bound.
	RunTimeout time.Duration
}

// A toolCheck runs one tool's scenarios and sets its properties.
type toolCheck struct {
	tool string
	run  func(*grader, context.Context)
}

var toolChecks = []toolCheck{
	{"call", (*grader).checkCall},
	{"deadline", (*grader).checkDeadline},
	{"retry", (*grader).checkRetry},
	{"fanout", (*grader).checkFanout},
	{"probe", (*grader).checkProbe},
}

// Grade runs the whole grading and returns one finding per property, in
// the order of specs. It never panics on a bad answer: every problem (a
// tool that does not build, prints no JSON, hangs) becomes a failed
// property. ctx bounds the whole run.
//
// The tools' scenarios run concurrently. A property that failed only on a
// timing bound (a run a little slower than allowed, never a wrong phase, a
// number a tool made up or a miss larger than loadAllowance) is run again
// once, alone; if it fails again and the machine was busy during either
// run, it is inconclusive rather than failed.
func Grade(ctx context.Context, opts Options) Result {
	start := time.Now()
	g := &grader{opts: opts, findings: map[string]finding{}, todo: map[string]bool{}, seed: opts.Seed, left: opts.Left}
	if g.left == nil {
		g.left = &grade.LeftBehind{}
	}
	if g.seed == 0 {
		g.seed = newSeed()
	}
	if opts.Case != "" {
		rc, err := ParseCase(opts.Case)
		if err != nil {
			g.failAll(err.Error())
			return g.result(start)
		}
		g.replay = &rc
		g.opts.Only = rc.tool + "_model"
		opts = g.opts
	}
	g.dir = resolveDir(opts)
	if err := g.loadOverlay(); err != nil {
		g.failAll("reading the overlay: " + err.Error())
		return g.result(start)
	}
	g.progress("grading %s", g.dir)
	mon := opts.Machine
	if mon == nil {
		m := machine.Start()
		defer m.Stop()
		mon = m
	}
	g.mon = mon

	var wg sync.WaitGroup
	wg.Go(func() { g.checkPlanAndReport() })
	if err := g.build(ctx); err != nil {
		g.failAll(err.Error())
		wg.Wait()
		return g.result(start)
	}
	if g.opts.BinDir == "" {
		defer os.RemoveAll(g.binDir)
	}

	lab, err := startLab(true)
	if err != nil {
		g.failAll("starting the provider lab: " + err.Error())
		wg.Wait()
		return g.result(start)
	}
	defer lab.stop()
	if err := lab.startStatuses(); err != nil {
		g.failAll("starting the status server: " + err.Error())
		wg.Wait()
		return g.result(start)
	}
	g.lab = lab
	g.progress("provider lab on %s, blackhole %s", lab.base, lab.blackhole)

	mark := mon.Mark()
	checks := toolChecks
	if opts.Only != "" {
		checks = slices.DeleteFunc(slices.Clone(toolChecks), func(c toolCheck) bool { return c.tool != toolOf(opts.Only) })
	}
	forks := make([]*grader, len(checks))
	for i, c := range checks {
		forks[i] = g.fork()
		wg.Go(func() {
			c.run(forks[i], ctx)
			forks[i].spun(c.tool)
		})
	}
	wg.Wait()
	first := mon.Since(mark)
	for _, f := range forks {
		g.merge(f, nil)
	}
	for i, c := range checks {
		if ctx.Err() != nil {
			break
		}
		g.rerun(ctx, c, forks[i], first, mon)
	}
	if g.computed != "" {
		g.notes = append(g.notes, msg.T("meas.self_busy", g.computed))
	}
	r := g.result(start)
	r.Machine = mon.Since(0)
	return r
}

// rerun runs check c again, alone, when a property of its first run failed
// on timing only, and settles those properties: held on the re-run, failed
// again (on a quiet machine, or by more than load can explain), or
// inconclusive (failed twice while the machine was busy).
func (g *grader) rerun(ctx context.Context, c toolCheck, firstRun *grader, first report.Machine, mon grade.Monitor) {
	var timed []string
	for _, s := range specs {
		if g.opts.Only != "" && s.name != g.opts.Only {
			continue // not reported: re-running for it only delays the verdict
		}
		if f, ok := firstRun.findings[s.name]; ok && !f.ok && f.timed {
			timed = append(timed, s.name)
		}
	}
	if len(timed) == 0 {
		return
	}
	g.progress("re-running %s alone for %s", c.tool, strings.Join(timed, ", "))
	mark := mon.Mark()
	again := g.fork()
	c.run(again, ctx)
	again.spun(c.tool)
	second := mon.Since(mark)
	// The first run loads the machine itself (every tool at once): only the
	// re-run, alone, says whether the machine was busy: the lab's timer, or
	// the tool's own threads waiting for a CPU.
	again.mu.Lock()
	busy := (second.Busy || again.heldBack) && again.computed == ""
	again.mu.Unlock()
	worst := second
	if first.LagP99MS > second.LagP99MS || first.CPUPressure > second.CPUPressure {
		worst = first
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.computed == "" {
		g.computed = again.computed
	}
	for _, name := range timed {
		was, now := firstRun.findings[name], again.findings[name]
		switch {
		case now.ok:
			g.notes = append(g.notes, msg.T("meas.held_again", name, report.Shorten(report.OneLine(was.detail), 300)))
			g.findings[name] = now
		case now.timed && busy:
			now.busy = true
			now.detail += "; the machine was too busy to judge this timing: " + machine.Describe(worst)
			g.notes = append(g.notes, msg.T("meas.busy_twice", name, machine.Describe(worst)))
			g.findings[name] = now
		case now.timed:
			now.detail += "; it failed again when run alone, and the machine was not busy (" + machine.Describe(worst) + ")"
			g.findings[name] = now
		default:
			g.findings[name] = now
		}
	}
}

// spun fails every property of tool when one of its runs in this fork kept
// the CPUs busy itself (computed): its threads then wait for a CPU of the
// tool's own making, at moments the tool picks, such as between reading
// the budget left and sending the call that carries it, where no clock of
// the grader's or the partner's can see the wait. A timing that looks right
// proves nothing then, and a tool that waits on the network has no reason
// to spin, so the rule is not one bound at a time but the tool's whole
// grading (a property already failed stays failed, and is not re-run).
func (g *grader) spun(tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.computed == "" {
		return
	}
	but := fmt.Sprintf("%s kept the CPUs busy itself (%s; a tool that waits on the network uses a few ms): its threads' waits for a CPU were its own doing and could hide any timing, so no property of %s is granted", tool, g.computed, tool)
	for _, s := range specs {
		if toolOf(s.name) != tool || s.name == "build_"+tool {
			continue
		}
		f, ok := g.findings[s.name]
		if !ok {
			continue
		}
		f.ok, f.timed, f.busy = false, false, false
		if f.but == "" || f.unchecked {
			f.but = but
		} else {
			f.but = but + "; and " + f.but
		}
		f.unchecked = false
		g.findings[s.name] = f
	}
}

// fork returns a grader for one tool's check: the same answer, binaries and
// lab, findings of its own.
func (g *grader) fork() *grader {
	return &grader{opts: g.opts, dir: g.dir, overlay: g.overlay, binDir: g.binDir, bins: g.bins,
		buildErrs: g.buildErrs, lab: g.lab, mon: g.mon, findings: map[string]finding{}, todo: map[string]bool{},
		seed: g.seed, replay: g.replay, left: g.left}
}

// merge copies a fork's findings (only names, when not nil) into g.
func (g *grader) merge(f *grader, names []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	for n, v := range f.findings {
		if names == nil || slices.Contains(names, n) {
			g.findings[n] = v
		}
	}
	for t, v := range f.todo {
		g.todo[t] = g.todo[t] || v
	}
	if g.computed == "" {
		g.computed = f.computed
	}
}

// resolveDir returns the absolute answer directory.
func resolveDir(opts Options) string {
	dir := opts.Dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(opts.Root, dir)
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir
}

// A finding is the verdict on one property.
type finding struct {
	ok     bool
	detail string
	// unchecked: the property could not be looked at (the tool did not
	// build, printed no JSON, the plan is invalid...), so the detail says
	// why and the spec's "but ..." clause would be a wrong guess.
	unchecked bool
	// but, when set, is what went wrong, said for this failure (one clause
	// per condition that failed); otherwise the spec's failure clause.
	but string
	// timed: every condition that failed is a timing bound missed by less
	// than load can explain, so the property is run again before it counts.
	timed bool
	// busy: it failed on timing twice while the machine was busy: inconclusive.
	busy bool
}

// grader holds one grading run's state.
type grader struct {
	opts      Options
	dir       string
	overlay   map[string]string // absolute path → replacement file
	binDir    string
	bins      map[string]string // tool → binary; absent when it did not build
	buildErrs map[string]string
	lab       *lab

	mon  grade.Monitor
	left *grade.LeftBehind // processes the tools left running, over every fork

	seed   uint64      // draws the cases (see gen.go)
	replay *replayCase // --case: the one case to run

	mu       sync.Mutex
	findings map[string]finding
	todo     map[string]bool // tool → it printed its starter's TODO
	notes    []string        // re-runs and what they showed
	heldBack bool            // a tool run was held back by a busy machine
	// computed says which tool run used the CPU rather than waited ("":
	// none): the machine is then not to blame for its timing.
	computed string
}

// set records the verdict on property name.
func (g *grader) set(name string, ok bool, format string, args ...any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.findings[name] = finding{ok: ok, detail: fmt.Sprintf(format, args...)}
}

// failAll fails every property not yet decided with detail.
func (g *grader) failAll(detail string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range specs {
		if _, done := g.findings[s.name]; !done {
			g.findings[s.name] = finding{detail: detail, unchecked: true}
		}
	}
}

func (g *grader) progress(format string, args ...any) {
	if g.opts.Progress != nil {
		fmt.Fprintf(g.opts.Progress, "E15: "+format+"\n", args...)
	}
}

// Result is one grading run: a finding per property, in the order of specs.
type Result struct {
	Props      []report.Prop
	NotStarted bool // every tool still prints its starter's TODO
	Passed     bool // every required property holds
	// Inconclusive: no required property failed, but one missed a timing
	// bound twice while the machine was busy.
	Inconclusive bool
	Notes        []string       // re-runs and what they showed
	Machine      report.Machine // how busy the machine was while the tools ran
	Elapsed      time.Duration
	// Left is what the tools left running when they exited (any process,
	// any group or session): one fails the check.
	Left *grade.LeftBehind
}

// Failed returns the names of the properties that do not hold (not those
// the machine was too busy to judge).
func (r Result) Failed() []string {
	var out []string
	for _, p := range r.Props {
		if !p.OK && p.Status != report.Busy {
			out = append(out, p.Name)
		}
	}
	return out
}

// result assembles the Result in the order of specs.
func (g *grader) result(start time.Time) Result {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := Result{Passed: true, NotStarted: g.notStarted(), Notes: slices.Clone(g.notes), Left: g.left}
	busy := false
	folded := map[string]bool{} // tools that still print their TODO, shown as one line
	for _, s := range specs {
		if g.opts.Only != "" && s.name != g.opts.Only && s.name != "build_"+toolOf(g.opts.Only) {
			continue // not looked at (--only)
		}
		if tool := toolOf(s.name); tool != "" && g.todo[tool] {
			if !folded[tool] {
				folded[tool] = true
				r.Props = append(r.Props, g.todoProp(tool))
				if s.required {
					r.Passed = false
				}
			}
			continue
		}
		f, ok := g.findings[s.name]
		if !ok {
			f = finding{detail: "not checked"}
		}
		sentence := s.demand()
		switch {
		case f.ok || f.unchecked || f.busy || r.NotStarted:
		case f.but != "":
			sentence = joinBut(s.demand(), f.but)
		default:
			sentence = s.sentence()
		}
		p := report.Prop{Name: s.name, Kind: report.Measure, Story: sentence, Required: s.required, OK: f.ok, Status: report.OK}
		switch {
		case f.ok && strings.HasPrefix(f.detail, "skipped"):
			p.Status, p.Detail = report.Skipped, f.detail
		case !f.ok && r.NotStarted && strings.Contains(f.detail, "still prints its TODO"):
			p.Status = report.NotRun
		case !f.ok && r.NotStarted:
			p.Status, p.Detail = report.ToDo, f.detail // the plan and report templates
		case f.busy:
			p.Status, p.Detail = report.Busy, f.detail
		case !f.ok:
			p.Status, p.Detail = report.Fail, f.detail
		}
		if s.required && !f.ok {
			if f.busy {
				busy = true
			} else {
				r.Passed = false
			}
		}
		r.Props = append(r.Props, p)
	}
	if r.NotStarted {
		r.Passed = false
	}
	if r.Passed && busy {
		r.Passed, r.Inconclusive = false, true
	}
	r.Elapsed = time.Since(start)
	return r
}

// IsProperty reports whether name is a property of the grader (what
// --only may name).
func IsProperty(name string) bool {
	return slices.ContainsFunc(specs, func(s spec) bool { return s.name == name })
}

// PropertyNames lists every property, in report order.
func PropertyNames() []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return names
}

// toolOf returns the tool a property belongs to ("" for the plan and the
// report): call for call_json and build_call.
func toolOf(name string) string {
	name = strings.TrimPrefix(name, "build_")
	for _, t := range Tools {
		if strings.HasPrefix(name, t+"_") || name == t {
			return t
		}
	}
	return ""
}

// todoProp is the one line of a tool that still prints its starter's TODO:
// none of its properties can be looked at until it prints its JSON.
// Caller holds g.mu.
func (g *grader) todoProp(tool string) report.Prop {
	var names []string
	for _, s := range specs {
		if toolOf(s.name) == tool && !strings.HasPrefix(s.name, "build_") {
			names = append(names, s.name)
		}
	}
	return report.Prop{Name: tool, Kind: report.Measure, Required: true, Status: report.NotRun,
		Story: msg.T("meas.todo_prop", tool, len(names), names[0], names[len(names)-1])}
}

// notStarted reports whether every tool printed its TODO. Caller holds g.mu.
func (g *grader) notStarted() bool {
	for _, tool := range Tools {
		if !g.todo[tool] {
			return false
		}
	}
	return true
}

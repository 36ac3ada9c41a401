// Package grade15 grades exercise E15, the time-budget tools of lesson 15.
//
// Grade builds the five tools (call, deadline, retry, fanout, probe) found in
// an answer directory, starts the provider lab in-process on free loopback
// ports, runs every tool against it (slow /call, failing keys, /budget echo,
// the blackhole, a closed port), measures each run's wall time itself, and
// checks the plan and the report. The Result lists every property with a
// sentence saying what a failure means.
//
// `lab check E15 [--answer DIR]` reaches Grade through Check, which this
// package registers for E15 when the lab command links it in; Result.Write
// renders a Result for any other caller.
package grade15

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/lab/internal/report"
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
}

// Grade runs the whole grading and returns one finding per property, in
// the order of specs. It never panics on a bad answer: every problem (a
// tool that does not build, prints no JSON, hangs) becomes a failed
// property. ctx bounds the whole run.
func Grade(ctx context.Context, opts Options) Result {
	start := time.Now()
	g := &grader{opts: opts, findings: map[string]finding{}, todo: map[string]bool{}}
	g.dir = resolveDir(opts)
	if err := g.loadOverlay(); err != nil {
		g.failAll("reading the overlay: " + err.Error())
		return g.result(start)
	}
	g.progress("grading %s", g.dir)

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

	lab, err := startLab()
	if err != nil {
		g.failAll("starting the provider lab: " + err.Error())
		wg.Wait()
		return g.result(start)
	}
	defer lab.stop()
	g.lab = lab
	g.progress("provider lab on %s, blackhole %s", lab.base, lab.blackhole)

	for _, check := range []func(context.Context){g.checkCall, g.checkDeadline, g.checkRetry, g.checkFanout, g.checkProbe} {
		wg.Go(func() { check(ctx) })
	}
	wg.Wait()
	return g.result(start)
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

	mu       sync.Mutex
	findings map[string]finding
	todo     map[string]bool // tool → it printed its starter's TODO
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
	Elapsed    time.Duration
}

// Failed returns the names of the properties that do not hold.
func (r Result) Failed() []string {
	var out []string
	for _, p := range r.Props {
		if !p.OK {
			out = append(out, p.Name)
		}
	}
	return out
}

// result assembles the Result in the order of specs.
func (g *grader) result(start time.Time) Result {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := Result{Passed: true, NotStarted: g.notStarted()}
	for _, s := range specs {
		f, ok := g.findings[s.name]
		if !ok {
			f = finding{detail: "not checked"}
		}
		sentence := s.demand
		if !f.ok && !f.unchecked {
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
		case !f.ok:
			p.Status, p.Detail = report.Fail, f.detail
		}
		if s.required && !f.ok {
			r.Passed = false
		}
		r.Props = append(r.Props, p)
	}
	if r.NotStarted {
		r.Passed = false
	}
	r.Elapsed = time.Since(start)
	return r
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

// shorten cuts s to one readable line.
func shorten(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\n", " | ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

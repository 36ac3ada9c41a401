// Package report is the one result model of `lab check`, whatever the
// grading method: a report with a verdict, the answer's run on the correct
// build (for mutant-graded exercises), and one property per thing checked —
// a mutant to catch, a wheat to pass, or a measured property to hold. It
// renders as text for a terminal and as the JSON of `lab check --json`.
//
// The same JSON is how a lesson's own grader answers lab check. A lesson
// that has one (lessons/NN/grader, a main package calling grade.Main) is
// built by lab check into its cache and run, in the repository root, as
//
//	grader --root DIR --exercise ENN --answer PATH --cache DIR --lang en|zh-CN --timeout D
//	       [--repeat N] [--separate] [--variant NAME] [--only NAME] [--seed N] [--case CASE]
//	       [--accept] [--report FILE]
//
// PATH is a slash path from DIR, or an absolute folder; the flags are lab
// check's own. First with --accept: the grader only checks the request,
// and exits 0 printing one JSON object, what lab watch watches and what a
// check does for a person waiting on it (kit/grade's Description):
//
//	{"watch": ["*.go", "budget_plan.json"], "watching": "...", "doing": "..."}
//
// or exits 2 with one line on stderr, the reason the request is wrong,
// which lab check prints as its usage error. Then without --accept: the
// grader grades, and exits 0 with a Report as one JSON document on stdout
// (or in FILE), its verdict inside. Any other exit, or no report, is the
// grader's own failure: lab check reports FAILED with what it printed.
// The grader runs as an answer does: in a process group of its own,
// killed whole when the check stops or after ten minutes, and what it
// leaves running is killed and counted.
package report

import (
	"encoding/json"
	"io"

	"quoteflowlab.dev/kit/msg"
)

// SchemaVersion is the version of the JSON document. It changes only when
// a field is removed or changes meaning; new fields may appear at any time.
const SchemaVersion = 1

// Method is how an exercise is graded.
type Method string

const (
	// Mutants: the answer is a test; it must pass on the correct checkpoint
	// and on every wheat, and fail on every mutant.
	Mutants Method = "mutants"
	// Measured: the answer is a set of tools; the grader runs them and
	// measures each property itself.
	Measured Method = "measured"
)

// Verdict is the outcome of one check.
type Verdict string

const (
	Passed     Verdict = "passed"
	Failed     Verdict = "failed"
	NotStarted Verdict = "not_started"
	// Inconclusive: a timed check failed while the machine was too busy
	// for its timing to mean anything, and failed again on a re-run.
	// Never given to an answer whose failure the machine's load cannot explain.
	Inconclusive Verdict = "inconclusive"
	// Flaky: with --repeat, the same build gave different results.
	Flaky Verdict = "flaky"
)

// ExitCode is the lab check exit code of a verdict: 0 passed, 3
// inconclusive (try again on a quieter machine), 1 otherwise.
func (v Verdict) ExitCode() int {
	switch v {
	case Passed:
		return 0
	case Inconclusive:
		return 3
	}
	return 1
}

// Kind is what a property, or a check defined by an edit (package
// check), is.
type Kind string

const (
	Mutant  Kind = "mutant"   // a build with one bug: the answer must fail on it
	Wheat   Kind = "wheat"    // a correct build that differs: the answer must pass on it
	Measure Kind = "measured" // a property the grader measures (E15)
	// Broken is a reference tool with one bug (E15's lessons/15/checks):
	// the grader must reject it. It is never a property of a report.
	Broken Kind = "broken"
)

// Statuses. Mutant statuses follow mutation-testing tools.
const (
	Caught    = "caught"     // mutant: the answer failed on it, as it must
	Missed    = "missed"     // mutant: the answer passed on it
	TimedOut  = "timed_out"  // the answer hung on this build and was killed
	NotViable = "not_viable" // the mutant or wheat itself did not build: a course bug, never the student's miss
	NotRun    = "not_run"    // not run: the answer must pass on the correct build first

	Pass = "passed" // wheat or reference run: the answer passed, as it must
	Fail = "failed" // wheat or reference run: the answer failed; measured: does not hold

	OK          = "ok"           // measured: holds
	Skipped     = "skipped"      // measured: cannot be checked on this system; not held against the answer
	ToDo        = "to_do"        // measured: not met by an answer that is not started yet
	BuildFailed = "build_failed" // reference run: the answer does not compile
	Busy        = "inconclusive" // went wrong while the machine was too busy to judge timing (on both tries, or both rounds)
)

// Report is the result of checking one answer.
type Report struct {
	SchemaVersion int `json:"schema_version"`
	// Lang is the language of the report's sentences (summary, next, notes,
	// stories, details): "en" or "zh-CN". Every other field is the same in
	// both.
	Lang       string   `json:"lang,omitempty"`
	Exercise   string   `json:"exercise"` // "E14"
	Title      string   `json:"title"`
	Method     Method   `json:"method"`
	Answer     string   `json:"answer"`               // the answer checked (slash path from the repository root when inside it)
	Checkpoint string   `json:"checkpoint,omitempty"` // mutants: the checkpoint it runs against
	Variant    string   `json:"variant,omitempty"`    // measured, instructors: the broken variant swapped in
	Verdict    Verdict  `json:"verdict"`
	OK         bool     `json:"ok"`             // Verdict == Passed
	Summary    string   `json:"summary"`        // the verdict as one sentence
	Next       string   `json:"next,omitempty"` // what to do now, when not passed
	Reference  *Run     `json:"reference,omitempty"`
	Properties []Prop   `json:"properties"`
	Score      *Score   `json:"score,omitempty"`
	Machine    *Machine `json:"machine,omitempty"`
	Repeat     int      `json:"repeat,omitempty"` // runs per build with --repeat
	Notes      []string `json:"notes,omitempty"`  // re-runs and other things worth knowing
	ElapsedMS  int64    `json:"elapsed_ms"`
	// BuildMS: mutants, the wall time of building the answer (the schema
	// build, and any mutant or wheat built on its own), before any run.
	BuildMS int64    `json:"build_ms,omitempty"`
	Timings *Timings `json:"timings,omitempty"` // where the time went (mutants; E15: the whole grading)
}

// Timings says where a check's time went, step by step, in the order the
// steps ended: each build, each run of the answer (re-runs included), and
// each wait of a run for its turn.
type Timings struct {
	Steps []Step `json:"steps"`
}

// A Step is one build, run or wait.
type Step struct {
	Kind string `json:"kind"` // build, run, wait
	What string `json:"what"` // which build or run
	MS   int64  `json:"ms"`
}

// Add records a step; the zero Timings is ready to use.
func (t *Timings) Add(kind, what string, ms int64) {
	t.Steps = append(t.Steps, Step{Kind: kind, What: what, MS: ms})
}

// Run is one execution of the answer on the correct build.
type Run struct {
	Status    string `json:"status"` // passed, failed, build_failed, timed_out
	ExitCode  int    `json:"exit_code"`
	Output    string `json:"output"` // the answer's output (or the compiler's)
	ElapsedMS int64  `json:"elapsed_ms"`
	PassRate  string `json:"pass_rate,omitempty"` // with --repeat: "4/5"
}

// Prop is one thing the answer must show: a mutant to catch, a wheat to
// pass, or a measured property to hold.
type Prop struct {
	Name     string `json:"name"`
	Kind     Kind   `json:"kind"`
	Story    string `json:"story"` // one sentence for a student
	Required bool   `json:"required"`
	OK       bool   `json:"ok"`
	Status   string `json:"status"`
	Detail   string `json:"detail,omitempty"`
	PassRate string `json:"pass_rate,omitempty"` // with --repeat: runs that exited 0, "2/5"
	// Flaky: with --repeat, this build's runs did not all agree.
	Flaky bool `json:"flaky,omitempty"`
	// ElapsedMS: mutants and wheats, the wall time of this build's runs
	// (re-runs included), from the first run's start to the last one's end.
	ElapsedMS int64 `json:"elapsed_ms,omitempty"`
	// Generated: a mutant made by the generator (lab/internal/mutagen),
	// required because the reference answer catches it every time. They
	// run once every hand-written mutant is caught, and are shown as a
	// group.
	Generated *GeneratedFrom `json:"generated,omitempty"`
}

// GeneratedFrom says where a generated mutant comes from.
type GeneratedFrom struct {
	Op       string `json:"op"`       // the operator: boundary, case_removed, const_inc, ...
	Where    string `json:"where"`    // "quoteflow/retry.go:45 (Service.withRetry)"
	Edit     string `json:"edit"`     // "`a < b` → `a <= b`"
	Property string `json:"property"` // the property of the exercise it breaks (its row of properties.md)
	// PropertyZh is Property in Chinese (its row of properties.zh-CN.md).
	PropertyZh string `json:"property_zh,omitempty"`
}

// Score is the mutation score: how many mutants the answer caught.
type Score struct {
	RequiredCaught int `json:"required_caught"`
	Required       int `json:"required"`
	BonusCaught    int `json:"bonus_caught"`
	Bonus          int `json:"bonus"`
	WheatsPassed   int `json:"wheats_passed"`
	Wheats         int `json:"wheats"`
	// Generated mutants (required all), counted apart from the hand-written.
	GeneratedCaught int `json:"generated_caught,omitempty"`
	Generated       int `json:"generated,omitempty"`
}

// Machine is how busy the machine was while the answer ran: how late a
// 10 ms timer fired, sampled throughout, and the kernel's CPU pressure.
type Machine struct {
	LagP50MS float64 `json:"lag_p50_ms"`
	LagP99MS float64 `json:"lag_p99_ms"`
	LagMaxMS float64 `json:"lag_max_ms"`
	// CPUPressure (Linux): the share of the time some task of the machine
	// was ready to run but waited for a CPU.
	CPUPressure float64 `json:"cpu_pressure,omitempty"`
	// MaxStarved (Linux): of the answer's runs, the most its threads waited
	// for a CPU, as a share of the run's wall time (summed over threads).
	MaxStarved float64 `json:"max_starved,omitempty"`
	Busy       bool    `json:"busy"` // the lab's timer fired late: too busy for a timed check to mean anything
}

// Counts returns how many required and bonus mutants or properties are ok,
// and how many there are (wheats and generated mutants not included).
func (r *Report) Counts() (reqOK, req, bonusOK, bonus int) {
	for _, p := range r.Properties {
		if p.Kind == Wheat || p.Generated != nil {
			continue
		}
		if p.Required {
			req++
			if p.OK {
				reqOK++
			}
		} else {
			bonus++
			if p.OK {
				bonusOK++
			}
		}
	}
	return
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	r.SchemaVersion = SchemaVersion
	r.Lang = string(msg.Current())
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MaxStarved returns the most any run was starved so far.
func (r *Report) MaxStarved() float64 {
	if r.Machine == nil {
		return 0
	}
	return r.Machine.MaxStarved
}

// SetMaxStarved records how much a run was starved.
func (r *Report) SetMaxStarved(v float64) {
	if r.Machine == nil {
		r.Machine = &Machine{}
	}
	r.Machine.MaxStarved = v
}

// GeneratedCounts returns how many generated mutants were caught, and how
// many there are.
func (r *Report) GeneratedCounts() (caught, n int) {
	for _, p := range r.Properties {
		if p.Generated != nil && p.Kind == Mutant {
			n++
			if p.OK {
				caught++
			}
		}
	}
	return caught, n
}

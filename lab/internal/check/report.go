package check

import (
	"fmt"
	"io"
	"strings"
)

// Verdict is the outcome of one check.
type Verdict string

const (
	Passed     Verdict = "passed"
	Failed     Verdict = "failed"
	NotStarted Verdict = "not_started"
)

// Status words of a reference run and of a property (a mutant, or a
// grader's property such as E15's).
const (
	StatusPassed      = "passed"       // reference: the answer exited 0
	StatusFailed      = "failed"       // reference: the answer exited non-zero; property: not met
	StatusBuildFailed = "build failed" // the answer (or, for a mutant, the mutant) does not compile
	StatusTimedOut    = "timed out"    // killed after the run's time limit
	StatusCaught      = "caught"       // mutant: the answer failed on it, as it should
	StatusMissed      = "missed"       // mutant: the answer passed on it
	StatusNotRun      = "not run"      // skipped: the answer must pass on the reference first
	StatusOK          = "ok"           // property met (graders)
	StatusSkipped     = "skipped"      // property not checkable on this system; not held against the answer (graders)
	StatusToDo        = "to do"        // property not met by an answer that is not started yet (graders)
)

// Report is the result of checking one answer. It is rendered as text by
// WriteText and marshals to the JSON document of `lab check --json`.
type Report struct {
	Exercise   string     `json:"exercise"`             // "E14"
	Title      string     `json:"title"`                // the lesson's title
	Answer     string     `json:"answer"`               // slash path of the answer, relative to the repository root
	Checkpoint string     `json:"checkpoint,omitempty"` // slash path of the checkpoint it runs against
	Variant    string     `json:"variant,omitempty"`    // E15, instructors: the broken variant swapped into the answer
	Verdict    Verdict    `json:"verdict"`
	OK         bool       `json:"ok"`                  // Verdict == Passed
	Summary    string     `json:"summary"`             // the verdict as one sentence
	Next       string     `json:"next,omitempty"`      // what to do now, when not passed
	Reference  *Run       `json:"reference,omitempty"` // the answer on the correct checkpoint (mutant-checked exercises)
	Properties []Property `json:"properties"`          // mutants, or a grader's properties
	ElapsedMS  int64      `json:"elapsed_ms"`
}

// Run is one execution of the answer.
type Run struct {
	Status    string `json:"status"` // passed, failed, build failed, timed out
	ExitCode  int    `json:"exit_code"`
	Output    string `json:"output"` // the answer's stdout and stderr (or the compiler's)
	ElapsedMS int64  `json:"elapsed_ms"`
}

// Property is one thing the answer must show: for mutant-checked exercises,
// one mutant it must catch; for graded ones (E15), one measured property.
type Property struct {
	Name     string `json:"name"`
	Story    string `json:"story"` // one sentence for a student
	Required bool   `json:"required"`
	OK       bool   `json:"ok"`
	Status   string `json:"status"`
	Detail   string `json:"detail,omitempty"`
}

// Counts returns how many required and bonus properties are ok, and how many
// there are.
func (r *Report) Counts() (reqOK, req, bonusOK, bonus int) {
	for _, p := range r.Properties {
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

// WriteText renders the report for a terminal.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s · %s\n", r.Exercise, r.Title)
	switch {
	case r.Checkpoint != "":
		fmt.Fprintf(w, "answer: %s    checkpoint: %s\n", r.Answer, r.Checkpoint)
	case r.Variant != "":
		fmt.Fprintf(w, "answer: %s    with broken variant: %s\n", r.Answer, r.Variant)
	default:
		fmt.Fprintf(w, "answer: %s\n", r.Answer)
	}
	fmt.Fprintln(w)
	if ref := r.Reference; ref != nil {
		r.writeReference(w, ref)
	}
	r.writeProperties(w)
	fmt.Fprintf(w, "verdict: %s: %s\n", verdictWord(r.Verdict), r.Summary)
	if r.Next != "" {
		fmt.Fprintf(w, "next: %s\n", r.Next)
	}
}

func (r *Report) writeReference(w io.Writer, ref *Run) {
	secs := seconds(ref.ElapsedMS)
	switch ref.Status {
	case StatusPassed:
		fmt.Fprintf(w, "on %s (unbroken): passed (%s)\n", r.Checkpoint, secs)
		for _, line := range wrap(lastLine(ref.Output), 76) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	case StatusBuildFailed:
		fmt.Fprintf(w, "build: the answer does not compile:\n")
		indent(w, "    | ", ref.Output)
	case StatusTimedOut:
		fmt.Fprintf(w, "on %s (unbroken): TIMED OUT (hung?) after %s; its output so far:\n", r.Checkpoint, secs)
		indent(w, "    | ", orNone(ref.Output))
	default:
		fmt.Fprintf(w, "on %s (unbroken): FAILED (exit %d, %s); it must pass here first. Its output:\n", r.Checkpoint, ref.ExitCode, secs)
		indent(w, "    | ", orNone(ref.Output))
	}
	fmt.Fprintln(w)
}

func (r *Report) writeProperties(w io.Writer) {
	if len(r.Properties) == 0 {
		return
	}
	switch {
	case r.Reference != nil && r.Reference.Status != StatusPassed:
		fmt.Fprintf(w, "mutants (not run until the answer passes on %s; it will have to fail on each):\n", r.Checkpoint)
	case r.Reference != nil:
		fmt.Fprintf(w, "mutants (each is %s with one bug; the answer must fail on every one):\n", r.Checkpoint)
	default:
		fmt.Fprintln(w, "properties:")
	}
	for _, p := range r.Properties {
		kind := "bonus"
		if p.Required {
			kind = "required"
		}
		fmt.Fprintf(w, "  %-8s %-8s  %s\n", statusWord(p), kind, p.Name)
		for _, line := range wrap(p.Story, 70) {
			fmt.Fprintf(w, "%21s%s\n", "", line)
		}
		if p.Detail != "" {
			indent(w, strings.Repeat(" ", 21)+"> ", p.Detail)
		}
	}
	fmt.Fprintln(w)
}

// statusWord shouts what decides a failing verdict.
func statusWord(p Property) string {
	if p.OK || !p.Required || p.Status == StatusNotRun || p.Status == StatusToDo {
		return p.Status
	}
	return strings.ToUpper(p.Status)
}

func verdictWord(v Verdict) string {
	switch v {
	case Passed:
		return "PASSED"
	case NotStarted:
		return "NOT STARTED"
	}
	return "FAILED"
}

func indent(w io.Writer, prefix, text string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return
	}
	for line := range strings.SplitSeq(text, "\n") {
		fmt.Fprintf(w, "%s%s\n", prefix, strings.TrimRight(line, "\r"))
	}
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(no output)"
	}
	return s
}

// lastLine returns the last non-empty line of s: where an answer says
// whether it passed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\r\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

// shorten cuts s to n runes for a one-line detail.
func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// wrap breaks text into lines of at most width runes at spaces (a longer
// word gets a line of its own).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len([]rune(line))+1+len([]rune(word)) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

func seconds(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

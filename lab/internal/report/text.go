package report

import (
	"fmt"
	"io"
	"strings"
)

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
	if s := r.Score; s != nil && r.Reference != nil && r.Reference.Status == Pass {
		fmt.Fprintf(w, "mutation score: required %d/%d, bonus %d/%d; wheats passed %d/%d",
			s.RequiredCaught, s.Required, s.BonusCaught, s.Bonus, s.WheatsPassed, s.Wheats)
		if s.Generated > 0 {
			fmt.Fprintf(w, "; generated %d/%d", s.GeneratedCaught, s.Generated)
		}
		fmt.Fprintln(w)
	}
	for _, n := range r.Notes {
		for i, line := range wrap(n, 90) {
			if i == 0 {
				fmt.Fprintf(w, "note: %s\n", line)
			} else {
				fmt.Fprintf(w, "      %s\n", line)
			}
		}
	}
	fmt.Fprintf(w, "verdict: %s: %s\n", VerdictWord(r.Verdict), r.Summary)
	if r.Next != "" {
		fmt.Fprintf(w, "next: %s\n", r.Next)
	}
}

func (r *Report) writeReference(w io.Writer, ref *Run) {
	secs := Seconds(ref.ElapsedMS)
	rate := ""
	if ref.PassRate != "" {
		rate = ", passed " + ref.PassRate + " runs"
	}
	switch ref.Status {
	case Pass:
		fmt.Fprintf(w, "on %s (unbroken): passed (%s%s)\n", r.Checkpoint, secs, rate)
		for _, line := range wrap(LastLine(ref.Output), 76) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	case BuildFailed:
		fmt.Fprintf(w, "build: the answer does not compile:\n")
		Indent(w, "    | ", ref.Output)
	case TimedOut:
		fmt.Fprintf(w, "on %s (unbroken): TIMED OUT after %s; its output so far:\n", r.Checkpoint, secs)
		Indent(w, "    | ", orNone(ref.Output))
	default:
		fmt.Fprintf(w, "on %s (unbroken): FAILED (exit %d, %s%s); it must pass here first. Its output:\n", r.Checkpoint, ref.ExitCode, secs, rate)
		Indent(w, "    | ", orNone(ref.Output))
	}
	fmt.Fprintln(w)
}

func (r *Report) writeProperties(w io.Writer) {
	var muts, gen, genWheats, wheats, measured []Prop
	for _, p := range r.Properties {
		switch {
		case p.Generated != nil && p.Kind == Wheat:
			genWheats = append(genWheats, p)
		case p.Generated != nil:
			gen = append(gen, p)
		case p.Kind == Wheat:
			wheats = append(wheats, p)
		case p.Kind == Mutant:
			muts = append(muts, p)
		default:
			measured = append(measured, p)
		}
	}
	notRun := r.Reference != nil && r.Reference.Status != Pass
	if len(muts) > 0 {
		if notRun {
			fmt.Fprintf(w, "mutants (not run until the answer passes on %s; it will have to fail on each):\n", r.Checkpoint)
		} else {
			fmt.Fprintf(w, "mutants (each is %s with one bug; the answer must fail on every one):\n", r.Checkpoint)
		}
		writeProps(w, muts)
	}
	if len(gen) > 0 {
		writeGenerated(w, gen, notRun)
	}
	if len(wheats) > 0 {
		if notRun {
			fmt.Fprintln(w, "wheats (not run yet; the answer will have to pass on each):")
		} else {
			fmt.Fprintf(w, "wheats (each is %s changed in a way the contract allows; the answer must pass on every one):\n", r.Checkpoint)
		}
		writeProps(w, wheats)
	}
	if len(genWheats) > 0 {
		writeGeneratedWheats(w, genWheats, notRun)
	}
	if len(measured) > 0 {
		fmt.Fprintln(w, "properties:")
		writeProps(w, measured)
	}
}

func writeProps(w io.Writer, props []Prop) {
	for _, p := range props {
		kind := "bonus"
		if p.Required {
			kind = "required"
		}
		status := StatusWord(p)
		if p.PassRate != "" {
			kind += " (" + p.PassRate + " passed)"
		}
		fmt.Fprintf(w, "  %-10s %-8s  %s\n", status, kind, p.Name)
		for _, line := range wrap(p.Story, 70) {
			fmt.Fprintf(w, "%23s%s\n", "", line)
		}
		if p.Detail != "" {
			Indent(w, strings.Repeat(" ", 23)+"> ", p.Detail)
		}
	}
	fmt.Fprintln(w)
}

// writeGenerated shows the generated mutants as one group: how many were
// caught, and each one that was not, with where it is and what it breaks.
func writeGenerated(w io.Writer, gen []Prop, notRun bool) {
	caught, run := 0, 0
	var bad []Prop
	for _, p := range gen {
		if p.OK {
			caught++
		}
		if p.Status != NotRun {
			run++
		}
		if !p.OK && p.Status != NotRun {
			bad = append(bad, p)
		}
	}
	if notRun || run == 0 {
		fmt.Fprintf(w, "generated mutants: %d, not run yet: they run once the answer catches every hand-written mutant and passes every wheat\n\n", len(gen))
		return
	}
	fmt.Fprintf(w, "generated mutants (every small edit of the code the exercise is about that the reference answer catches): %d of %d caught\n", caught, len(gen))
	for _, p := range bad {
		g := p.Generated
		fmt.Fprintf(w, "  %-10s %-14s %s\n", StatusWord(p), g.Op, p.Name)
		fmt.Fprintf(w, "%23sat %s: %s\n", "", g.Where, g.Edit)
		for i, line := range wrap("it breaks: "+g.Property, 70) {
			if i > 0 {
				line = "  " + line
			}
			fmt.Fprintf(w, "%23s%s\n", "", line)
		}
		if p.Detail != "" {
			Indent(w, strings.Repeat(" ", 23)+"> ", p.Detail)
		}
	}
	fmt.Fprintln(w)
}

// writeGeneratedWheats shows the generated wheats as one group: how many
// passed, and each one the answer failed on, with what it changes.
func writeGeneratedWheats(w io.Writer, gen []Prop, notRun bool) {
	passed, run := 0, 0
	var bad []Prop
	for _, p := range gen {
		if p.OK {
			passed++
		}
		if p.Status != NotRun {
			run++
		}
		if !p.OK && p.Status != NotRun {
			bad = append(bad, p)
		}
	}
	if notRun || run == 0 {
		fmt.Fprintf(w, "generated wheats: %d, not run yet: they run with the generated mutants\n\n", len(gen))
		return
	}
	fmt.Fprintf(w, "generated wheats (every change the contract allows where it allows it, on which the reference answer passes): %d of %d passed\n", passed, len(gen))
	for _, p := range bad {
		g := p.Generated
		fmt.Fprintf(w, "  %-10s %-14s %s\n", StatusWord(p), g.Op, p.Name)
		fmt.Fprintf(w, "%23sat %s: %s\n", "", g.Where, g.Edit)
		if p.Detail != "" {
			Indent(w, strings.Repeat(" ", 23)+"> ", p.Detail)
		}
	}
	fmt.Fprintln(w)
}

// StatusWord is a property's status as printed: words, and shouted when it
// decides a failing verdict.
func StatusWord(p Prop) string {
	s := strings.ReplaceAll(p.Status, "_", " ")
	if p.OK || !p.Required || p.Status == NotRun || p.Status == ToDo || p.Status == Busy {
		return s
	}
	return strings.ToUpper(s)
}

// VerdictWord is the verdict as printed.
func VerdictWord(v Verdict) string {
	switch v {
	case Passed:
		return "PASSED"
	case NotStarted:
		return "NOT STARTED"
	case Inconclusive:
		return "INCONCLUSIVE: machine too busy"
	case Flaky:
		return "FLAKY"
	}
	return "FAILED"
}

// Indent writes text with prefix before each line.
func Indent(w io.Writer, prefix, text string) {
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

// LastLine returns the last non-empty line of s: where an answer says
// whether it passed.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\r\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}

// OneLine joins the lines of s with " | ", for a detail that must stay on
// one line.
func OneLine(s string) string {
	return strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")
}

// Shorten cuts s to n runes for a detail.
func Shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// wrap breaks text into lines of at most width runes at spaces.
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

// Seconds formats milliseconds for a person.
func Seconds(ms int64) string {
	if ms < 1000 {
		return fmt.Sprintf("%d ms", ms)
	}
	return fmt.Sprintf("%.1f s", float64(ms)/1000)
}

// WriteTimings writes where the check's time went, one step a line.
func (r *Report) WriteTimings(w io.Writer) {
	if r.Timings == nil || len(r.Timings.Steps) == 0 {
		fmt.Fprintf(w, "timings: the whole check took %s (no steps recorded)\n", Seconds(r.ElapsedMS))
		return
	}
	fmt.Fprintf(w, "timings (the whole check: %s):\n", Seconds(r.ElapsedMS))
	for _, s := range r.Timings.Steps {
		fmt.Fprintf(w, "  %-5s %8s  %s\n", s.Kind, Seconds(s.MS), s.What)
	}
}

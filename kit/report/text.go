package report

import (
	"fmt"
	"io"
	"strings"

	"quoteflowlab.dev/kit/msg"
)

// WriteText renders the report for a terminal.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s · %s\n", r.Exercise, r.Title)
	switch {
	case r.Checkpoint != "":
		fmt.Fprint(w, msg.T("report.answer_checkpoint", r.Answer, r.Checkpoint))
	case r.Variant != "":
		fmt.Fprint(w, msg.T("report.answer_variant", r.Answer, r.Variant))
	default:
		fmt.Fprint(w, msg.T("report.answer", r.Answer))
	}
	fmt.Fprintln(w)
	if ref := r.Reference; ref != nil {
		r.writeReference(w, ref)
	}
	r.writeProperties(w)
	if s := r.Score; s != nil && r.Reference != nil && r.Reference.Status == Pass {
		fmt.Fprint(w, msg.T("report.score", s.RequiredCaught, s.Required, s.BonusCaught, s.Bonus, s.WheatsPassed, s.Wheats))
		if s.Generated > 0 {
			fmt.Fprint(w, msg.T("report.score_generated", s.GeneratedCaught, s.Generated))
		}
		fmt.Fprintln(w)
	}
	note := msg.T("report.note")
	for _, n := range r.Notes {
		for i, line := range wrap(n, 90) {
			if i == 0 {
				fmt.Fprintf(w, "%s%s\n", note, line)
			} else {
				fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", Columns(note)), line)
			}
		}
	}
	fmt.Fprint(w, msg.T("report.verdict", VerdictWord(r.Verdict), r.Summary))
	if r.Next != "" {
		fmt.Fprint(w, msg.T("report.next", r.Next))
	}
}

func (r *Report) writeReference(w io.Writer, ref *Run) {
	secs := Seconds(ref.ElapsedMS)
	rate := ""
	if ref.PassRate != "" {
		rate = msg.T("report.ref_rate", ref.PassRate)
	}
	switch ref.Status {
	case Pass:
		fmt.Fprint(w, msg.T("report.ref_passed", r.Checkpoint, secs, rate))
		for _, line := range wrap(LastLine(ref.Output), 76) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	case BuildFailed:
		fmt.Fprint(w, msg.T("report.ref_build_failed"))
		Indent(w, "    | ", ref.Output)
	case TimedOut:
		fmt.Fprint(w, msg.T("report.ref_timed_out", r.Checkpoint, secs))
		Indent(w, "    | ", orNone(ref.Output))
	default:
		fmt.Fprint(w, msg.T("report.ref_failed", r.Checkpoint, ref.ExitCode, secs, rate))
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
			fmt.Fprint(w, msg.T("report.mutants_not_run", r.Checkpoint))
		} else {
			fmt.Fprint(w, msg.T("report.mutants", r.Checkpoint))
		}
		writeProps(w, muts)
	}
	if len(gen) > 0 {
		writeGenerated(w, gen, notRun)
	}
	if len(wheats) > 0 {
		if notRun {
			fmt.Fprint(w, msg.T("report.wheats_not_run"))
		} else {
			fmt.Fprint(w, msg.T("report.wheats", r.Checkpoint))
		}
		writeProps(w, wheats)
	}
	if len(genWheats) > 0 {
		writeGeneratedWheats(w, genWheats, notRun)
	}
	if len(measured) > 0 {
		fmt.Fprint(w, msg.T("report.properties"))
		writeProps(w, measured)
	}
}

func writeProps(w io.Writer, props []Prop) {
	for _, p := range props {
		kind := msg.T("report.bonus")
		if p.Required {
			kind = msg.T("report.required")
		}
		status := StatusWord(p)
		if p.PassRate != "" {
			kind += msg.T("report.pass_rate", p.PassRate)
		}
		fmt.Fprintf(w, "  %s %s  %s\n", Pad(status, 10), Pad(kind, 8), p.Name)
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
		fmt.Fprint(w, msg.T("report.generated_not_run", len(gen)))
		return
	}
	fmt.Fprint(w, msg.T("report.generated", caught, len(gen)))
	for _, p := range bad {
		g := p.Generated
		fmt.Fprintf(w, "  %s %-14s %s\n", Pad(StatusWord(p), 10), g.Op, p.Name)
		fmt.Fprintf(w, "%23s%s\n", "", msg.T("report.generated_at", g.Where, g.Edit))
		for i, line := range wrap(msg.T("report.it_breaks", msg.Pick(g.Property, g.PropertyZh)), 70) {
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
		fmt.Fprint(w, msg.T("report.gen_wheats_not_run", len(gen)))
		return
	}
	fmt.Fprint(w, msg.T("report.gen_wheats", passed, len(gen)))
	for _, p := range bad {
		g := p.Generated
		fmt.Fprintf(w, "  %s %-14s %s\n", Pad(StatusWord(p), 10), g.Op, p.Name)
		fmt.Fprintf(w, "%23s%s\n", "", msg.T("report.generated_at", g.Where, g.Edit))
		if p.Detail != "" {
			Indent(w, strings.Repeat(" ", 23)+"> ", p.Detail)
		}
	}
	fmt.Fprintln(w)
}

// StatusWord is a property's status as printed: words, and shouted when it
// decides a failing verdict.
func StatusWord(p Prop) string {
	id := "status." + p.Status
	if !p.OK && p.Required && p.Status != NotRun && p.Status != ToDo && p.Status != Busy {
		id += ".loud" // shouted in English
	}
	if !msg.Has(msg.English, id) { // a status with no message: its name, as before the catalog
		s := strings.ReplaceAll(p.Status, "_", " ")
		if strings.HasSuffix(id, ".loud") {
			s = strings.ToUpper(s)
		}
		return s
	}
	return msg.T(id)
}

// VerdictWord is the verdict as printed.
func VerdictWord(v Verdict) string {
	switch v {
	case Passed, NotStarted, Inconclusive, Flaky:
		return msg.T("verdict." + string(v))
	}
	return msg.T("verdict.failed")
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
		return msg.T("report.no_output")
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

// wrap breaks text into lines of at most width columns at spaces; text
// with CJK characters (two columns each, and no spaces between words) also
// breaks between two of them, never before closing punctuation.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case Columns(line)+1+Columns(word) <= width:
			line += " " + word
		case hasWide(line) || hasWide(word):
			line += " " + word // broken below, between two characters
		default:
			lines = append(lines, line)
			line = word
		}
		for Columns(line) > width {
			cut := cjkCut(line, width)
			if cut <= 0 {
				break
			}
			lines = append(lines, strings.TrimRight(line[:cut], " "))
			line = strings.TrimLeft(line[cut:], " ")
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

func hasWide(s string) bool { return strings.IndexFunc(s, Wide) >= 0 }

// cjkCut is where to break s to keep it within width columns: the last
// byte offset, at most width columns in, that is a space or touches a CJK
// character (never before closing punctuation or after opening); 0 when
// there is none.
func cjkCut(s string, width int) int {
	cut, cols := 0, 0
	var prev rune
	for i, r := range s {
		if i > 0 && (r == ' ' || (Wide(prev) || Wide(r)) && !strings.ContainsRune("，。；：、）」』》！？”", r) && !strings.ContainsRune("（「『《“", prev)) {
			cut = i
		}
		cols += runeCols(r)
		if cols > width {
			return cut
		}
		prev = r
	}
	return 0
}

// Columns is how many terminal columns s takes: a CJK character takes two.
func Columns(s string) int {
	n := 0
	for _, r := range s {
		n += runeCols(r)
	}
	return n
}

func runeCols(r rune) int {
	if Wide(r) {
		return 2
	}
	return 1
}

// Wide reports whether r is shown two columns wide (CJK ideographs and
// punctuation, full-width forms).
func Wide(r rune) bool {
	return r >= 0x1100 && (r <= 0x115f || (r >= 0x2e80 && r <= 0xa4cf) || (r >= 0xac00 && r <= 0xd7a3) ||
		(r >= 0xf900 && r <= 0xfaff) || (r >= 0xfe30 && r <= 0xfe4f) || (r >= 0xff00 && r <= 0xff60) || (r >= 0xffe0 && r <= 0xffe6))
}

// width is columns, for a prefix.
func width(s string) int { return Columns(s) }

// Pad fills s with spaces to n columns, as %-*s does for text of
// one-column characters.
func Pad(s string, n int) string {
	if c := Columns(s); c < n {
		return s + strings.Repeat(" ", n-c)
	}
	return s
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
		fmt.Fprint(w, msg.T("report.timings_none", Seconds(r.ElapsedMS)))
		return
	}
	fmt.Fprint(w, msg.T("report.timings", Seconds(r.ElapsedMS)))
	for _, s := range r.Timings.Steps {
		fmt.Fprintf(w, "  %-5s %8s  %s\n", s.Kind, Seconds(s.MS), s.What)
	}
}

package mutagen

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Statuses of a generated mutant after a kill-set run (the reference
// answer run on it Runs times).
const (
	Required = "required" // the reference failed on it every run: every answer must
	Merged   = "merged"   // as a required one, with the same message in the same function: MergedInto stands for it
	Survivor = "survivor" // the reference passed on it every run: reviewed (Review)
	Unstable = "unstable" // the reference failed on it in some runs only: not required
	Hangs    = "hangs"    // the reference did not finish on it in time: not required, reviewed

	// A generated wheat's (wheats.txt).
	Wheat    = "wheat"    // the reference passed on it every run: every answer must
	Rejected = "rejected" // the reference failed (or hung) on it in some run: reviewed (WheatReviewKind)
)

// WheatReviewKind is the verdict of a rejected wheat's review: the contract
// promises what the change breaks, so it is no wheat ("promised: <what>").
// A reference that pins more than the contract is fixed instead, and the
// wheat run made again.
const WheatReviewKind = "promised"

// Review verdicts for a survivor (a review line reads "<kind>: <reason>").
var ReviewKinds = []string{
	"equivalent",        // no observable behaviour changes
	"out of scope",      // it breaks what the exercise does not ask about
	"property to state", // a real property the page does not state yet
}

// Results is a lesson's kill-set run, as committed in its checks folder
// (generated.txt): what it covers, and one entry per generated mutant.
type Results struct {
	Exercise  string
	Wheats    bool   // generated wheats (wheats.txt), not mutants (generated.txt)
	Command   string // the command that remakes it
	Covers    string // Hash of what the run covered
	Generator string // Version
	Runs      int    // runs of the reference per mutant
	Dropped   int    // candidates that did not compile
	Entries   []Entry
}

// An Entry is one generated mutant's outcome.
type Entry struct {
	Name       string
	Status     string
	MergedInto string // Merged: the required mutant that stands for it
	Op         string
	Where      string // "quoteflow/retry.go:45 (Service.withRetry)"
	Edit       string
	Killed     int    // runs the reference failed on it
	Says       string // the reference's failure (its last line), normalized
	Property   string // Required: the row of properties.md it breaks (not written: derived from Says)
	Review     string // Survivor and Hangs: "<kind>: <reason>"; Unstable: why it is not required
}

// Count is how many entries have status s.
func (r *Results) Count(s string) int {
	n := 0
	for _, e := range r.Entries {
		if e.Status == s {
			n++
		}
	}
	return n
}

// Entry returns the entry named name.
func (r *Results) Entry(name string) (Entry, bool) {
	i := slices.IndexFunc(r.Entries, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return r.Entries[i], true
}

// ReviewFor returns the review of an earlier run that still holds for e (a
// survivor or a hang): the entry of the same name with the same edit and
// status; else, as mutants are numbered by their place in a function and
// an added line renumbers the rest, the one review given to every entry of
// the same edit, operator, file, function and status. A review applies to
// the edit, not to the name: none is guessed when two such entries read
// differently.
func (r *Results) ReviewFor(e Entry) string {
	if r == nil {
		return ""
	}
	if pe, ok := r.Entry(e.Name); ok && pe.Edit == e.Edit && pe.Status == e.Status && pe.Review != "" {
		return pe.Review
	}
	review := ""
	for _, pe := range r.Entries {
		if pe.Review == "" || pe.Edit != e.Edit || pe.Op != e.Op || pe.Status != e.Status || placeOf(pe.Where) != placeOf(e.Where) {
			continue
		}
		if review != "" && review != pe.Review {
			return ""
		}
		review = pe.Review
	}
	return review
}

// placeOf drops the line number of a place: "hedge/hedge.go:78 (Do)" is
// "hedge/hedge.go (Do)".
func placeOf(where string) string {
	file, rest, ok := strings.Cut(where, ":")
	if !ok {
		return where
	}
	_, fn, _ := strings.Cut(rest, " ")
	return file + " " + fn
}

// Write renders r as text (generated.txt).
func (r *Results) Write(w io.Writer) error {
	b := bufio.NewWriter(w)
	head := fmt.Sprintf("# %s: generated mutants of the code in scope.txt, each run %d times against the reference answer.\n"+
		"# Written by the kill-set run; edit only the review: lines (a survivor's verdict: %s).\n", r.Exercise, r.Runs, strings.Join(ReviewKinds, " | "))
	counts := fmt.Sprintf("%d required, %d merged into them, %d survivors, %d unstable, %d hang",
		r.Count(Required), r.Count(Merged), r.Count(Survivor), r.Count(Unstable), r.Count(Hangs))
	if r.Wheats {
		head = fmt.Sprintf("# %s: generated wheats, every change allowed.txt allows, each run %d times against the reference answer.\n"+
			"# Written by the wheat run; edit only the review: lines (a rejected wheat's verdict: %s).\n", r.Exercise, r.Runs, WheatReviewKind)
		counts = fmt.Sprintf("%d wheats, %d rejected", r.Count(Wheat), r.Count(Rejected))
	}
	fmt.Fprintf(b, "%s# Remake: %s\ncovers: %s\ngenerator: %s\nruns: %d\n", head, r.Command, r.Covers, r.Generator, r.Runs)
	fmt.Fprintf(b, "counts: %d generated, %d did not compile (dropped); %s\n", len(r.Entries)+r.Dropped, r.Dropped, counts)
	for _, e := range r.Entries {
		status := e.Status
		if e.Status == Merged {
			status += " into " + e.MergedInto
		}
		fmt.Fprintf(b, "\n%s: %s\n", e.Name, status)
		fmt.Fprintf(b, "\top: %s\n", e.Op)
		fmt.Fprintf(b, "\tat: %s\n", e.Where)
		fmt.Fprintf(b, "\tedit: %s\n", e.Edit)
		if r.Wheats {
			fmt.Fprintf(b, "\tfailed: %d/%d\n", e.Killed, r.Runs)
		} else {
			fmt.Fprintf(b, "\tkilled: %d/%d\n", e.Killed, r.Runs)
		}
		if e.Says != "" {
			fmt.Fprintf(b, "\tsays: %s\n", e.Says)
		}
		if e.Review != "" || e.Status == Survivor || e.Status == Hangs || e.Status == Unstable || e.Status == Rejected {
			fmt.Fprintf(b, "\treview: %s\n", e.Review)
		}
	}
	return b.Flush()
}

// ParseResults reads generated.txt.
func ParseResults(text string) (*Results, error) {
	r := &Results{}
	var cur *Entry
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			if strings.HasPrefix(line, "# Remake: ") {
				r.Command = strings.TrimPrefix(line, "# Remake: ")
			}
			continue
		}
		if strings.HasPrefix(line, "\t") {
			if cur == nil {
				return nil, fmt.Errorf("line %d: an indented line before any mutant", n)
			}
			key, val, ok := strings.Cut(strings.TrimPrefix(line, "\t"), ":")
			if !ok {
				return nil, fmt.Errorf("line %d: want `key: value`", n)
			}
			val = strings.TrimSpace(val)
			switch key {
			case "op":
				cur.Op = val
			case "at":
				cur.Where = val
			case "edit":
				cur.Edit = val
			case "killed", "failed":
				k, _, _ := strings.Cut(val, "/")
				cur.Killed, _ = strconv.Atoi(k)
			case "says":
				cur.Says = val
			case "property":
				cur.Property = val
			case "review":
				cur.Review = val
			default:
				return nil, fmt.Errorf("line %d: unknown key %q", n, key)
			}
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("line %d: want `key: value` or `gen_name: status`", n)
		}
		val = strings.TrimSpace(val)
		switch {
		case key == "covers":
			r.Covers = val
		case key == "generator":
			r.Generator = val
		case key == "runs":
			r.Runs, _ = strconv.Atoi(val)
		case key == "counts":
			if _, err := fmt.Sscanf(val[strings.Index(val, ",")+1:], " %d did not compile", &r.Dropped); err != nil {
				return nil, fmt.Errorf("line %d: counts: %v", n, err)
			}
		case strings.HasPrefix(key, "gen_"):
			e := Entry{Name: key, Status: val}
			if into, ok := strings.CutPrefix(val, Merged+" into "); ok {
				e.Status, e.MergedInto = Merged, into
			}
			if !slices.Contains([]string{Required, Merged, Survivor, Unstable, Hangs, Wheat, Rejected}, e.Status) {
				return nil, fmt.Errorf("line %d: %s: unknown status %q", n, key, val)
			}
			r.Entries = append(r.Entries, e)
			cur = &r.Entries[len(r.Entries)-1]
		default:
			return nil, fmt.Errorf("line %d: unknown key %q", n, key)
		}
	}
	return r, nil
}

package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/report"
)

// runList implements `lab list`: every lesson, its exercise's remembered
// status, the progress, and what to do next.
func runList(args []string, stdout, stderr io.Writer) int {
	fset := newFlags("list", "", stderr)
	noteState(fset)
	pos, code, ok := parseArgs(fset, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(fset, stderr, "takes no arguments")
	}
	root, ok := findRoot("list", stderr)
	if !ok {
		return 1
	}
	st, warnings, err := course.LoadState(course.StateDir(root))
	for _, w := range warnings {
		fmt.Fprintf(stderr, "lab list: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lab list: %v (showing every exercise as not started)\n", err)
	}
	writeList(stdout, root, st)
	return 0
}

func writeList(w io.Writer, root string, st course.State) {
	titles := make([]string, len(course.Lessons))
	width := len("lesson")
	for i, l := range course.Lessons {
		titles[i] = l.DisplayTitle(root)
		width = max(width, len(titles[i])+4)
	}
	fmt.Fprintf(w, "%-*s  %-8s  %s\n", width, "lesson", "exercise", "status")
	passed := 0
	for i, l := range course.Lessons {
		p := st.Exercises[l.Exercise()]
		status := progressWord(p.Status)
		if p.Status != report.Passed && p.PassedAt != nil {
			status += " (passed " + p.PassedAt.Local().Format("Jan 2 15:04") + ")"
		}
		if !p.CheckedAt.IsZero() {
			status += "  (checked " + p.CheckedAt.Local().Format("Jan 2 15:04") + ")"
		}
		if p.Status == report.Passed || p.PassedAt != nil {
			passed++
		}
		fmt.Fprintf(w, "%-*s  %-8s  %s\n", width, fmt.Sprintf("%d  %s", l.Number, titles[i]), l.Exercise(), status)
	}
	fmt.Fprintf(w, "\n%d/%d exercises passed\n", passed, len(course.Lessons))
	fmt.Fprintf(w, "next: %s\n", next(root, st))
}

// next suggests the step after the student's progress: the first exercise
// not passed yet.
func next(root string, st course.State) string {
	for _, l := range course.Lessons {
		ex := l.Exercise()
		switch st.Exercises[ex].Status {
		case report.Passed:
			continue
		case report.Failed:
			return fmt.Sprintf("%s is failing: run `lab check %s` to see what it lets through (`lab hint %s` if you are stuck)", ex, ex, ex)
		}
		page := l.Page()
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(page))); err != nil {
			page = "lesson " + fmt.Sprint(l.Number)
		}
		return fmt.Sprintf("read %s, write %s in %s, then run `lab check %s`", page, ex, l.Starter(), ex)
	}
	if cps := checkpointNumbers(root); len(cps) >= 2 {
		return fmt.Sprintf("every exercise passes. `lab diff %s %s` shows how far QuoteFlow came.", cps[0], cps[len(cps)-1])
	}
	return "every exercise passes."
}

// progressWord says an exercise's recorded verdict as lab list shows it.
func progressWord(v report.Verdict) string {
	switch v {
	case report.Passed:
		return "passed"
	case report.Failed:
		return "failing"
	}
	return "not started"
}

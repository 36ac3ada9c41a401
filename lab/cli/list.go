package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
)

// runList implements `lab list`: every lesson, its exercise's remembered
// status, the progress, and what to do next.
func runList(args []string, stdout, stderr io.Writer) int {
	f := form{name: "list", state: true, wrong: "usage.no_args"}
	c, code, ok := f.parse(f.flags(stderr), args, stderr)
	if !ok {
		return code
	}
	st, warnings, err := course.LoadState(course.StateDir(c.root))
	for _, w := range warnings {
		fmt.Fprint(stderr, msg.T("list.warning", w))
	}
	if err != nil {
		fmt.Fprint(stderr, msg.T("list.state_error", err))
	}
	lessons, ok := loadLessons("list", c.root, stderr)
	if !ok {
		return 1
	}
	writeList(stdout, c.root, lessons, st)
	return 0
}

func writeList(w io.Writer, root string, lessons []course.Lesson, st course.State) {
	titles := make([]string, len(lessons))
	head := msg.T("list.col_lesson")
	width := report.Columns(head)
	for i, l := range lessons {
		titles[i] = l.DisplayTitle(root)
		width = max(width, report.Columns(titles[i])+4)
	}
	fmt.Fprintf(w, "%s  %s  %s\n", report.Pad(head, width), report.Pad(msg.T("list.col_exercise"), 8), msg.T("list.col_status"))
	passed := 0
	for i, l := range lessons {
		p := st.Exercises[l.Exercise()]
		status := progressWord(p.Status)
		if p.Status != report.Passed && p.PassedAt != nil {
			status += msg.T("list.passed_at", p.PassedAt.Local().Format(msg.T("list.time_layout")))
		}
		if !p.CheckedAt.IsZero() {
			status += msg.T("list.checked_at", p.CheckedAt.Local().Format(msg.T("list.time_layout")))
		}
		if p.Status == report.Passed || p.PassedAt != nil {
			passed++
		}
		fmt.Fprintf(w, "%s  %-8s  %s\n", report.Pad(fmt.Sprintf("%d  %s", l.Number, titles[i]), width), l.Exercise(), status)
	}
	fmt.Fprint(w, msg.T("list.passed", passed, len(lessons)))
	fmt.Fprint(w, msg.T("list.next", next(root, lessons, st)))
}

// next suggests the step after the student's progress: the first exercise
// not passed yet.
func next(root string, lessons []course.Lesson, st course.State) string {
	for _, l := range lessons {
		ex := l.Exercise()
		switch st.Exercises[ex].Status {
		case report.Passed:
			continue
		case report.Failed:
			return msg.T("list.next_failing", ex)
		}
		page := msg.Twin(l.Page())
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(page))); err != nil {
			page = l.Page()
		}
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(page))); err != nil {
			page = msg.T("list.lesson_n", l.Number)
		}
		return msg.T("list.next_read", page, ex, l.Starter())
	}
	if cps := checkpointNumbers(root); len(cps) >= 2 {
		return msg.T("list.all_pass_diff", cps[0], cps[len(cps)-1])
	}
	return msg.T("list.all_pass")
}

// progressWord says an exercise's recorded verdict as lab list shows it.
func progressWord(v report.Verdict) string {
	switch v {
	case report.Passed:
		return msg.T("list.status_passed")
	case report.Failed:
		return msg.T("list.status_failing")
	}
	return msg.T("list.status_not_started")
}

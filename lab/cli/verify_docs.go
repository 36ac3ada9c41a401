package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/demo"
	"quoteflowlab.dev/kit/machine"
	"quoteflowlab.dev/kit/report"
)

// docsItems check the lesson pages' figures against fresh runs: one item
// per `lab demo` a page shows, which runs it once and compares every
// figure its markers name, within the tolerance written beside it, on the
// English page and on its Chinese twin (README.zh-CN.md) alike: the twin
// shows the same demo's output, and one run checks both.
func docsItems(root string, lessons []course.Lesson) []verifyItem {
	var items []verifyItem
	for _, l := range lessons {
		var markers []demo.Marker
		var bad []verifyItem
		for _, p := range l.Pages() {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				continue
			}
			ms, err := demo.Markers(p, string(data))
			if err != nil {
				bad = append(bad, verifyItem{
					name: "docs: " + p + " markers",
					run:  func(context.Context) itemResult { return itemResult{Summary: err.Error()} },
				})
				continue
			}
			markers = append(markers, ms...)
		}
		if len(bad) > 0 {
			items = append(items, bad...)
			continue
		}
		byDemo := map[string][]demo.Marker{}
		var order []string
		for _, m := range markers {
			key := fmt.Sprintf("%d %s", m.Lesson, m.Name)
			if _, seen := byDemo[key]; !seen {
				order = append(order, key)
			}
			byDemo[key] = append(byDemo[key], m)
		}
		hash, _ := docsHash(root, l.Page()) // "" on an error: never taken as recorded
		for _, key := range order {
			ms := byDemo[key]
			items = append(items, verifyItem{
				name: "docs: " + l.Page() + ": lab demo " + key,
				hash: hash,
				run:  func(ctx context.Context) itemResult { return checkDemoFigures(ctx, root, ms) },
			})
		}
	}
	return items
}

func checkDemoFigures(ctx context.Context, root string, ms []demo.Marker) itemResult {
	lesson, name := ms[0].Lesson, ms[0].Name
	found := false
	if slices.Contains(demoLessons(root), lesson) {
		ds, err := listDemos(ctx, root, lesson)
		if err != nil {
			return itemResult{Summary: fmt.Sprintf("lab demo %d: %v", lesson, err)}
		}
		found = slices.ContainsFunc(ds, func(d demo.Demo) bool { return d.Name == name })
	}
	if !found {
		return itemResult{Summary: fmt.Sprintf("%s:%d: there is no lab demo %d %s", ms[0].Page, ms[0].Line, lesson, name)}
	}
	run := func() (itemResult, bool, report.Machine) { return runDemoFigures(ctx, root, lesson, name, ms) }
	return decideFigures(ctx, run, func() { machine.WaitQuieter(ctx, quietWait) })
}

// decideFigures runs a demo (run) and judges its figures. A demo is an
// experiment: a run whose figures drift is followed by one more (after
// quieter when it was busy), which decides. A figure that drifts twice
// fails, unless the machine held the second run back: then, as in lab
// check, the run is inconclusive.
func decideFigures(ctx context.Context, run func() (res itemResult, drifted bool, m report.Machine), quieter func()) itemResult {
	first, drifted, m := run()
	if !drifted || ctx.Err() != nil {
		return first
	}
	if m.Busy {
		quieter()
	}
	second, drifted, m := run()
	switch {
	case second.OK:
		second.Summary += " (in a second run; the first: " + first.Summary + ")"
		second.Detail = "the first run:\n" + first.Detail
	case drifted && m.Busy:
		second.Inconclusive = true
		second.Summary = fmt.Sprintf("inconclusive: %s in two runs, the second while the machine was busy (%s): run it again when the machine is quieter", second.Summary, demo.Describe(m))
	default:
		second.Summary += ", in two runs"
	}
	return second
}

// quietWait caps the wait for a quieter machine before a second run.
const quietWait = 30 * time.Second

// runDemoFigures runs the demo once and compares the figures ms name;
// drifted is true when it ran and a figure was off the page; m is how busy
// the machine was while it ran.
func runDemoFigures(ctx context.Context, root string, lesson int, name string, ms []demo.Marker) (res itemResult, drifted bool, m report.Machine) {
	var out, log bytes.Buffer
	m, err := Demo(ctx, root, lesson, name, &out, &log)
	if err != nil {
		return itemResult{Summary: "the demo failed: " + err.Error(), Detail: log.String()}, false, m
	}
	var bad []string
	n := 0
	for _, mk := range ms {
		n += len(mk.Figures)
		for _, b := range mk.Compare(out.String()) {
			bad = append(bad, fmt.Sprintf("%s:%d: %s", mk.Page, mk.Line, b))
		}
	}
	if len(bad) > 0 {
		return itemResult{Summary: fmt.Sprintf("%d of %d figures drifted from the page", len(bad), n),
			Detail: strings.Join(bad, "\n") + "\n\nthe fresh run:\n" + out.String()}, true, m
	}
	return itemResult{OK: true, Summary: fmt.Sprintf("%d figures as on the page", n)}, false, m
}

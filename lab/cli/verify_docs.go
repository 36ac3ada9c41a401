package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/demo"
)

// docsItems check the lesson pages' figures against fresh runs: one item
// per `lab demo` a page shows, which runs it once and compares every
// figure its markers name, within the tolerance written beside it.
func docsItems(root string) []verifyItem {
	var items []verifyItem
	for _, l := range course.Lessons {
		page := filepath.Join(root, filepath.FromSlash(l.Page()))
		data, err := os.ReadFile(page)
		if err != nil {
			continue
		}
		markers, err := demo.Markers(l.Page(), string(data))
		if err != nil {
			items = append(items, verifyItem{
				name: "docs: " + l.Page() + " markers",
				run:  func(context.Context) itemResult { return itemResult{Summary: err.Error()} },
			})
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
		for _, key := range order {
			ms := byDemo[key]
			items = append(items, verifyItem{
				name: "docs: " + l.Page() + ": lab demo " + key,
				run:  func(ctx context.Context) itemResult { return checkDemoFigures(ctx, root, ms) },
			})
		}
	}
	return items
}

func checkDemoFigures(ctx context.Context, root string, ms []demo.Marker) itemResult {
	ds := demo.Find(ms[0].Lesson, ms[0].Name)
	if len(ds) != 1 {
		return itemResult{Summary: fmt.Sprintf("%s:%d: there is no lab demo %d %s", ms[0].Page, ms[0].Line, ms[0].Lesson, ms[0].Name)}
	}
	// The demos are experiments (which calls straggle is drawn at random,
	// and a busy machine delays a hedge): a run whose figures drift is
	// followed by one more, and that second run decides. A figure that
	// drifts run after run still fails.
	first, drifted := runDemoFigures(ctx, root, ds[0], ms)
	if !drifted || ctx.Err() != nil {
		return first
	}
	second, _ := runDemoFigures(ctx, root, ds[0], ms)
	if second.OK {
		second.Summary += " (in a second run; the first: " + first.Summary + ")"
		second.Detail = "the first run:\n" + first.Detail
	} else {
		second.Summary += ", in two runs"
	}
	return second
}

// runDemoFigures runs the demo once and compares the figures ms name;
// drifted is true when it ran and a figure was off the page.
func runDemoFigures(ctx context.Context, root string, d demo.Demo, ms []demo.Marker) (res itemResult, drifted bool) {
	var out, log bytes.Buffer
	if err := Demo(ctx, root, d, &out, &log); err != nil {
		return itemResult{Summary: "the demo failed: " + err.Error(), Detail: log.String()}, false
	}
	var bad []string
	n := 0
	for _, m := range ms {
		n += len(m.Checks)
		for _, b := range m.Compare(out.String()) {
			bad = append(bad, fmt.Sprintf("%s:%d: %s", m.Page, m.Line, b))
		}
	}
	if len(bad) > 0 {
		return itemResult{Summary: fmt.Sprintf("%d of %d figures drifted from the page", len(bad), n),
			Detail: strings.Join(bad, "\n") + "\n\nthe fresh run:\n" + out.String()}, true
	}
	return itemResult{OK: true, Summary: fmt.Sprintf("%d figures as on the page", n)}, false
}

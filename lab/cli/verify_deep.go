package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/report"
)

// deepItems check the checkpoints' own tests the way the answers are
// checked: every mutant of a checkpoint should make its tests fail, and
// every wheat should pass them. The notes name the failing tests, so an
// instructor can see that each mutant breaks only what its story says.
func deepItems(root string, lessons []course.Lesson) []verifyItem {
	var items []verifyItem
	for _, l := range lessons {
		if vs, err := check.Of(root, l, check.Builds, ""); err == nil && len(vs) == 0 {
			continue // no mutant or wheat of the checkpoint (E15's checks are broken tools)
		}
		items = append(items, verifyItem{
			name: l.Exercise() + " deep: each mutant fails checkpoint " + strconv.Itoa(l.Number) + "'s own tests, each wheat passes them",
			run:  func(ctx context.Context) itemResult { return mutantsVsCheckpointTests(ctx, root, l) },
		})
	}
	return items
}

// mutantTestTimeout bounds the checkpoint tests under one mutant: a mutant
// can make a test wait forever (that counts as failing, and is reported).
const mutantTestTimeout = "60s"

func mutantsVsCheckpointTests(ctx context.Context, root string, l course.Lesson) itemResult {
	vs, err := check.Of(root, l, check.Builds, "")
	if err != nil || len(vs) == 0 {
		return itemResult{Summary: fmt.Sprintf("no mutants to run (%v)", err)}
	}
	dir := filepath.Join(root, filepath.FromSlash(l.Checkpoint()))
	var notes []string
	wrong := 0
	for _, v := range vs {
		ov, err := check.WriteOverlay(root, filepath.Join(course.StateDir(root), "cache", "verify", "deep", v.Exercise, v.Name), v)
		if err != nil {
			return itemResult{Summary: err.Error()}
		}
		run := goTestJSON(ctx, dir, "GOWORK=off", "-count=1", "-timeout="+mutantTestTimeout, "-overlay="+ov, "./...")
		var failed []string
		for _, key := range run.order {
			t := run.tests[key]
			if t.action == "fail" && t.test != "" && !strings.Contains(t.test, "/") {
				failed = append(failed, t.test)
			}
		}
		slices.Sort(failed)
		switch {
		case v.Kind == report.Wheat && run.res.OK():
			notes = append(notes, v.Name+" (wheat): every test passes, as it must")
		case v.Kind == report.Wheat:
			wrong++
			notes = append(notes, v.Name+" (wheat): FAILS "+orBuild(failed))
		case run.res.OK():
			wrong++
			notes = append(notes, v.Name+": SURVIVED, every test passed")
		default:
			notes = append(notes, v.Name+": fails "+orBuild(failed))
		}
	}
	return itemResult{OK: wrong == 0, Summary: fmt.Sprintf("%d of %d checks behave", len(vs)-wrong, len(vs)), Notes: notes}
}

func orBuild(names []string) string {
	if len(names) == 0 {
		return "(the build or the test binary failed)"
	}
	return strings.Join(names, ", ")
}

package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"quoteflowlab.dev/lab/internal/check"
	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/mutant"
)

// deepItems check the checkpoints' own tests the way the answers are
// checked: every mutant of a checkpoint should make its tests fail. The
// detail names the failing tests, so an instructor can see that each mutant
// breaks only what its story says.
func deepItems(root string) []verifyItem {
	var items []verifyItem
	for _, l := range course.Lessons {
		if check.HasGrader(l.Exercise()) {
			continue
		}
		items = append(items, verifyItem{
			name: l.Exercise() + " mutants: each fails checkpoint " + strconv.Itoa(l.Number) + "'s own tests",
			run:  func(ctx context.Context) itemResult { return mutantsVsCheckpointTests(ctx, root, l) },
		})
	}
	return items
}

// mutantTestTimeout bounds the checkpoint tests under one mutant: a mutant
// can make a test wait forever (that counts as failing, and is reported).
const mutantTestTimeout = "60s"

func mutantsVsCheckpointTests(ctx context.Context, root string, l course.Lesson) itemResult {
	ms, err := mutant.Load(root, l.Exercise())
	if err != nil || len(ms) == 0 {
		return itemResult{Summary: fmt.Sprintf("no mutants to run (%v)", err)}
	}
	dir := filepath.Join(root, filepath.FromSlash(l.Checkpoint()))
	var notes []string
	survived := 0
	for _, m := range ms {
		ov, err := m.WriteOverlay(root, filepath.Join(verifyCache(root), "deep", m.Exercise, m.Name))
		if err != nil {
			return itemResult{Summary: err.Error()}
		}
		res := goTest(ctx, dir, "GOWORK=off", "-count=1", "-timeout="+mutantTestTimeout, "-overlay="+ov, "./...")
		switch {
		case res.OK:
			survived++
			notes = append(notes, m.Name+": SURVIVED, every test passed")
		case strings.Contains(res.output, "[build failed]") || strings.Contains(res.output, "[setup failed]"):
			survived++ // not a kill: the tests never ran
			notes = append(notes, m.Name+": BUILD FAILED with the checkpoint's tests:\n"+tail(res.output, 10))
		default:
			notes = append(notes, m.Name+": fails "+failingTests(res.output))
		}
	}
	return itemResult{OK: survived == 0, Summary: fmt.Sprintf("%d of %d mutants make the tests fail", len(ms)-survived, len(ms)), Notes: notes}
}

// failingTests names the top-level tests in go test output that failed or
// hung until the -timeout.
func failingTests(out string) string {
	var names []string
	hung := false
	for line := range strings.SplitSeq(out, "\n") {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "--- FAIL: "); ok && !strings.Contains(name, "/") {
			names = append(names, strings.Fields(name)[0])
		}
		if strings.HasPrefix(line, "panic: test timed out") {
			hung = true
		} else if hung && strings.HasPrefix(line, "Test") && strings.HasSuffix(line, ")") {
			// the running tests, listed under the timeout panic
			names = append(names, strings.Fields(line)[0]+" (hung until -timeout "+mutantTestTimeout+")")
		}
	}
	if len(names) == 0 {
		return "(the build or the test binary failed)"
	}
	return strings.Join(slices.Compact(names), ", ")
}

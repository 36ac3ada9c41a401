package grade15

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"quoteflowlab.dev/lab/internal/check"
)

// init makes Grade the checker of E15 for `lab check`; the lab command links
// this package in with a blank import.
func init() { check.Register("E15", Check) }

// Check adapts Grade to `lab check E15 [--answer DIR] [--variant NAME]`.
// With o.Variant, the answer is graded with that broken variant swapped in
// through an overlay written to the cache (or a temporary directory).
func Check(ctx context.Context, o check.Options) check.Report {
	answer := o.Answer
	if answer == "" {
		answer = o.Lesson.Starter()
	}
	opts := Options{Root: o.Root, Dir: filepath.FromSlash(answer)}
	cacheName := strings.ReplaceAll(answer, "/", "_")
	if o.Variant != "" {
		cacheName += "@" + o.Variant // binaries of a variant never overwrite the answer's own
	}
	if o.CacheDir != "" {
		opts.BinDir = filepath.Join(o.CacheDir, "E15", cacheName)
	}
	if o.Variant != "" {
		overlay, cleanup, err := variantOverlay(o.Root, answer, o.Variant, opts.BinDir)
		if err != nil {
			return report(failedResult("--variant "+o.Variant+": "+err.Error()), o, answer)
		}
		defer cleanup()
		opts.Overlay = overlay
	}
	return report(Grade(ctx, opts), o, answer)
}

// variantOverlay writes the overlay that swaps the named variant into the
// answer, in dir (or a temporary directory when dir is ""), and returns its
// path and what removes it.
func variantOverlay(root, answer, name, dir string) (path string, cleanup func(), err error) {
	v, err := LoadVariant(root, name)
	if err != nil {
		return "", nil, err
	}
	answerDir := filepath.Join(root, filepath.FromSlash(answer))
	if err := v.Fits(answerDir); err != nil {
		return "", nil, err
	}
	cleanup = func() {}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "grade15-variant-"); err != nil {
			return "", nil, err
		}
		cleanup = func() { os.RemoveAll(dir) }
	}
	path = filepath.Join(dir, "overlay.json")
	if err := v.WriteOverlay(answerDir, path); err != nil {
		cleanup()
		return "", nil, err
	}
	return path, cleanup, nil
}

// failedResult is a grading that could not start: every property fails
// with detail.
func failedResult(detail string) Result {
	g := &grader{findings: map[string]finding{}, todo: map[string]bool{}}
	g.failAll(detail)
	return g.result(time.Now())
}

// report turns a grading result into lab check's report of answer.
func report(res Result, o check.Options, answer string) check.Report {
	r := check.Report{
		Exercise:  "E15",
		Title:     o.Lesson.DisplayTitle(o.Root),
		Answer:    answer,
		OK:        res.Passed,
		Summary:   summary(res),
		ElapsedMS: res.Elapsed.Milliseconds(),
	}
	again := "lab check E15"
	if answer != o.Lesson.Starter() {
		again += " --answer " + answer
	}
	if o.Variant != "" {
		again += " --variant " + o.Variant
		r.Variant = o.Variant
	}
	switch {
	case res.NotStarted:
		r.Verdict = check.NotStarted
		r.Next = "read lessons/15/README.md, write the tools in " + answer + " (`lab hint E15` if you are stuck), then run `" + again + "` again"
	case res.Passed:
		r.Verdict = check.Passed
	default:
		r.Verdict = check.Failed
		r.Next = "fix the properties marked FAILED above, then run `" + again + "` again"
	}
	if o.Variant != "" {
		r.Next = variantNext(res, o.Root, o.Variant)
	}
	for _, p := range res.Properties {
		status, detail := check.StatusOK, ""
		switch {
		case p.OK && strings.HasPrefix(p.Detail, "skipped"):
			status, detail = check.StatusSkipped, p.Detail
		case !p.OK && res.NotStarted && strings.Contains(p.Detail, "still prints its TODO"):
			status = check.StatusNotRun
		case !p.OK && res.NotStarted:
			status, detail = check.StatusToDo, p.Detail // the plan and report templates
		case !p.OK:
			status, detail = check.StatusFailed, p.Detail
		}
		r.Properties = append(r.Properties, check.Property{
			Name: p.Name, Story: p.Sentence, Required: p.Required, OK: p.OK, Status: status, Detail: detail,
		})
	}
	return r
}

// variantNext says, for an instructor's run with a broken variant, whether
// the grader did its job: reject the variant for the property its bug breaks.
func variantNext(res Result, root, name string) string {
	v, err := LoadVariant(root, name)
	if err != nil {
		return "" // the failed properties already say why
	}
	failed := slices.ContainsFunc(res.Failed(), func(p Property) bool { return p.Name == v.Expect })
	switch {
	case res.Passed:
		return fmt.Sprintf("the grader PASSED broken variant %s: it must reject it for %s (bug: %s)", name, v.Expect, v.Story)
	case failed:
		return fmt.Sprintf("broken variant %s rejected for %s, as it must be (bug: %s)", name, v.Expect, v.Story)
	}
	return fmt.Sprintf("broken variant %s rejected, but not for %s, the property its bug breaks (bug: %s)", name, v.Expect, v.Story)
}

// summary is the verdict as one sentence, without the exercise name.
func summary(res Result) string {
	required, failed := 0, []string{}
	for _, p := range res.Properties {
		if p.Required {
			required++
			if !p.OK {
				failed = append(failed, p.Name)
			}
		}
	}
	switch {
	case res.NotStarted:
		return "every tool still prints its TODO."
	case res.Passed:
		return fmt.Sprintf("all %d required properties hold (graded in %.1f s).", required, res.Elapsed.Seconds())
	}
	const shown = 6 // a longer list drowns the verdict; the report above lists them all
	names := strings.Join(failed, ", ")
	if len(failed) > shown {
		names = fmt.Sprintf("%s and %d more", strings.Join(failed[:shown], ", "), len(failed)-shown)
	}
	return fmt.Sprintf("%d of %d required properties do not hold: %s.", len(failed), required, names)
}

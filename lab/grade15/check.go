package grade15

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"quoteflowlab.dev/lab/internal/check"
)

// init makes Grade the checker of E15 for `lab check`; the lab command links
// this package in with a blank import.
func init() { check.Register("E15", Check) }

// Check adapts Grade to `lab check E15 [--answer DIR]`.
func Check(ctx context.Context, o check.Options) check.Report {
	answer := o.Answer
	if answer == "" {
		answer = o.Lesson.Starter()
	}
	opts := Options{Root: o.Root, Dir: filepath.FromSlash(answer)}
	if o.CacheDir != "" {
		opts.BinDir = filepath.Join(o.CacheDir, "E15", strings.ReplaceAll(answer, "/", "_"))
	}
	return report(Grade(ctx, opts), o, answer)
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

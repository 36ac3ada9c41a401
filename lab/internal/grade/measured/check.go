package measured

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/grade/mutation"
	"quoteflowlab.dev/lab/internal/machine"
	"quoteflowlab.dev/lab/internal/report"
	"quoteflowlab.dev/lab/internal/variant"
)

// Check grades the answer of `lab check E15 [--answer DIR]`. With a
// broken variant's name (instructors, --variant), that variant of the
// reference tools is swapped in through an overlay first; the answer's
// files stay as they are.
func Check(ctx context.Context, o mutation.Options, variantName string) report.Report {
	if o.Answer == "" {
		o.Answer = o.Lesson.Starter
	}
	r := report.Report{
		SchemaVersion: report.SchemaVersion,
		Exercise:      o.Lesson.Exercise,
		Title:         o.Lesson.DisplayTitle(o.Root),
		Method:        report.Measured,
		Answer:        o.Answer,
		Variant:       variantName,
		Properties:    []report.Prop{},
	}
	opts := Options{Root: o.Root, Dir: filepath.FromSlash(o.Answer)}
	cacheName := strings.NewReplacer("/", "_", ".", "_").Replace(o.Answer)
	if variantName != "" {
		cacheName += "@" + variantName // a variant's binaries never overwrite the answer's own
	}
	if o.CacheDir != "" {
		opts.BinDir = filepath.Join(o.CacheDir, o.Lesson.Exercise, cacheName)
	}
	var v variant.Variant
	if variantName != "" {
		var err error
		v, err = Variant(o.Root, o.Lesson, variantName)
		if err == nil {
			dir := opts.BinDir
			if dir == "" {
				dir, err = os.MkdirTemp("", "grade15-variant-")
				defer os.RemoveAll(dir)
			}
			if err == nil {
				opts.Overlay, err = variant.WriteOverlay(o.Root, filepath.Join(dir, "variant"), v)
			}
		}
		if err != nil {
			r.Verdict, r.Summary = report.Failed, "--variant "+variantName+": "+err.Error()
			return r
		}
	}
	if o.Machine != nil {
		opts.Machine = o.Machine
	} else {
		m := machine.Start()
		defer m.Stop()
		opts.Machine = m
	}
	res := Grade(ctx, opts)
	r.Properties, r.ElapsedMS, r.Notes = res.Props, res.Elapsed.Milliseconds(), res.Notes
	r.Machine = &res.Machine
	decide(&r, res, o, v)
	return r
}

// Variants returns the broken variants of the reference tools.
func Variants(root string, l course.Lesson) ([]variant.Variant, error) {
	all, err := variant.Load(root, l.Checks, l.Exercise)
	return slices.DeleteFunc(all, func(v variant.Variant) bool { return v.Kind != variant.Broken }), err
}

// ErrNoVariant is returned by Variant for an unknown name.
var ErrNoVariant = fmt.Errorf("no such broken variant")

// Variant returns the broken variant called name.
func Variant(root string, l course.Lesson, name string) (variant.Variant, error) {
	vs, err := Variants(root, l)
	if err != nil {
		return variant.Variant{}, err
	}
	var names []string
	for _, v := range vs {
		if v.Name == name {
			return v, nil
		}
		names = append(names, v.Name)
	}
	return variant.Variant{}, fmt.Errorf("%w %q (known: %s)", ErrNoVariant, name, strings.Join(names, ", "))
}

// decide sets the verdict, its sentence and the next step.
func decide(r *report.Report, res Result, o mutation.Options, v variant.Variant) {
	again := o.Again()
	switch {
	case res.NotStarted:
		r.Verdict = report.NotStarted
		r.Next = "read " + o.Lesson.Page + ", write the tools in " + o.Answer + " (`lab hint E15` if you are stuck), then run `" + again + "` again"
	case res.Passed:
		r.Verdict = report.Passed
	case res.Inconclusive:
		r.Verdict = report.Inconclusive
		r.Next = "close what keeps the machine busy (or wait for it), then run `" + again + "` again"
	default:
		r.Verdict = report.Failed
		r.Next = "fix the properties marked FAILED above, then run `" + again + "` again"
	}
	r.OK = r.Verdict == report.Passed
	r.Summary = summary(res)
	if v.Name == "" {
		return
	}
	failed := slices.Contains(res.Failed(), v.Expect)
	switch {
	case res.Passed:
		r.Next = fmt.Sprintf("the grader PASSED broken variant %s: it must reject it for %s (bug: %s)", v.Name, v.Expect, v.Story)
	case failed:
		r.Next = fmt.Sprintf("broken variant %s rejected for %s, as it must be (bug: %s)", v.Name, v.Expect, v.Story)
	default:
		r.Next = fmt.Sprintf("broken variant %s rejected, but not for %s, the property its bug breaks (bug: %s)", v.Name, v.Expect, v.Story)
	}
}

// summary is the verdict as one sentence, without the exercise name.
func summary(res Result) string {
	required, failed := 0, []string{}
	for _, p := range res.Props {
		if p.Required {
			required++
			if !p.OK && p.Status != report.Busy {
				failed = append(failed, p.Name)
			}
		}
	}
	switch {
	case res.NotStarted:
		return "every tool still prints its TODO."
	case res.Passed:
		return fmt.Sprintf("all %d required properties hold (graded in %.1f s).", required, res.Elapsed.Seconds())
	case res.Inconclusive:
		var busy []string
		for _, p := range res.Props {
			if p.Status == report.Busy {
				busy = append(busy, p.Name)
			}
		}
		return fmt.Sprintf("the machine was too busy to judge %s, which missed a timing bound twice; the other %d required properties hold (graded in %.1f s).",
			strings.Join(busy, ", "), required-len(busy), res.Elapsed.Seconds())
	}
	const shown = 6 // a longer list drowns the verdict; the report above lists them all
	names := strings.Join(failed, ", ")
	if len(failed) > shown {
		names = fmt.Sprintf("%s and %d more", strings.Join(failed[:shown], ", "), len(failed)-shown)
	}
	return fmt.Sprintf("%d of %d required properties do not hold: %s (graded in %.1f s).", len(failed), required, names, res.Elapsed.Seconds())
}

// IsRequiredProperty reports whether name is a required property of the
// grader: what a broken variant's expect: must name.
func IsRequiredProperty(name string) bool {
	return slices.ContainsFunc(specs, func(s spec) bool { return s.name == name && s.required })
}

package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/diff"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/lab/internal/mutagen"
	"quoteflowlab.dev/lab/internal/mutation"
)

// runShow implements `lab show ENN NAME`: a check's story and its edit, as
// a unified diff of the file as it is now.
func runShow(args []string, stdout, stderr io.Writer) int {
	f := form{name: "show", usage: "ENN NAME   (for example: lab show E14 no_retry)", min: 2, max: 2, wrong: "want an exercise and the name of one of its checks, like E14 no_retry", exercise: true}
	fs := f.flags(stderr)
	c, code, ok := f.parse(fs, args, stderr)
	if !ok {
		return code
	}
	root, pos, lesson := c.root, c.pos, c.lesson
	v, err := check.Find(root, lesson, check.All, pos[1])
	var unknown *check.UnknownError
	switch {
	case errors.As(err, &unknown) && strings.HasPrefix(pos[1], "gen_"):
		return showGenerated(root, lesson, pos[1], stdout, stderr)
	case errors.As(err, &unknown):
		return usageError(fs, stderr, "%s has no check %q (its checks: %s)", lesson.Exercise(), pos[1], strings.Join(unknown.Known, ", "))
	case err != nil:
		return failed(stderr, "lab show", err)
	}
	return showEdit(root, v, stdout, stderr, func() {
		required := ""
		if v.Required {
			required = ", required"
		}
		fmt.Fprintf(stdout, "%s %s (%s%s): %s\n", lesson.Exercise(), v.Name, v.Kind, required, msg.Pick(v.Story, v.StoryZh))
		if v.Expect != "" {
			fmt.Fprintf(stdout, "the grader must reject it for: %s\n", v.Expect)
		}
		fmt.Fprintf(stdout, "defined in %s\n\n", filepath.ToSlash(strings.TrimPrefix(v.Def, root+string(filepath.Separator))))
	})
}

// showEdit prints what head says of a check, then its edit as a unified
// diff of the file as it is now.
func showEdit(root string, v check.Check, stdout, stderr io.Writer, head func()) int {
	edited, err := v.Apply(root)
	if err != nil {
		return failed(stderr, "lab show", err)
	}
	orig, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(v.File)))
	if err != nil {
		return failed(stderr, "lab show", err)
	}
	head()
	stdout.Write(diff.Diff("a/"+v.File, orig, "b/"+v.File, edited))
	return 0
}

// showGenerated shows a generated mutant or wheat: what the kill-set (or
// wheat) run recorded of it, and its edit as a diff.
func showGenerated(root string, lesson course.Lesson, name string, stdout, stderr io.Writer) int {
	m, set, e, err := mutation.GeneratedMutant(root, lesson, name)
	if err != nil {
		return failed(stderr, "lab show", err)
	}
	return showEdit(root, m.Check, stdout, stderr, func() {
		what, from, listed := "generated "+set.String(), set.From(lesson), set.File(lesson)
		status := "not in " + listed
		if e != nil {
			status = e.Status
			if e.Status == mutagen.Wheat {
				status = "kept: the reference answer passes it every run"
			}
			if e.MergedInto != "" {
				status += " into " + e.MergedInto
			}
		}
		fmt.Fprintf(stdout, "%s %s (%s, %s): %s at %s\n", lesson.Exercise(), name, what, status, m.Op, m.Where(lesson.Checkpoint()))
		if e != nil && e.Says != "" {
			fmt.Fprintf(stdout, "the reference answer says: %s\n", e.Says)
		}
		if e != nil && e.Review != "" {
			fmt.Fprintf(stdout, "review: %s\n", e.Review)
		}
		fmt.Fprintf(stdout, "generated from %s (listed in %s)\n\n", from, listed)
	})
}

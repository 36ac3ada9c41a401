package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/diff"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/variant"
)

// runShow implements `lab show ENN NAME`: a check's story and its edit, as
// a unified diff of the file as it is now.
func runShow(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("show", "ENN NAME   (for example: lab show E14 no_retry)", stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return usageError(fs, stderr, "want an exercise and the name of one of its checks, like E14 no_retry")
	}
	lesson, err := course.ParseExercise(pos[0])
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	root, ok := findRoot("show", stderr)
	if !ok {
		return 1
	}
	vs, err := variant.Load(root, lesson.Checks(), lesson.Exercise())
	if err != nil {
		fmt.Fprintf(stderr, "lab show: %v\n", err)
		return 1
	}
	var names []string
	for _, v := range vs {
		if v.Name != pos[1] {
			names = append(names, v.Name)
			continue
		}
		edited, err := v.Apply(root)
		if err != nil {
			fmt.Fprintf(stderr, "lab show: %v\n", err)
			return 1
		}
		orig, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(v.File)))
		if err != nil {
			fmt.Fprintf(stderr, "lab show: %v\n", err)
			return 1
		}
		required := ""
		if v.Required {
			required = ", required"
		}
		fmt.Fprintf(stdout, "%s %s (%s%s): %s\n", lesson.Exercise(), v.Name, v.Kind, required, v.Story)
		if v.Expect != "" {
			fmt.Fprintf(stdout, "the grader must reject it for: %s\n", v.Expect)
		}
		fmt.Fprintf(stdout, "defined in %s\n\n", filepath.ToSlash(strings.TrimPrefix(v.Def, root+string(filepath.Separator))))
		stdout.Write(diff.Diff("a/"+v.File, orig, "b/"+v.File, edited))
		return 0
	}
	return usageError(fs, stderr, "%s has no check %q (its checks: %s)", lesson.Exercise(), pos[1], strings.Join(names, ", "))
}

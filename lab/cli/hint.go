package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"quoteflowlab.dev/lab/internal/course"
)

// runHint implements `lab hint ENN`: it prints lessons/NN/hint.md.
func runHint(args []string, stdout, stderr io.Writer) int {
	fset := newFlags("hint", "ENN", stderr)
	pos, code, ok := parseArgs(fset, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fset, stderr, "want exactly one exercise, like E14")
	}
	lesson, err := course.ParseExercise(pos[0])
	if err != nil {
		return usageError(fset, stderr, "%v", err)
	}
	root, ok := findRoot("hint", stderr)
	if !ok {
		return 1
	}
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(lesson.Hint())))
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(stderr, "lab hint: %s has no hint yet (%s does not exist)\n", lesson.Exercise(), lesson.Hint())
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "lab hint: %v\n", err)
		return 1
	}
	stdout.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		fmt.Fprintln(stdout)
	}
	return 0
}

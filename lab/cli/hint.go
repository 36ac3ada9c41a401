package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"quoteflowlab.dev/kit/msg"
)

// runHint implements `lab hint ENN`: it prints lessons/NN/hint.md, or its
// Chinese edition hint.zh-CN.md when lab speaks Chinese.
func runHint(args []string, stdout, stderr io.Writer) int {
	f := form{name: "hint", usage: "ENN", min: 1, max: 1, wrong: "usage.one_exercise", exercise: true}
	c, code, ok := f.parse(f.flags(stderr), args, stderr)
	if !ok {
		return code
	}
	lesson := c.lesson
	hint := msg.Twin(lesson.Hint())
	data, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(hint)))
	if errors.Is(err, fs.ErrNotExist) && hint != lesson.Hint() {
		hint = lesson.Hint() // no Chinese hint yet: the English one
		data, err = os.ReadFile(filepath.Join(c.root, filepath.FromSlash(hint)))
	}
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprint(stderr, msg.T("hint.none", lesson.Exercise(), lesson.Hint()))
		return 1
	}
	if err != nil {
		return failed(stderr, "lab hint", err)
	}
	stdout.Write(data)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		fmt.Fprintln(stdout)
	}
	return 0
}

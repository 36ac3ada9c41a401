// Package course knows the shape of the QuoteFlow Lab repository: where its
// root is, which lessons and exercises exist, and where each one's files live.
package course

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ModulePath is the root module of the course repository.
const ModulePath = "quoteflowlab.dev"

// ErrNotInRepo is returned by FindRoot when no enclosing directory holds the
// course's root go.mod.
var ErrNotInRepo = errors.New("not inside the QuoteFlow Lab repository")

// FindRoot walks up from dir to the directory whose go.mod declares module
// quoteflowlab.dev. Nested modules (the checkpoints) are walked past.
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && modulePath(data) == ModulePath {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("%w: no go.mod with `module %s` in %s or any parent; cd into your clone of the course first", ErrNotInRepo, ModulePath, dir)
		}
		d = parent
	}
}

// modulePath returns the path in a go.mod's module directive, or "".
func modulePath(gomod []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(gomod))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		rest, _, _ = strings.Cut(rest, "//")
		rest = strings.TrimSpace(rest)
		if p, err := strconv.Unquote(rest); err == nil {
			return p
		}
		return rest
	}
	return ""
}

// A Lesson is one step of the course.
type Lesson struct {
	Number int
	Title  string // working title; the lesson's README heading wins when present
	Task   string // what its exercise asks, in one line
}

// Lessons lists the lessons that have an exercise, in order.
var Lessons = []Lesson{
	{12, "Three suppliers, one answer", "an invalid quantity is rejected with 422 and zero supplier calls"},
	{13, "Eight users at once: who owns the limit", "a rejected request does not steal a slot; our 503 is not a supplier's 503"},
	{14, "Retry once — whose budget pays?", "flaky recovers in exactly 2 attempts with one ID; invalid data is not retried"},
	{15, "The partner slowed down, and we fell first", "build the budget tools and a budget plan; the grader measures them"},
}

// Exercise returns the exercise name of lesson n, e.g. "E14".
func Exercise(n int) string { return fmt.Sprintf("E%d", n) }

// ErrUnknownExercise is returned by ParseExercise for a name that is not one
// of the course's exercises.
var ErrUnknownExercise = errors.New("unknown exercise")

// ParseExercise accepts "E14", "e14" or "14" and returns the lesson.
func ParseExercise(name string) (Lesson, error) {
	s := strings.TrimPrefix(strings.TrimPrefix(name, "E"), "e")
	n, err := strconv.Atoi(s)
	if err == nil {
		for _, l := range Lessons {
			if l.Number == n {
				return l, nil
			}
		}
	}
	return Lesson{}, fmt.Errorf("%w %q (the exercises are %s)", ErrUnknownExercise, name, exerciseNames())
}

func exerciseNames() string {
	names := make([]string, len(Lessons))
	for i, l := range Lessons {
		names[i] = l.Exercise()
	}
	return strings.Join(names, ", ")
}

// Exercise returns the name of the lesson's exercise, e.g. "E14".
func (l Lesson) Exercise() string { return Exercise(l.Number) }

// Checkpoint is the slash path, relative to the root, of the checkpoint the
// exercise runs against.
func (l Lesson) Checkpoint() string { return fmt.Sprintf("checkpoints/%d", l.Number) }

// Dir is the slash path of the lesson's directory.
func (l Lesson) Dir() string { return fmt.Sprintf("lessons/%d", l.Number) }

// Starter is the slash path of the exercise the student writes.
func (l Lesson) Starter() string { return l.Dir() + "/exercise" }

// Reference is the slash path of the published answer to this lesson's
// exercise: it lives in the next lesson.
func (l Lesson) Reference() string { return fmt.Sprintf("lessons/%d/answer_previous", l.Number+1) }

// Hint is the slash path of the exercise's hint.
func (l Lesson) Hint() string { return l.Dir() + "/hint.md" }

// DisplayTitle returns the heading of the lesson's README under root (without
// a leading "Lesson NN" label), or the working title when there is none.
func (l Lesson) DisplayTitle(root string) string {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(l.Dir()), "README.md"))
	if err != nil {
		return l.Title
	}
	if t := heading(data, l.Number); t != "" {
		return t
	}
	return l.Title
}

// heading returns the first "# " heading of a Markdown page, minus a leading
// "Lesson 14:" or "14 —" label.
func heading(md []byte, n int) string {
	sc := bufio.NewScanner(bytes.NewReader(md))
	for sc.Scan() {
		t, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "# ")
		if !ok {
			continue
		}
		t = strings.TrimSpace(t)
		label := strings.TrimPrefix(t, "Lesson ")
		if rest, ok := strings.CutPrefix(label, strconv.Itoa(n)); ok && (rest == "" || strings.ContainsRune(" :.·—–-", []rune(rest)[0])) {
			if rest = strings.TrimLeft(rest, " :.·—–-"); rest != "" {
				t = rest
			}
		}
		return t
	}
	return ""
}

// Package course knows the shape of the QuoteFlow Lab repository: where its
// root is, which lessons and exercises exist, and where each one's files live.
package course

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"quoteflowlab.dev/lab/internal/report"
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

// A Lesson is one step of the course, as the manifest declares it. Every
// path is a slash path relative to the repository root.
type Lesson struct {
	Number     int
	Title      string        // working title; the page's heading wins when present
	Task       string        // what its exercise asks, in one line
	Page       string        // the lesson page
	Checkpoint string        // the checkpoint the exercise runs against (mutants), or that the lesson builds
	Exercise   string        // the exercise's name, "E14"
	Starter    string        // the exercise folder the student writes in (it starts as the starter)
	Reference  string        // the published answer (it lives in the next lesson)
	Hint       string        // the hint file
	Checks     string        // the mutants, wheats and broken variants, one edit each
	Method     report.Method // how the exercise is graded
	// Redis: lab check starts one redis-server for the whole check and
	// gives every run of the answer an empty database of its own on it
	// (LAB_REDIS_URL), instead of each run starting a server.
	Redis bool
}

// Lessons is the course manifest: the lessons that have an exercise, in
// order. lab list, check, verify, hint and diff, and the testscripts, read
// only this table; the completeness test says when a lesson here lacks a
// part.
var Lessons = []Lesson{
	{
		Number: 12, Title: "Three suppliers, one answer",
		Task:       "an invalid quantity is rejected with 422 and zero supplier calls",
		Page:       "lessons/12/README.md",
		Checkpoint: "checkpoints/12",
		Exercise:   "E12",
		Starter:    "lessons/12/exercise",
		Reference:  "lessons/13/answer_previous",
		Hint:       "lessons/12/hint.md",
		Checks:     "lessons/12/mutants",
		Method:     report.Mutants,
	},
	{
		Number: 13, Title: "Eight users at once: who owns the limit",
		Task:       "a rejected request does not steal a slot; our 503 is not a supplier's 503",
		Page:       "lessons/13/README.md",
		Checkpoint: "checkpoints/13",
		Exercise:   "E13",
		Starter:    "lessons/13/exercise",
		Reference:  "lessons/14/answer_previous",
		Hint:       "lessons/13/hint.md",
		Checks:     "lessons/13/mutants",
		Method:     report.Mutants,
	},
	{
		Number: 14, Title: "Retry once — whose budget pays?",
		Task:       "flaky recovers in exactly 2 attempts with one ID; invalid data is not retried",
		Page:       "lessons/14/README.md",
		Checkpoint: "checkpoints/14",
		Exercise:   "E14",
		Starter:    "lessons/14/exercise",
		Reference:  "lessons/15/answer_previous",
		Hint:       "lessons/14/hint.md",
		Checks:     "lessons/14/mutants",
		Method:     report.Mutants,
	},
	{
		Number: 15, Title: "The partner slowed down, and we fell first",
		Task:       "build the budget tools and a budget plan; the grader measures them",
		Page:       "lessons/15/README.md",
		Checkpoint: "checkpoints/15",
		Exercise:   "E15",
		Starter:    "lessons/15/exercise",
		Reference:  "lessons/16/answer_previous",
		Hint:       "lessons/15/hint.md",
		Checks:     "lessons/15/mutants",
		Method:     report.Measured,
	},
	{
		Number: 16, Title: "Fan out to many: one limit, many jobs, nothing lost",
		Task:       "one limiter for every job, retry only what is worth it, a deadline that cancels, nothing lost",
		Page:       "lessons/16/README.md",
		Checkpoint: "checkpoints/16",
		Exercise:   "E16",
		Starter:    "lessons/16/exercise",
		Reference:  "lessons/17/answer_previous",
		Hint:       "lessons/16/hint.md",
		Checks:     "lessons/16/mutants",
		Method:     report.Mutants,
	},
	{
		Number: 17, Title: "Many processes, one quota",
		Task:       "three processes share one limit; a killed process's slots come back; Redis gone fails closed",
		Page:       "lessons/17/README.md",
		Checkpoint: "checkpoints/17",
		Exercise:   "E17",
		Starter:    "lessons/17/exercise",
		Reference:  "lessons/18/answer_previous",
		Hint:       "lessons/17/hint.md",
		Checks:     "lessons/17/mutants",
		Method:     report.Mutants,
		Redis:      true,
	},
}

// ErrUnknownExercise is returned by ParseExercise for a name that is not one
// of the course's exercises.
var ErrUnknownExercise = errors.New("unknown exercise")

// ParseExercise accepts "E14", "e14" or "14" and returns the lesson.
func ParseExercise(name string) (Lesson, error) {
	s := strings.TrimPrefix(strings.TrimPrefix(name, "E"), "e")
	n, err := strconv.Atoi(s)
	if err == nil {
		if l, ok := ByNumber(n); ok {
			return l, nil
		}
	}
	return Lesson{}, fmt.Errorf("%w %q (the exercises are %s)", ErrUnknownExercise, name, exerciseNames())
}

// ByNumber returns lesson n of the manifest.
func ByNumber(n int) (Lesson, bool) {
	for _, l := range Lessons {
		if l.Number == n {
			return l, true
		}
	}
	return Lesson{}, false
}

func exerciseNames() string {
	names := make([]string, len(Lessons))
	for i, l := range Lessons {
		names[i] = l.Exercise
	}
	return strings.Join(names, ", ")
}

// Dir is the slash path of the lesson's directory (where its page is).
func (l Lesson) Dir() string { return path.Dir(l.Page) }

// DisplayTitle returns the heading of the lesson's README under root (without
// a leading "Lesson NN" label), or the working title when there is none.
func (l Lesson) DisplayTitle(root string) string {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(l.Page)))
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

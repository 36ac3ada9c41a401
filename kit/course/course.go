// Package course knows the shape of the QuoteFlow Lab repository: where its
// root is (FindRoot), which lessons have an exercise (Load, Find: every
// folder lessons/NN with a lesson.toml, in order) and where each one's parts
// live (the Lesson's methods, derived from its number), and what a student
// has passed (State). lab knows no lesson: a new lesson is a new folder.
package course

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
)

// ModulePath is the root module of the course repository.
const ModulePath = "quoteflowlab.dev"

// ErrNotInRepo is returned by FindRoot when no enclosing directory holds the
// course's root go.mod.
var ErrNotInRepo error = msg.Error("course.not_in_repo")

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
			return "", fmt.Errorf(msg.T("course.no_root"), ErrNotInRepo, ModulePath, dir)
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

// A Lesson is one step of the course that has an exercise, as its
// lesson.toml declares it: what cannot be derived. Everything else (where
// its page, checkpoint, starter, reference answer, hint and checks live)
// follows from the number, by the methods below; every path is a slash path
// relative to the repository root.
type Lesson struct {
	Number int           // the folder's name: lessons/NN
	Title  string        // working title; the page's heading wins when present
	Task   string        // what its exercise asks, in one line
	Method report.Method // how the exercise is graded
	// Redis: lab check starts a redis-server for every run of the answer
	// and gives it in LAB_REDIS_URL, so that no run starts one itself.
	Redis bool
}

// Exercise is the exercise's name, "E14".
func (l Lesson) Exercise() string { return "E" + strconv.Itoa(l.Number) }

// Dir is the lesson's directory, lessons/NN (where its page is).
func (l Lesson) Dir() string { return "lessons/" + strconv.Itoa(l.Number) }

// Page is the lesson page (in English).
func (l Lesson) Page() string { return l.Dir() + "/README.md" }

// PageZh is the lesson page's Chinese edition.
func (l Lesson) PageZh() string { return msg.ZhPath(l.Page()) }

// Pages are the lesson's pages, English first.
func (l Lesson) Pages() []string { return []string{l.Page(), l.PageZh()} }

// Checkpoint is the checkpoint the exercise runs against (mutants), or
// that the lesson builds.
func (l Lesson) Checkpoint() string { return "checkpoints/" + strconv.Itoa(l.Number) }

// Starter is the exercise folder the student writes in (it starts as the
// starter).
func (l Lesson) Starter() string { return l.Dir() + "/exercise" }

// Reference is the published answer: it lives in the next lesson, which
// starts from it.
func (l Lesson) Reference() string { return "lessons/" + strconv.Itoa(l.Number+1) + "/answer_previous" }

// Hint is the hint file.
func (l Lesson) Hint() string { return l.Dir() + "/hint.md" }

// Checks is the folder of the mutants, wheats and broken variants, one
// edit each.
func (l Lesson) Checks() string { return l.Dir() + "/checks" }

// ErrUnknownExercise is returned by Find for a name that is not one of the
// course's exercises.
var ErrUnknownExercise error = msg.Error("course.unknown_exercise")

// Find returns the lesson of an exercise name, "E14", "e14" or "14", in the
// course under root.
func Find(root, name string) (Lesson, error) {
	ls, err := Load(root)
	if err != nil {
		return Lesson{}, err
	}
	s := strings.TrimPrefix(strings.TrimPrefix(name, "E"), "e")
	if n, err := strconv.Atoi(s); err == nil {
		for _, l := range ls {
			if l.Number == n {
				return l, nil
			}
		}
	}
	names := make([]string, len(ls))
	for i, l := range ls {
		names[i] = l.Exercise()
	}
	return Lesson{}, fmt.Errorf(msg.T("course.unknown_exercise_in"), ErrUnknownExercise, name, strings.Join(names, ", "))
}

// DisplayTitle returns the heading of the lesson's README under root, in
// the language of lab's messages (without a leading "Lesson NN" or "第 NN 课"
// label), or the working title when there is none.
func (l Lesson) DisplayTitle(root string) string {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(msg.Twin(l.Page()))))
	if err != nil {
		data, err = os.ReadFile(filepath.Join(root, filepath.FromSlash(l.Page())))
	}
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
		label := strings.TrimPrefix(strings.TrimPrefix(t, "Lesson "), "第 ")
		if zh, ok := strings.CutPrefix(label, strconv.Itoa(n)+" 课"); ok {
			label = strconv.Itoa(n) + zh
		}
		if rest, ok := strings.CutPrefix(label, strconv.Itoa(n)); ok && (rest == "" || strings.ContainsRune(" :.·—–-：", []rune(rest)[0])) {
			if rest = strings.TrimLeft(rest, " :.·—–-："); rest != "" {
				t = rest
			}
		}
		return t
	}
	return ""
}

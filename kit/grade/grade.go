// Package grade is what every grading method of `lab check` shares: the
// Request a command line becomes, the Monitor that tells a busy machine
// from a wrong answer, the Grader interface a grader implements, and the
// Session of one check (monitor, guard, key, runs, restore,
// tamper report).
//
// There are two kinds of grader: lab's mutation grader (the answer is a
// test; it must pass on the correct checkpoint and every wheat, and fail on
// every mutant), and a lesson's own, a program in lessons/NN/grader (E15's
// runs the answer's tools and measures each property itself): Main is its
// main function, Program the Grader lab runs it through (the protocol is
// package report's). The lab command picks one in one place, builds the
// Request once, and hands it to the grader's Accept; everything after that
// happens inside the grader.
package grade

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
)

// DefaultTimeout bounds one run of an answer. An answer is expected to
// finish in well under 5 s; one that does not is killed and reported.
const DefaultTimeout = 20 * time.Second

// Request is one `lab check` (or one round of `lab watch`): what to grade
// and how. It is built once, by the command line, and read by the grader.
type Request struct {
	Root    string        // repository root
	Lesson  course.Lesson // the exercise's lesson
	Answer  string        // slash path from Root, or an absolute directory anywhere; default the lesson's starter
	Timeout time.Duration // per run of the answer; default DefaultTimeout
	// Repeat is the runs per build (mutants; default 1): with more, an
	// answer whose result changes is flaky.
	Repeat int
	// Separate: one build per mutant and wheat instead of one schema build
	// (mutants; slower; instructors).
	Separate bool
	// Variant is a broken variant of the reference to grade (measured;
	// instructors), by name.
	Variant string
	// Only narrows a check to one thing: the checkpoint and this one
	// mutant or wheat (mutants), or this one property and its tool's
	// build (measured). Its verdict is not the exercise's.
	Only string
	// Seed draws a measured exercise's cases (0: a new seed); Case runs one
	// case alone (measured; as its report prints a failing one).
	Seed     uint64
	Case     string
	CacheDir string // binaries and generated files; default <state dir>/cache
	// Monitor watches how busy the machine is; default one the grader
	// starts. Tests give one that always (or never) says busy.
	Monitor Monitor
}

// WithDefaults fills what the request leaves empty.
func (r Request) WithDefaults() Request {
	if r.Answer == "" {
		r.Answer = r.Lesson.Starter()
	}
	if r.Timeout <= 0 {
		r.Timeout = DefaultTimeout
	}
	if r.CacheDir == "" {
		r.CacheDir = CacheDir(r.Root)
	}
	r.Repeat = max(r.Repeat, 1)
	return r
}

// Again is the command that runs this check again.
func (r Request) Again() string {
	again := "lab check " + r.Lesson.Exercise()
	if r.Answer != "" && r.Answer != r.Lesson.Starter() {
		again += " --answer " + r.Answer
	}
	if r.Variant != "" {
		again += " --variant " + r.Variant
	}
	return again
}

// A Grader grades one exercise by its lesson's method.
type Grader interface {
	// Accept takes the request and checks what only this method knows:
	// which flags apply, what the answer folder must hold, the broken
	// variant --variant names (loaded here, once). An error is a usage
	// error, said in one sentence.
	Accept(req Request) error
	// Check grades the accepted request. Every problem, an answer that does
	// not compile included, is described in the report.
	Check(ctx context.Context) report.Report
	// Watches reports whether a change to the file at rel (a slash path
	// inside the answer's folder) should re-run the check in `lab watch`.
	Watches(rel string) bool
	// Watching names the files Watches accepts, for a person.
	Watching() string
	// Doing says what a check does, for a person waiting on a slow one.
	Doing() string
	// Proves says what the exercise's scripts (its reference answer and
	// its starter, checked) prove, for lab verify.
	Proves() string
}

// A Monitor says how busy the machine was over a window of the check
// (package machine's Monitor; tests give one that always or never says busy).
type Monitor interface {
	Mark() int                     // the start of a window
	Since(mark int) report.Machine // the window from mark to now
	Stop() report.Machine          // everything; the monitor stops
	// HeldBack says whether a run of this wall time whose threads waited
	// for a CPU this share of it was held back too much for its timing to
	// mean anything (runner.Result.Starved; negative: not measured).
	HeldBack(starved float64, elapsed time.Duration) bool
}

// ErrAnswerOutside is returned by ResolveAnswer for a directory that
// belongs to a checkpoint's module, or is the root itself.
var ErrAnswerOutside error = msg.Error("answer.outside")

// ResolveAnswer turns dir (relative to cwd, or absolute) into the Answer
// of a Request: a slash path from root when dir is inside the course's root
// module, or the absolute directory when it is outside the repository
// (such an answer is one main package; its .go files are built as if they
// were inside the root module).
func ResolveAnswer(root, cwd, dir string) (string, error) {
	abs := dir
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, dir)
	}
	abs = filepath.Clean(abs)
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf(msg.T("answer.no_dir"), dir, abs)
	}
	if err != nil {
		return "", fmt.Errorf("answer %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf(msg.T("answer.not_dir"), dir)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return abs, nil // outside the repository
	}
	if rel == "." {
		return "", fmt.Errorf(msg.T("answer.is_root"), ErrAnswerOutside, dir)
	}
	for d := abs; d != root && d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return "", fmt.Errorf(msg.T("answer.other_module"), ErrAnswerOutside, dir, d)
		}
	}
	return filepath.ToSlash(rel), nil
}

// AnswerDir is the answer's directory on disk.
func (r Request) AnswerDir() string {
	if filepath.IsAbs(r.Answer) {
		return r.Answer
	}
	return filepath.Join(r.Root, filepath.FromSlash(r.Answer))
}

// CacheDir is lab check's cache of builds for the course at root:
// <state dir>/cache.
func CacheDir(root string) string { return filepath.Join(course.StateDir(root), "cache") }

// KeepBuilds is how many answers' builds lab check keeps per exercise in
// its cache.
const KeepBuilds = 3

// Touch marks an answer's build directory as just used.
func Touch(dir string) {
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
}

// Prune keeps the keep most recently used answer directories in dir (an
// exercise's folder of the cache). A directory whose name holds "@" (the
// tools of a broken variant, built by `lab check E15 --variant`, for
// instructors) is left alone.
func Prune(dir string, keep int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type used struct {
		name string
		at   time.Time
	}
	var dirs []used
	for _, e := range entries {
		if info, err := e.Info(); err == nil && e.IsDir() && !strings.Contains(e.Name(), "@") {
			dirs = append(dirs, used{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(dirs, func(a, b used) int { return b.at.Compare(a.at) })
	for _, d := range dirs[min(keep, len(dirs)):] {
		os.RemoveAll(filepath.Join(dir, d.name))
	}
}

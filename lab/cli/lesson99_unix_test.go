//go:build unix

package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"quoteflowlab.dev/kit/check"
)

// A lesson is a folder that brings its own parts: lab, as this repository
// builds it, checks and runs lessons it has never heard of, in a course of
// the test's own that has no lab/ folder at all: toy lesson 99, graded with
// mutants (its checks/) and with one demo (its demo/), and toy lesson 98,
// graded by its own grader program (its grader/). With the checkpoint, the
// reference answers and go.mod's replace line written but not the folders
// lessons/98 and lessons/99, lab knows neither exercise nor demo; once the
// folders are there, lab lists both, passes each reference answer, rejects
// each starter and a wrong answer (for E99, one that misses its one
// mutant), and runs the demo.
func TestAToyLessonNeedsNoFileUnderLab(t *testing.T) {
	t.Parallel() // its own course, state dir and lab processes
	root, state := t.TempDir(), t.TempDir()
	lab := func(args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, labCommand(t), args...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), runAsLab+"=1", "LAB_STATE_DIR="+state, "LANG=C")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("lab %s: %v", strings.Join(args, " "), err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	expect := func(out string, code, want int, pattern string) {
		t.Helper()
		if code != want || !regexp.MustCompile(pattern).MatchString(out) {
			t.Fatalf("exit %d, want %d and %q in:\n%s", code, want, pattern, out)
		}
	}

	folder, rest := map[string]string{}, map[string]string{}
	for name, text := range toyLessons {
		if strings.HasPrefix(name, "lessons/99/") || strings.HasPrefix(name, "lessons/98/") {
			folder[name] = text
		} else {
			rest[name] = text
		}
	}
	writeTree(t, root, rest)
	out, code := lab("check", "E99")
	expect(out, code, 2, `unknown exercise "E99" \(the exercises are \)`)
	out, code = lab("demo", "99", "hello")
	expect(out, code, 2, `no demo "\[99 hello\]"`)

	writeTree(t, root, folder)
	writeTree(t, root, map[string]string{"lessons/99/checks/zero_accepted.txtar": toyMutant(t, root)})
	out, code = lab("list")
	expect(out, code, 0, `(?m)^98  A toy measured lesson +E98 +not started\n99  A toy lesson +E99 +not started$`)

	out, code = lab("check", "E98", "--answer", "lessons/99/answer_previous")
	expect(out, code, 0, `(?m)^  ok +required +limit_is_100$[\s\S]*^verdict: PASSED: the limit is 100`)
	out, code = lab("check", "E98")
	expect(out, code, 1, `(?m)^verdict: NOT STARTED`)
	writeTree(t, root, map[string]string{"wrong/limit.txt": "101\n"})
	out, code = lab("check", "E98", "--answer", "wrong")
	expect(out, code, 1, `(?m)^  FAILED +required +limit_is_100$[\s\S]*^verdict: FAILED: the limit is not 100`)

	out, code = lab("check", "E99", "--answer", "lessons/100/answer_previous")
	expect(out, code, 0, `(?m)^  caught +required +zero_accepted$[\s\S]*^verdict: PASSED`)
	out, code = lab("check", "E99")
	expect(out, code, 1, `(?m)^verdict: NOT STARTED`)
	writeTree(t, root, map[string]string{"weak/main.go": strings.Replace(toyLessons["lessons/100/answer_previous/main.go"], "0: false, ", "", 1)})
	out, code = lab("check", "E99", "--answer", "weak")
	expect(out, code, 1, `(?m)^  MISSED +required +zero_accepted$[\s\S]*^verdict: FAILED`)

	out, code = lab("demo", "--help")
	expect(out, code, 0, `(?m)^  lab demo 99 hello +says hello from a lesson lab has never heard of$`)
	out, code = lab("demo", "99", "hello")
	expect(out, code, 0, `^hello from lesson 99\n$`)

	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if rel, _ := filepath.Rel(root, p); err == nil && (rel == "lab" || strings.HasPrefix(rel, "lab"+string(filepath.Separator))) {
			return errors.New("the course has " + rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// toyLessons is everything lessons 98 and 99 add to a course: their
// folders, checkpoint 99, their reference answers (each in the next
// lesson's folder) and go.mod's lines that reach the checkpoint.
var toyLessons = map[string]string{
	"go.mod": "module quoteflowlab.dev\n\ngo 1.26.0\n\nrequire quoteflowlab.dev/checkpoints/99 v0.0.0\n\nreplace quoteflowlab.dev/checkpoints/99 => ./checkpoints/99\n",
	"lessons/99/lesson.toml": `title = "A toy lesson"
task = "quantity 0 is refused"
method = "mutants"
`,
	"lessons/99/exercise/main.go": `// Exercise E99: prove that toy.Valid refuses quantity 0.
package main

import (
	"fmt"
	"os"

	_ "quoteflowlab.dev/checkpoints/99/toy"
)

func main() {
	fmt.Fprintln(os.Stderr, "E99 TODO: not written yet.")
	os.Exit(1)
}
`,
	"lessons/100/answer_previous/main.go": `// The reference answer to E99.
package main

import (
	"fmt"
	"os"

	"quoteflowlab.dev/checkpoints/99/toy"
)

func main() {
	for q, want := range map[int]bool{0: false, 1: true, 100: true, 101: false} {
		if got := toy.Valid(q); got != want {
			fmt.Printf("E99 failed: Valid(%d) = %v, want %v\n", q, got, want)
			os.Exit(1)
		}
	}
	fmt.Println("E99 passed: 1 and 100 are valid quantities, the others not")
}
`,
	"lessons/98/lesson.toml": `title = "A toy measured lesson"
task = "the largest quantity, in limit.txt"
method = "measured"
`,
	"lessons/98/exercise/limit.txt":        "TODO\n",
	"lessons/99/answer_previous/limit.txt": "100\n",
	"lessons/98/grader/main.go":            toyGrader,
	"lessons/99/demo/main.go":              toyDemo, // demo_test.go's
	"checkpoints/99/go.mod":                "module quoteflowlab.dev/checkpoints/99\n\ngo 1.26.0\n",
	"checkpoints/99/toy/toy.go": `// Package toy is checkpoint 99: one rule.
package toy

// Valid reports whether q is a quantity an order may have.
func Valid(q int) bool {
	if q < 1 || q > 100 {
		return false
	}
	return true
}
`,
}

// toyGrader is lesson 98's grader. It speaks the protocol of kit/report by
// hand: with --accept it describes itself; otherwise it reads the answer's
// limit.txt and reports whether it says 100.
const toyGrader = `package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

func arg(name string) string {
	if i := slices.Index(os.Args, name); i > 0 && i+1 < len(os.Args) {
		return os.Args[i+1]
	}
	return ""
}

func main() {
	if slices.Contains(os.Args, "--accept") {
		os.Stdout.WriteString(` + "`" + `{"watch": ["limit.txt"], "watching": "limit.txt", "doing": "reading limit.txt"}` + "`" + ` + "\n")
		return
	}
	dir := arg("--answer")
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(arg("--root"), dir)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "limit.txt"))
	limit := strings.TrimSpace(string(data))
	prop := map[string]any{"name": "limit_is_100", "kind": "measured", "story": "an order may have up to 100 items.", "required": true, "ok": limit == "100", "status": "ok"}
	r := map[string]any{"schema_version": 1, "exercise": arg("--exercise"), "title": "A toy measured lesson", "method": "measured",
		"answer": arg("--answer"), "verdict": "passed", "ok": true, "summary": "the limit is 100.", "properties": []any{prop}}
	switch {
	case limit == "TODO":
		prop["status"] = "to_do"
		r["verdict"], r["ok"], r["summary"] = "not_started", false, "limit.txt still says TODO."
	case limit != "100":
		prop["status"], prop["detail"] = "failed", "limit.txt says "+limit
		r["verdict"], r["ok"], r["summary"] = "failed", false, "the limit is not 100."
	}
	json.NewEncoder(os.Stdout).Encode(r)
}
`

// toyMutant is lesson 99's one mutant, based on the checkpoint under root.
func toyMutant(t *testing.T, root string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "checkpoints/99/toy/toy.go"))
	if err != nil {
		t.Fatal(err)
	}
	return "kind: mutant\nrequired: true\nstory: quantity 0 is valid.\nfile: checkpoints/99/toy/toy.go\nbase: " + check.Hash(data) +
		"\n-- replace --\n\tif q < 1 || q > 100 {\n-- with --\n\tif q < 0 || q > 100 { // MUTANT: 0 is let through\n"
}

// writeTree writes files (slash paths relative to root).
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

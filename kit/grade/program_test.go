package grade

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
)

// own is a lesson grader that accepts any request but --only bad, and
// reports what it was asked.
type own struct{ req Request }

func (o *own) Accept(req Request) error {
	if req.Only == "bad" {
		return errors.New("--only bad: no such property\n(a second line)")
	}
	o.req = req
	return nil
}

func (o *own) Check(context.Context) report.Report {
	return report.Report{Exercise: o.req.Lesson.Exercise(), Answer: o.req.Answer, Variant: o.req.Variant,
		Verdict: report.Failed, Summary: msg.T("mut.interrupted"), Notes: []string{o.req.Only, o.req.Case, o.req.Timeout.String()},
		Properties: []report.Prop{{Name: "p", Kind: report.Measure, Status: report.Fail, Required: true}}}
}

func (o *own) Describe() Description {
	return Description{Watch: []string{"*.go", "plan.json"}, Watching: "Go files, plan.json", Doing: "grading"}
}

// A lesson's grader answers lab check as package report's protocol says:
// exit 2 and one line for a request it does not accept; with --accept its
// description as JSON; otherwise its report as JSON on stdout or in the
// --report file, in the language of --lang, with every flag of the request
// reaching its Accept.
func TestMainSpeaksTheProtocol(t *testing.T) {
	defer msg.Set(msg.Current())
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "lessons/15/grader"), 0o755)
	os.WriteFile(filepath.Join(root, "lessons/15/lesson.toml"), []byte("title = \"t\"\ntask = \"t\"\nmethod = \"measured\"\n"), 0o644)
	base := []string{"--root", root, "--exercise", "E15", "--answer", "lessons/16/answer_previous", "--lang", "zh-CN"}
	var stdout, stderr bytes.Buffer

	if code := serve(append(base, "--only", "bad"), &own{}, &stdout, &stderr); code != 2 || stdout.Len() > 0 {
		t.Fatalf("a request it does not accept: exit %d, stdout %q; want 2 and nothing", code, stdout.String())
	}
	if got := stderr.String(); got != "--only bad: no such property | (a second line)\n" {
		t.Fatalf("stderr %q; want the reason on one line", got)
	}

	stdout.Reset()
	if code := serve(append(base, "--accept"), &own{}, &stdout, &stderr); code != 0 {
		t.Fatalf("--accept: exit %d (%s)", code, stderr.String())
	}
	var d Description
	if err := json.Unmarshal(stdout.Bytes(), &d); err != nil || d.Doing != "grading" || !d.Watches("a/b.go") {
		t.Fatalf("--accept printed %q (%v); want the description", stdout.String(), err)
	}

	stdout.Reset()
	g := &own{}
	args := append(base, "--variant", "v", "--only", "p", "--case", "call?x", "--timeout", "3s", "--seed", "7")
	if code := serve(args, g, &stdout, &stderr); code != 0 {
		t.Fatalf("check: exit %d (%s)", code, stderr.String())
	}
	var r report.Report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, stdout.String())
	}
	if r.Variant != "v" || r.Answer != "lessons/16/answer_previous" || g.req.Seed != 7 || r.Lang != "zh-CN" || r.SchemaVersion != report.SchemaVersion {
		t.Fatalf("report %+v, request %+v: the flags did not reach the grader", r, g.req)
	}
	if !slices.Equal(r.Notes, []string{"p", "call?x", "3s"}) || r.Summary != msg.In(msg.Chinese, "mut.interrupted") {
		t.Fatalf("notes %q, summary %q", r.Notes, r.Summary)
	}

	stdout.Reset()
	file := filepath.Join(root, "report.json")
	if code := serve(append(base, "--report", file), &own{}, &stdout, &stderr); code != 0 || stdout.Len() > 0 {
		t.Fatalf("--report: exit %d, stdout %q", code, stdout.String())
	}
	data, err := os.ReadFile(file)
	if err != nil || !json.Valid(data) {
		t.Fatalf("--report wrote %q (%v)", data, err)
	}
}

// A description's watch list: "*.go" is every .go file, at any depth; any
// other entry is one path, exactly.
func TestDescriptionWatches(t *testing.T) {
	d := Description{Watch: []string{"*.go", "budget_plan.json"}}
	for rel, want := range map[string]bool{
		"main.go": true, "call/main.go": true, "budget_plan.json": true,
		"call/budget_plan.json": false, "budget_plan.json~": false, "notes.md": false, "go.mod": false,
	} {
		if got := d.Watches(rel); got != want {
			t.Errorf("Watches(%q) = %v, want %v", rel, got, want)
		}
	}
}

// A session names what a run changed in the course and puts it back, fails
// the report for it, and holds its kept key off the disk until it closes.
func TestSessionRestoresAndReportsTheCourse(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{"go.mod": "module quoteflowlab.dev\n", "checkpoints/13/a.go": "package a\n", "lessons/13/exercise/main.go": "package main\n"} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	t.Setenv("LAB_STATE_DIR", filepath.Join(root, ".lab"))
	keep := Keep{Dir: t.TempDir(), Name: "k.key"}
	PutKey(keep.Dir, keep.Name, []byte("0123456789abcdef0123"))
	l := course.Lesson{Number: 13, Method: report.Mutants}
	s, err := Open(Request{Root: root, Lesson: l}, keep)
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Key) != "0123456789abcdef0123" {
		t.Errorf("the session's key is %q, not the one kept", s.Key)
	}
	if _, err := os.Stat(filepath.Join(keep.Dir, keep.Name)); err == nil {
		t.Errorf("the key is on the disk while the session is open")
	}
	r := report.Report{Verdict: report.Passed, OK: true}
	if s.Tampered(&r, "a tool", "next") || r.Verdict != report.Passed {
		t.Fatalf("nothing changed, yet the report became %s", r.Verdict)
	}
	a := filepath.Join(root, "checkpoints", "13", "a.go")
	os.WriteFile(a, []byte("package a // evil\n"), 0o644)
	os.WriteFile(filepath.Join(root, "lessons", "13", "exercise", "mine.go"), []byte("package main\n"), 0o644) // the answer's own folder
	if got := s.Restore(); !slices.Equal(got, []string{"checkpoints/13/a.go"}) {
		t.Fatalf("Restore says %q; want checkpoints/13/a.go", got)
	}
	if data, _ := os.ReadFile(a); string(data) != "package a\n" {
		t.Fatalf("a.go holds %q after Restore", data)
	}
	s.Restore() // nothing more: Changed still names it
	if !s.Tampered(&r, "a tool", "next") || r.Verdict != report.Failed || r.OK || !strings.Contains(r.Summary, "checkpoints/13/a.go") || r.Next != "next" {
		t.Fatalf("a changed course: report %+v", r)
	}
	s.Close()
	if data, err := os.ReadFile(filepath.Join(keep.Dir, keep.Name)); err != nil || string(data) != string(s.Key) {
		t.Fatalf("after Close the kept key is %q (%v)", data, err)
	}
}

// toyGrader is a lesson's grader in a module of its own: it describes
// itself with --accept and otherwise reports "failed", whatever it is asked.
const toyGrader = `package main

import (
	"fmt"
	"os"
	"slices"
)

const answer = ` + "`" + `{"exercise":"E15","verdict":"failed","summary":"the toy grader says so","properties":[]}` + "`" + `

func main() {
	if slices.Contains(os.Args, "--accept") {
		fmt.Println(` + "`" + `{"watch":["*.go"],"watching":"Go files","doing":"toying"}` + "`" + `)
		return
	}
	fmt.Println(answer)
}
`

// lab check builds a lesson's grader, has it accept the request and runs
// it, and renders its report. A grader binary changed in the cache since
// lab built it (a tool of an answer can write there) is never run, even
// one that keeps the build ID go build judges it by: it is linked anew.
func TestProgramRunsTheGraderLabBuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a toy grader")
	}
	root, cache := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{"go.mod": "module toy\n\ngo 1.26\n", "lessons/15/grader/main.go": toyGrader} {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	l := course.Lesson{Number: 15, Method: report.Measured}
	p := &Program{Dir: "lessons/15/grader"}
	if err := p.Accept(Request{Root: root, Lesson: l, CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	if p.Doing() != "toying" || !p.Watches("x/y.go") || p.Watches("plan.json") {
		t.Fatalf("the description: %+v", p.desc)
	}
	check := func() report.Report {
		t.Helper()
		r := p.Check(context.Background())
		if r.Summary != "the toy grader says so" {
			t.Fatalf("the grader's report is not lab's: %+v", r)
		}
		return r
	}
	if r := check(); r.Verdict != report.Failed {
		t.Fatalf("verdict %s", r.Verdict)
	}
	// An answer's tool patches the grader in the cache: "failed" becomes
	// "passed", and the build ID stays.
	bin := filepath.Join(cache, "E15", "grader", runner.Exe("grader"))
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	patched := bytes.Replace(data, []byte(`"verdict":"failed"`), []byte(`"verdict":"passed"`), 1)
	if bytes.Equal(patched, data) {
		t.Fatal("the toy grader's answer is not in its binary")
	}
	if err := os.WriteFile(bin, patched, 0o755); err != nil {
		t.Fatal(err)
	}
	// It also keeps the real grader beside it and leaves a marker beside
	// the grader's folder: both go when lab builds the grader again.
	real := filepath.Join(filepath.Dir(bin), ".grader.real")
	marker := filepath.Join(cache, "E15", "marker")
	os.WriteFile(real, data, 0o755)
	os.WriteFile(marker, []byte("1\n"), 0o644)
	if r := check(); r.Verdict != report.Failed {
		t.Fatalf("the grader patched in the cache ran: verdict %s", r.Verdict)
	}
	for _, stray := range []string{real, marker} {
		if _, err := os.Stat(stray); err == nil {
			t.Errorf("%s, left by a swap of the grader, is still in the cache after lab built the grader again", stray)
		}
	}
	if _, err := os.Stat(bin); err != nil {
		t.Errorf("the grader is gone: %v", err)
	}
}

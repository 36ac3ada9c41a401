package mutation

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"quoteflowlab.dev/kit/kept"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/testenv"
)

// A toy course: checkpoint 12 has one rule (quantity must be at least 1),
// mutants break it in different ways, a wheat changes it harmlessly, and
// answers of every kind.
const toyCheckpoint = `package quoteflow

import "time"

// Valid reports whether q is an acceptable quantity.
func Valid(q int) bool {
	return q >= 1 && q <= 100
}

// Ready says when the service is ready to answer.
func Ready() <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		time.Sleep(0)
		close(ch)
	}()
	return ch
}
`

var toyLesson = course.Lesson{Number: 12, Title: "Toy", Method: report.Mutants}

const refAnswer = `package main

import ("fmt"; "os"; "time"; "quoteflowlab.dev/checkpoints/12/quoteflow")

func main() {
	select {
	case <-quoteflow.Ready():
	case <-time.After(5 * time.Second):
		fmt.Println("E12 failed: never ready"); os.Exit(1)
	}
	if quoteflow.Valid(0) { fmt.Println("E12 failed: quantity 0 accepted"); os.Exit(1) }
	if !quoteflow.Valid(1) { fmt.Println("E12 failed: quantity 1 rejected"); os.Exit(1) }
	fmt.Println("E12 passed: 0 rejected, 1 accepted")
}
`

var toyFiles = map[string]string{
	"go.mod":                        "module quoteflowlab.dev\n\ngo 1.26\n\nrequire quoteflowlab.dev/checkpoints/12 v0.0.0\n\nreplace quoteflowlab.dev/checkpoints/12 => ./checkpoints/12\n",
	"lessons/12/README.md":          "# Lesson 12: Toy\n",
	"checkpoints/12/go.mod":         "module quoteflowlab.dev/checkpoints/12\n\ngo 1.26\n",
	"checkpoints/12/quoteflow/q.go": toyCheckpoint,
	"lessons/12/exercise/main.go": `package main

import ("fmt"; "os")

func main() { fmt.Println("E12: TODO: write the exercise"); os.Exit(1) }
`,
	"lessons/13/answer_previous/main.go": refAnswer,
	"answers/broken/main.go":             "package main\n\nfunc main() { undefinedThing() }\n",
	"answers/wrong/main.go": `package main

import ("fmt"; "os")

func main() { fmt.Println("E12 failed: I always fail"); os.Exit(1) }
`,
	// Fails with a line that differs every run (a measured time, say).
	"answers/jittery/main.go": `package main

import ("fmt"; "os"; "time")

func main() { fmt.Println("E12 failed: late by", time.Now().UnixNano()); os.Exit(1) }
`,
	"answers/hang/main.go": "package main\n\nimport \"time\"\n\nfunc main() { time.Sleep(time.Hour) }\n",
	"answers/spin/main.go": "package main\n\nfunc main() { n := 0; for { n++ } }\n",
	// Assumes the service is ready 10 ms after asking: a sleep, not a signal.
	"answers/sleepy/main.go": `package main

import ("fmt"; "os"; "time"; "quoteflowlab.dev/checkpoints/12/quoteflow")

func main() {
	ch := quoteflow.Ready()
	time.Sleep(10 * time.Millisecond)
	select {
	case <-ch:
	default:
		fmt.Println("E12 failed: not ready"); os.Exit(1)
	}
	if quoteflow.Valid(0) || !quoteflow.Valid(1) { fmt.Println("E12 failed: wrong"); os.Exit(1) }
	fmt.Println("E12 passed")
}
`,
	// Passes on every other run: its result depends on the clock.
	"answers/coin/main.go": `package main

import ("fmt"; "os"; "time"; "quoteflowlab.dev/checkpoints/12/quoteflow")

func main() {
	if quoteflow.Valid(0) || !quoteflow.Valid(1) { fmt.Println("E12 failed: wrong"); os.Exit(1) }
	if time.Now().UnixNano()/1000%2 == 0 { fmt.Println("E12 failed: unlucky"); os.Exit(1) }
	fmt.Println("E12 passed")
}
`,
}

type toyEdit struct {
	kind     report.Kind
	story    string
	required bool
	old, new string
}

var toyEdits = map[string]toyEdit{
	"zero_accepted": {report.Mutant, "quantity 0 is accepted.", true, "\treturn q >= 1 && q <= 100\n", "\treturn q >= 0 && q <= 100 // MUTANT\n"},
	"one_rejected":  {report.Mutant, "quantity 1 is rejected.", true, "\treturn q >= 1 && q <= 100\n", "\treturn q >= 2 && q <= 100 // MUTANT\n"},
	"no_upper":      {report.Mutant, "quantity 101 is accepted.", false, "\treturn q >= 1 && q <= 100\n", "\treturn q >= 1 // MUTANT\n"},
	"ready_later":   {report.Wheat, "the service gets ready 200 ms later.", true, "\t\ttime.Sleep(0)\n", "\t\ttime.Sleep(200 * time.Millisecond) // WHEAT\n"},
}

func toyRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root := t.TempDir()
	for name, body := range toyFiles {
		testenv.Write(t, filepath.Join(root, name), body)
	}
	for name, e := range toyEdits {
		writeEdit(t, root, name, e)
	}
	// The checks' cache (toyCheck's default) is kept from one run of the
	// test to the next, as a student's .lab/cache is from one check to the
	// next: an answer whose source is what it was is not built again (the
	// toy course is written to a new folder each run, and an answer in it
	// is the same package with the same content).
	if err := os.MkdirAll(filepath.Join(root, ".lab"), 0o755); err != nil {
		t.Fatal(err)
	}
	// One per test or subtest that writes a toy course of its own.
	give, err := kept.TakeAs("mutation-toy-"+strings.ReplaceAll(t.Name(), "/", "_"), filepath.Join(root, ".lab", "cache"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(give)
	return root
}

func writeEdit(t *testing.T, root, name string, e toyEdit) {
	t.Helper()
	req := fmt.Sprintf("required: %t\n", e.required)
	if e.kind == report.Wheat {
		req = ""
	}
	def := fmt.Sprintf("kind: %s\n%sstory: %s\nfile: checkpoints/12/quoteflow/q.go\nbase: %s\n-- replace --\n%s-- with --\n%s",
		e.kind, req, e.story, check.Hash([]byte(toyCheckpoint)), e.old, e.new)
	testenv.Write(t, filepath.Join(root, "lessons/12/checks", name+".txtar"), def)
}

func toyCheck(t *testing.T, root string, o grade.Request) report.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	o.Root, o.Lesson = root, toyLesson
	if o.Monitor == nil {
		o.Monitor = quiet{}
	}
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(root, ".lab", "cache")
	}
	return Check(ctx, o)
}

// quiet and busy are machines that never and always are too busy.
type quiet struct{}

func (quiet) Mark() int                            { return 0 }
func (quiet) Since(int) report.Machine             { return report.Machine{} }
func (quiet) Stop() report.Machine                 { return report.Machine{} }
func (quiet) HeldBack(float64, time.Duration) bool { return false }

type busy struct{}

func (busy) Mark() int                            { return 0 }
func (busy) Since(int) report.Machine             { return report.Machine{LagP99MS: 80, Busy: true} }
func (busy) Stop() report.Machine                 { return report.Machine{LagP99MS: 80, Busy: true} }
func (busy) HeldBack(float64, time.Duration) bool { return true }

func property(t *testing.T, r report.Report, name string) report.Prop {
	t.Helper()
	for _, p := range r.Properties {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no property %q in %+v", name, r.Properties)
	return report.Prop{}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	root := toyRepo(t)

	for _, separate := range []bool{false, true} {
		t.Run(fmt.Sprintf("the reference answer passes, catches the mutants and passes the wheat (separate builds: %t)", separate), func(t *testing.T) {
			r := toyCheck(t, root, grade.Request{Answer: "lessons/13/answer_previous", Separate: separate})
			if r.Verdict != report.Passed || !r.OK {
				t.Fatalf("verdict %s (%s), want passed", r.Verdict, r.Summary)
			}
			for _, name := range []string{"zero_accepted", "one_rejected"} {
				if p := property(t, r, name); p.Status != report.Caught || !p.OK || !p.Required {
					t.Errorf("%s: %+v, want a caught required mutant", name, p)
				}
			}
			if p := property(t, r, "no_upper"); p.Status != report.Missed || p.OK || p.Required {
				t.Errorf("no_upper: %+v, want a missed bonus mutant", p)
			}
			if p := property(t, r, "ready_later"); p.Status != report.Pass || p.Kind != report.Wheat {
				t.Errorf("ready_later: %+v, want a passed wheat", p)
			}
			if s := r.Score; s == nil || s.RequiredCaught != 2 || s.Required != 2 || s.BonusCaught != 0 || s.Bonus != 1 || s.WheatsPassed != 1 {
				t.Errorf("score %+v", r.Score)
			}
			if r.SchemaVersion != report.SchemaVersion || r.Method != report.Mutants {
				t.Errorf("schema %d, method %s", r.SchemaVersion, r.Method)
			}
		})
	}

	t.Run("an answer that orders events with a sleep fails on the wheat", func(t *testing.T) {
		r := toyCheck(t, root, grade.Request{Answer: "answers/sleepy"})
		p := property(t, r, "ready_later")
		if r.Verdict != report.Failed || p.Status != report.Fail || !strings.Contains(p.Detail, "depends on timing or order") {
			t.Fatalf("verdict %s, wheat %+v; want failed on the wheat", r.Verdict, p)
		}
		if q := property(t, r, "zero_accepted"); q.Status != report.Caught {
			t.Errorf("it still catches the mutants: %+v", q)
		}
	})

	t.Run("on a busy machine a failure that differs is inconclusive; the same failure twice, or a timeout, fails", func(t *testing.T) {
		t.Parallel() // a toy course of its own: the slowest, beside each other
		root := toyRepo(t)
		r := toyCheck(t, root, grade.Request{Answer: "answers/jittery", Monitor: busy{}})
		if r.Verdict != report.Inconclusive || r.Verdict.ExitCode() != 3 || r.Reference.Status != report.Busy {
			t.Fatalf("verdict %s, reference %s; want inconclusive", r.Verdict, r.Reference.Status)
		}
		if !strings.Contains(strings.Join(r.Notes, " "), "went wrong twice while the machine was too busy") {
			t.Errorf("notes %q", r.Notes)
		}
		// "I always fail", word for word twice: load does not write that line.
		r = toyCheck(t, root, grade.Request{Answer: "answers/wrong", Monitor: busy{}})
		if r.Verdict != report.Failed || r.Reference.Status != report.Fail {
			t.Fatalf("wrong on a busy machine: verdict %s, reference %s; want failed", r.Verdict, r.Reference.Status)
		}
		if !strings.Contains(strings.Join(r.Notes, " "), "went wrong twice in the same way") {
			t.Errorf("notes %q", r.Notes)
		}
		// Sleepy fails on the wheat that is ready later, the same way every
		// time: its sleep is wrong whatever the load.
		r = toyCheck(t, root, grade.Request{Answer: "answers/sleepy", Monitor: busy{}})
		if p := property(t, r, "ready_later"); r.Verdict != report.Failed || p.Status != report.Fail {
			t.Fatalf("sleepy on a busy machine: %s, %+v", r.Verdict, p)
		}
		// A mutant let through twice stays missed: load does not make a test pass.
		testenv.Write(t, filepath.Join(root, "answers/lenient/main.go"), strings.Replace(refAnswer, `if !quoteflow.Valid(1) { fmt.Println("E12 failed: quantity 1 rejected"); os.Exit(1) }`, "", 1))
		r = toyCheck(t, root, grade.Request{Answer: "answers/lenient", Monitor: busy{}})
		if p := property(t, r, "one_rejected"); r.Verdict != report.Failed || p.Status != report.Missed {
			t.Fatalf("a weak answer on a busy machine: verdict %s, one_rejected %s; want failed, missed", r.Verdict, p.Status)
		}
		// A mutant missed while the machine was busy, a bonus one too, is
		// judged again in a second round: the score does not depend on the
		// load either. This answer looks for quantity 101 only on its second
		// run on the same build (it tells builds apart by the selector's
		// value, as an answer may).
		seen := t.TempDir()
		testenv.Write(t, filepath.Join(root, "answers/second_look/main.go"), strings.Replace(strings.Replace(refAnswer,
			`"time"; `, `"time"; "path/filepath"; "strings"; `, 1),
			`	fmt.Println("E12 passed: 0 rejected, 1 accepted")`,
			`	key := "reference"
	for _, kv := range os.Environ() {
		if _, v, _ := strings.Cut(kv, "="); len(v) == 20 && strings.Trim(v, "0123456789abcdef") == "" {
			key = v
		}
	}
	mark := filepath.Join(`+strconv.Quote(seen)+`, key)
	if _, err := os.Stat(mark); err != nil {
		os.WriteFile(mark, nil, 0o644) // the first run on this build: quantity 101 is not looked at
	} else if quoteflow.Valid(101) {
		fmt.Println("E12 failed: quantity 101 accepted"); os.Exit(1)
	}
	fmt.Println("E12 passed: 0 rejected, 1 accepted")`, 1))
		r = toyCheck(t, root, grade.Request{Answer: "answers/second_look", Monitor: busy{}})
		if p := property(t, r, "no_upper"); r.Verdict != report.Passed || p.Status != report.Caught {
			t.Fatalf("a bonus mutant caught on its second run on a busy machine: verdict %s, no_upper %s; want passed, caught\n%q", r.Verdict, p.Status, r.Notes)
		}
		os.RemoveAll(seen)
		os.Mkdir(seen, 0o755)
		r = toyCheck(t, root, grade.Request{Answer: "answers/second_look", Monitor: quiet{}})
		if p := property(t, r, "no_upper"); p.Status != report.Missed {
			t.Fatalf("on a quiet machine nothing runs twice: no_upper %s, want missed", p.Status)
		}
		// Cheats that tell a second sighting of a build from a first, and
		// test nothing: the second round is every build again, so neither
		// passes (each did, when only the builds that went wrong ran again).
		for _, cheat := range []struct{ name, first, second string }{
			{"fails_when_seen_again", "0", "1"},
			{"passes_when_seen_again", "1", "0"},
		} {
			seen := t.TempDir()
			testenv.Write(t, filepath.Join(root, "answers", cheat.name, "main.go"), `package main

import ("os"; "path/filepath"; "strings")

func main() {
	key := "reference"
	for _, kv := range os.Environ() {
		if _, v, _ := strings.Cut(kv, "="); len(v) == 20 && strings.Trim(v, "0123456789abcdef") == "" {
			key = v
		}
	}
	mark := filepath.Join(`+strconv.Quote(seen)+`, key)
	if _, err := os.Stat(mark); err != nil {
		os.WriteFile(mark, nil, 0o644)
		os.Exit(`+cheat.first+`)
	}
	os.Exit(`+cheat.second+`)
}
`)
			r = toyCheck(t, root, grade.Request{Answer: "answers/" + cheat.name, Monitor: busy{}})
			if r.Verdict == report.Passed || r.OK {
				t.Errorf("%s on a busy machine: verdict %s; want anything but passed\n%q", cheat.name, r.Verdict, r.Notes)
			}
		}
		r = toyCheck(t, root, grade.Request{Answer: "answers/hang", Monitor: busy{}, Timeout: 300 * time.Millisecond})
		if r.Verdict != report.Failed || r.Reference.Status != report.TimedOut {
			t.Fatalf("hang on a busy machine: %s, %s", r.Verdict, r.Reference.Status)
		}
	})

	t.Run("a starter that prints TODO is not started", func(t *testing.T) {
		r := toyCheck(t, root, grade.Request{})
		if r.Verdict != report.NotStarted || r.Answer != "lessons/12/exercise" {
			t.Fatalf("verdict %s for %s, want not_started for the starter", r.Verdict, r.Answer)
		}
		if p := property(t, r, "zero_accepted"); p.Status != report.NotRun {
			t.Errorf("mutants must not run before the reference passes: %+v", p)
		}
	})

	t.Run("a compile error fails with the compiler's output", func(t *testing.T) {
		r := toyCheck(t, root, grade.Request{Answer: "answers/broken"})
		if r.Verdict != report.Failed || r.Reference.Status != report.BuildFailed {
			t.Fatalf("verdict %s, reference %s; want failed, build failed", r.Verdict, r.Reference.Status)
		}
		if !strings.Contains(r.Reference.Output, "undefinedThing") {
			t.Errorf("compiler output not shown: %q", r.Reference.Output)
		}
	})

	t.Run("an answer failing on the reference fails, and its output is kept", func(t *testing.T) {
		r := toyCheck(t, root, grade.Request{Answer: "answers/wrong"})
		if r.Verdict != report.Failed || r.Reference.ExitCode != 1 || !strings.Contains(r.Reference.Output, "I always fail") {
			t.Fatalf("got %s, reference %+v", r.Verdict, r.Reference)
		}
	})

	t.Run("a hung answer is killed at the timeout, and the cause is named", func(t *testing.T) {
		t.Parallel() // a toy course of its own: the slowest, beside each other
		root := toyRepo(t)
		for answer, cause := range map[string]string{"answers/hang": "waiting with no bound", "answers/spin": "computing"} {
			start := time.Now()
			r := toyCheck(t, root, grade.Request{Answer: answer, Timeout: 500 * time.Millisecond})
			if r.Reference.Status != report.TimedOut || r.Verdict != report.Failed || !strings.Contains(r.Reference.Output, cause) {
				t.Fatalf("%s: reference %+v, verdict %s; want timed out, failed, %q", answer, r.Reference, r.Verdict, cause)
			}
			if took := time.Since(start); took > time.Minute {
				t.Errorf("took %s", took)
			}
		}
	})

	t.Run("an answer whose result changes is flaky with --repeat", func(t *testing.T) {
		r := toyCheck(t, root, grade.Request{Answer: "answers/coin", Repeat: 12})
		// 12 runs of a fair coin agree with probability 2^-11.
		if r.Verdict != report.Flaky || r.Reference.PassRate == "" {
			t.Fatalf("verdict %s (%s), reference %+v; want flaky with a pass rate", r.Verdict, r.Summary, r.Reference)
		}
	})

	t.Run("an answer outside the repository is built as one of its packages", func(t *testing.T) {
		t.Parallel() // a toy course of its own: the slowest, beside each other
		root := toyRepo(t)
		outside := t.TempDir()
		testenv.Write(t, filepath.Join(outside, "main.go"), refAnswer)
		// Builds left by this test's last run in its kept cache: the counts
		// below start from none.
		old, _ := filepath.Glob(filepath.Join(root, ".lab", "cache", "*", "external_*"))
		for _, d := range old {
			os.RemoveAll(d)
		}
		answer, err := grade.ResolveAnswer(root, root, outside)
		if err != nil || answer != outside {
			t.Fatalf("ResolveAnswer = %q, %v", answer, err)
		}
		r := toyCheck(t, root, grade.Request{Answer: answer})
		if r.Verdict != report.Passed {
			t.Fatalf("verdict %s (%s)", r.Verdict, r.Summary)
		}
		if _, err := os.Stat(filepath.Join(root, "labexternal")); err == nil {
			t.Errorf("the virtual package directory was created in the tree")
		}
		builds := func() []string {
			dirs, _ := filepath.Glob(filepath.Join(root, ".lab", "cache", "*", "external_*"))
			return dirs
		}
		first := builds()
		if len(first) != 1 {
			t.Fatalf("cache directories of outside answers: %q, want one", first)
		}
		// The same answer in another folder is the same build, in the same
		// folder of the cache. (It is linked again: every check has a key
		// of its own, from which the schema's selector values come.)
		copied := t.TempDir()
		testenv.Write(t, filepath.Join(copied, "main.go"), refAnswer)
		if r := toyCheck(t, root, grade.Request{Answer: copied}); r.Verdict != report.Passed {
			t.Fatalf("the copy: verdict %s (%s)", r.Verdict, r.Summary)
		}
		if got := builds(); !slices.Equal(got, first) {
			t.Errorf("the same answer in another folder: cache directories %q, want %q", got, first)
		}

		// A changed answer is another build.
		testenv.Write(t, filepath.Join(copied, "main.go"), refAnswer+"\n// changed\n")
		if r := toyCheck(t, root, grade.Request{Answer: copied}); r.Verdict != report.Passed {
			t.Fatalf("the changed copy: verdict %s (%s)", r.Verdict, r.Summary)
		}
		if got := builds(); len(got) != 2 {
			t.Errorf("after a change: cache directories %q, want two", got)
		}
	})
}

func TestAStaleEditIsNamed(t *testing.T) {
	t.Parallel()
	root := toyRepo(t)
	writeEdit(t, root, "stale", toyEdit{report.Mutant, "gone.", true, "\treturn q >= 7\n", "\treturn q >= 8\n"})
	r := toyCheck(t, root, grade.Request{Answer: "lessons/13/answer_previous"})
	if r.Verdict != report.Failed || !strings.Contains(r.Summary, "E12 mutant stale") || !strings.Contains(r.Summary, "stale edit") {
		t.Fatalf("verdict %s: %s", r.Verdict, r.Summary)
	}
}

func TestAMutantThatDoesNotBuildIsNotViable(t *testing.T) {
	t.Parallel()
	root := toyRepo(t)
	writeEdit(t, root, "broken", toyEdit{report.Mutant, "does not compile.", true, "\treturn q >= 1 && q <= 100\n", "\treturn nope\n"})
	r := toyCheck(t, root, grade.Request{Answer: "lessons/13/answer_previous"})
	p := property(t, r, "broken")
	if p.Status != report.NotViable || p.OK || !strings.Contains(p.Detail, "nope") {
		t.Fatalf("broken mutant: %+v", p)
	}
	if r.Verdict != report.Passed {
		t.Errorf("a mutant that does not build is the course's bug, not the student's miss: %s (%s)", r.Verdict, r.Summary)
	}
	if !strings.Contains(strings.Join(r.Notes, " "), "schema did not build") {
		t.Errorf("notes %q", r.Notes)
	}
	// The student's tree is never modified.
	if data, _ := os.ReadFile(filepath.Join(root, "checkpoints/12/quoteflow/q.go")); string(data) != toyCheckpoint {
		t.Errorf("checkpoint file changed:\n%s", data)
	}
}

package check

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/mutant"
)

// A toy course: checkpoint 12 has one rule (quantity must be at least 1),
// three mutants break it in different ways, and answers of every kind.
const toyCheckpoint = `package quoteflow

// Valid reports whether q is an acceptable quantity.
func Valid(q int) bool { return q >= 1 && q <= 100 }
`

var toyFiles = map[string]string{
	"go.mod":                        "module quoteflowlab.dev\n\ngo 1.26\n\nrequire quoteflowlab.dev/checkpoints/12 v0.0.0\n\nreplace quoteflowlab.dev/checkpoints/12 => ./checkpoints/12\n",
	"checkpoints/12/go.mod":         "module quoteflowlab.dev/checkpoints/12\n\ngo 1.26\n",
	"checkpoints/12/quoteflow/q.go": toyCheckpoint,
	"lessons/12/exercise/main.go": `package main

import ("fmt"; "os")

func main() { fmt.Println("E12: TODO: write the exercise"); os.Exit(1) }
`,
	"lessons/13/answer_previous/main.go": `package main

import ("fmt"; "os"; "quoteflowlab.dev/checkpoints/12/quoteflow")

func main() {
	if quoteflow.Valid(0) { fmt.Println("E12 failed: quantity 0 accepted"); os.Exit(1) }
	if !quoteflow.Valid(1) { fmt.Println("E12 failed: quantity 1 rejected"); os.Exit(1) }
	fmt.Println("E12 passed: 0 rejected, 1 accepted")
}
`,
	"answers/broken/main.go": "package main\n\nfunc main() { undefinedThing() }\n",
	"answers/wrong/main.go": `package main

import ("fmt"; "os")

func main() { fmt.Println("E12 failed: I always fail"); os.Exit(1) }
`,
	"answers/hang/main.go": "package main\n\nimport \"time\"\n\nfunc main() { time.Sleep(time.Hour) }\n",
}

var toyMutants = map[string]struct {
	story    string
	required bool
	body     string
}{
	"zero_accepted": {"quantity 0 is accepted.", true, "q >= 0 && q <= 100"},
	"one_rejected":  {"quantity 1 is rejected.", true, "q >= 2 && q <= 100"},
	"no_upper":      {"quantity 101 is accepted.", false, "q >= 1"},
}

func toyRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root := t.TempDir()
	for name, body := range toyFiles {
		write(t, filepath.Join(root, name), body)
	}
	for name, m := range toyMutants {
		def := mutant.Format(mutant.Mutant{
			Story: m.story, Required: m.required, Base: mutant.Hash([]byte(toyCheckpoint)),
			Target:  "checkpoints/12/quoteflow/q.go",
			Content: []byte(strings.Replace(toyCheckpoint, "q >= 1 && q <= 100", m.body, 1)),
		})
		write(t, filepath.Join(root, mutant.Dir, "E12", name+".txtar"), string(def))
	}
	return root
}

func write(t *testing.T, name, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func toyCheck(t *testing.T, root, answer string, timeout time.Duration) Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	lesson, err := course.ParseExercise("E12")
	if err != nil {
		t.Fatal(err)
	}
	return Check(ctx, Options{Root: root, Lesson: lesson, Answer: answer, Timeout: timeout, CacheDir: filepath.Join(root, ".lab", "cache")})
}

func property(t *testing.T, r Report, name string) Property {
	t.Helper()
	for _, p := range r.Properties {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no property %q in %+v", name, r.Properties)
	return Property{}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	root := toyRepo(t)

	t.Run("the reference answer passes and catches the required mutants", func(t *testing.T) {
		r := toyCheck(t, root, "lessons/13/answer_previous", 0)
		if r.Verdict != Passed || !r.OK {
			t.Fatalf("verdict %s (%s), want passed", r.Verdict, r.Summary)
		}
		for _, name := range []string{"zero_accepted", "one_rejected"} {
			if p := property(t, r, name); p.Status != StatusCaught || !p.OK || !p.Required {
				t.Errorf("%s: %+v, want a caught required mutant", name, p)
			}
		}
		if p := property(t, r, "no_upper"); p.Status != StatusMissed || p.OK || p.Required {
			t.Errorf("no_upper: %+v, want a missed bonus mutant", p)
		}
		if r.Properties[len(r.Properties)-1].Name != "no_upper" {
			t.Errorf("bonus mutants should come last: %+v", r.Properties)
		}
	})

	t.Run("a starter that prints TODO is not started", func(t *testing.T) {
		r := toyCheck(t, root, "", 0)
		if r.Verdict != NotStarted || r.Answer != "lessons/12/exercise" {
			t.Fatalf("verdict %s for %s, want not_started for the starter", r.Verdict, r.Answer)
		}
		if p := property(t, r, "zero_accepted"); p.Status != StatusNotRun {
			t.Errorf("mutants must not run before the reference passes: %+v", p)
		}
	})

	t.Run("a compile error fails with the compiler's output", func(t *testing.T) {
		r := toyCheck(t, root, "answers/broken", 0)
		if r.Verdict != Failed || r.Reference.Status != StatusBuildFailed {
			t.Fatalf("verdict %s, reference %s; want failed, build failed", r.Verdict, r.Reference.Status)
		}
		if !strings.Contains(r.Reference.Output, "undefinedThing") {
			t.Errorf("compiler output not shown: %q", r.Reference.Output)
		}
	})

	t.Run("an answer failing on the reference fails, and its output is kept", func(t *testing.T) {
		r := toyCheck(t, root, "answers/wrong", 0)
		if r.Verdict != Failed || r.Reference.ExitCode != 1 || !strings.Contains(r.Reference.Output, "I always fail") {
			t.Fatalf("got %s, reference %+v", r.Verdict, r.Reference)
		}
	})

	t.Run("a hung answer is killed at the timeout", func(t *testing.T) {
		start := time.Now()
		r := toyCheck(t, root, "answers/hang", 300*time.Millisecond)
		if r.Reference.Status != StatusTimedOut || r.Verdict != Failed {
			t.Fatalf("reference %+v, verdict %s; want timed out, failed", r.Reference, r.Verdict)
		}
		if took := time.Since(start); took > time.Minute {
			t.Errorf("took %s", took)
		}
	})
}

func TestCheckMutantThatDoesNotBuild(t *testing.T) {
	t.Parallel()
	root := toyRepo(t)
	def := mutant.Format(mutant.Mutant{
		Story: "does not compile.", Required: true, Base: mutant.Hash([]byte(toyCheckpoint)),
		Target: "checkpoints/12/quoteflow/q.go", Content: []byte("package quoteflow\n\nfunc Valid(q int) bool { return nope }\n"),
	})
	write(t, filepath.Join(root, mutant.Dir, "E12", "broken.txtar"), string(def))
	r := toyCheck(t, root, "lessons/13/answer_previous", 0)
	p := property(t, r, "broken")
	if p.Status != StatusBuildFailed || p.OK || !strings.Contains(p.Detail, "nope") {
		t.Fatalf("broken mutant: %+v", p)
	}
	if r.Verdict != Failed {
		t.Errorf("a required mutant that cannot be run cannot pass the check: %s", r.Verdict)
	}
	// The student's tree is never modified.
	if data, _ := os.ReadFile(filepath.Join(root, "checkpoints/12/quoteflow/q.go")); string(data) != toyCheckpoint {
		t.Errorf("checkpoint file changed:\n%s", data)
	}
}

func TestReportJSON(t *testing.T) {
	r := Report{Exercise: "E15", Verdict: Failed, Properties: []Property{{Name: "connect_phase", Story: "a refused connection is phase connect", Required: true, Status: StatusFailed, Detail: "got read"}}}
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	p := back["properties"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "story", "required", "ok", "status", "detail"} {
		if _, ok := p[k]; !ok {
			t.Errorf("property JSON lacks %q: %s", k, data)
		}
	}
	if _, ok := back["reference"]; ok {
		t.Errorf("a graded report has no reference run: %s", data)
	}
}

func TestWriteText(t *testing.T) {
	r := Report{
		Exercise: "E14", Title: "Retry once", Answer: "lessons/14/exercise", Checkpoint: "checkpoints/14",
		Verdict: Failed, Summary: "catches only 1/2.", Next: "try harder",
		Reference: &Run{Status: StatusPassed, Output: "noise\nE14 passed: fine\n"},
		Properties: []Property{
			{Name: "no_retry", Story: "503 is never retried.", Required: true, OK: true, Status: StatusCaught, Detail: "E14 failed: 1 attempt"},
			{Name: "new_id", Story: "each attempt has a new ID.", Required: true, Status: StatusMissed},
			{Name: "three", Story: "three attempts.", Status: StatusNotRun},
		},
	}
	var b strings.Builder
	r.WriteText(&b)
	out := b.String()
	for _, want := range []string{
		"on checkpoints/14 (unbroken): passed",
		"    E14 passed: fine\n",
		"  caught   required  no_retry\n                     503 is never retried.\n                     > E14 failed: 1 attempt\n",
		"  MISSED   required  new_id\n                     each attempt has a new ID.\n",
		"  not run  bonus     three\n                     three attempts.\n",
		"verdict: FAILED: catches only 1/2.\n",
		"next: try harder\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

package grade15

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// repoRoot is the repository root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func grade(t *testing.T, opts Options) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	opts.Root = repoRoot(t)
	r := Grade(ctx, opts)
	t.Logf("%s in %v", r.Verdict, r.Elapsed.Round(time.Millisecond))
	return r
}

func TestReferencePasses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the reference tools")
	}
	r := grade(t, Options{Dir: "lessons/16/answer_previous"})
	for _, p := range r.Properties {
		if !p.OK {
			t.Errorf("%s: %s\n\tobserved: %s", p.Name, p.Sentence, p.Detail)
		}
	}
	if !r.Passed || r.NotStarted {
		t.Errorf("verdict %q, want passed", r.Verdict)
	}
	if r.Elapsed > time.Minute {
		t.Errorf("grading took %v, want under a minute", r.Elapsed)
	}
}

func TestStarterIsNotStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the starter tools")
	}
	r := grade(t, Options{}) // default: lessons/15/exercise
	if !r.NotStarted || r.Passed {
		t.Errorf("starter: NotStarted %v, Passed %v, verdict %q; want not started", r.NotStarted, r.Passed, r.Verdict)
	}
	for _, name := range []string{"plan_shape", "report_sections"} {
		if p := property(r, name); p.OK {
			t.Errorf("starter template: %s holds, want it to fail", name)
		}
	}
}

func TestAnswerWithoutToolsFails(t *testing.T) {
	r := grade(t, Options{Dir: t.TempDir()})
	if r.Passed || r.NotStarted {
		t.Fatalf("empty answer: verdict %q, want failed", r.Verdict)
	}
	if p := property(r, "build_call"); p.OK || p.Detail == "" {
		t.Errorf("build_call = %+v, want a failure naming the missing folder", p)
	}
}

// property returns the property called name, or fails the test.
func property(r Result, name string) Property {
	for _, p := range r.Properties {
		if p.Name == name {
			return p
		}
	}
	panic("no property " + name)
}

func TestWriteShowsTheSentenceOfEachFailure(t *testing.T) {
	r := Result{
		Properties: []Property{
			{Name: "plan_fits", Sentence: "the plan's worst case must fit", Required: true, OK: false, Detail: "1600 > 1500"},
			{Name: "call_done", Sentence: "a 200 is done", Required: true, OK: true},
		},
		Verdict: "E15 failed: 1 of 2 required properties do not hold",
	}
	var b strings.Builder
	r.Write(&b)
	for _, want := range []string{"FAIL plan_fits", "the plan's worst case must fit", "observed: 1600 > 1500", "ok   call_done", "E15 failed"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Write output lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "a 200 is done") {
		t.Errorf("Write shows the sentence of a property that holds:\n%s", b.String())
	}
}

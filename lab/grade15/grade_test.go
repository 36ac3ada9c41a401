package grade15

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"quoteflowlab.dev/lab/internal/check"
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

// A property's sentence carries its "but ..." clause only when the property
// was checked and failed: a property that holds, or one that could not be
// checked (its tool printed no JSON), must not be told what went wrong.
func TestSentenceSaysButOnlyForACheckedFailure(t *testing.T) {
	g := &grader{findings: map[string]finding{}, todo: map[string]bool{}}
	g.set("plan_fits", true, "worst case 1400 against total_ms 1500")
	g.set("deadline_floor", false, "call 3 started with 191 ms left")
	g.failAllOf("call did not build", "call_connect_limit")
	r := g.result(time.Now())

	for name, want := range map[string]string{
		"plan_fits":          "the plan's worst case (call budgets + reserve) must fit in total_ms",
		"deadline_floor":     "a call with less than --min-ms left must not start (phase no_budget, elapsed 0, counted in skipped), but a call was started with no budget left",
		"call_connect_limit": "the connect limit must be its own short timeout (--connect 0.3 here)",
	} {
		if got := property(r, name).Sentence; got != want {
			t.Errorf("%s: sentence %q, want %q", name, got, want)
		}
	}
	for _, s := range specs {
		if strings.Contains(s.demand, ", but ") {
			t.Errorf("%s: the demand %q holds a failure clause; put it in the spec's failure field", s.name, s.demand)
		}
	}
}

// lab check shows a starter's unwritten plan as "to do", not as a shouted
// failure, and a property this system cannot check as "skipped", not "ok".
func TestReportStatuses(t *testing.T) {
	res := Result{NotStarted: true, Properties: []Property{
		{Name: "call_done", Required: true, Detail: "call still prints its TODO"},
		{Name: "plan_shape", Required: true, Detail: "budget_plan.json: total_ms must be a positive number"},
		{Name: "call_connect_limit", Required: true, OK: true, Detail: "skipped: this system has no blackhole (Linux only)"},
		{Name: "plan_fits", Required: true, OK: true, Detail: "worst case 1400 against total_ms 1500"},
	}}
	r := report(res, check.Options{}, "lessons/15/exercise")
	want := map[string]string{
		"call_done":          check.StatusNotRun,
		"plan_shape":         check.StatusToDo,
		"call_connect_limit": check.StatusSkipped,
		"plan_fits":          check.StatusOK,
	}
	for _, p := range r.Properties {
		if p.Status != want[p.Name] {
			t.Errorf("%s: status %q, want %q", p.Name, p.Status, want[p.Name])
		}
	}
	if r.Verdict != check.NotStarted {
		t.Errorf("verdict %q, want %q", r.Verdict, check.NotStarted)
	}
	res.NotStarted = false
	r = report(res, check.Options{}, "lessons/15/exercise")
	if p := r.Properties[1]; p.Status != check.StatusFailed || p.Detail == "" {
		t.Errorf("a started answer's invalid plan: status %q detail %q, want %q with the detail", p.Status, p.Detail, check.StatusFailed)
	}
}

// The verdict names the failed properties, but not forty of them.
func TestSummaryNamesAFewFailures(t *testing.T) {
	var res Result
	for i := range 9 {
		res.Properties = append(res.Properties, Property{Name: fmt.Sprintf("p%d", i), Required: true, OK: i == 0})
	}
	got := summary(res)
	want := "8 of 9 required properties do not hold: p1, p2, p3, p4, p5, p6 and 2 more."
	if got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
	res.Properties = res.Properties[:3]
	if got, want := summary(res), "2 of 3 required properties do not hold: p1, p2."; got != want {
		t.Errorf("summary = %q, want %q", got, want)
	}
}

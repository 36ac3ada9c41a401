package mutagen

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const src = `package toy

import (
	"context"
	"net/http"
)

type Code string

const CodeTimeout Code = "timeout"

type Result struct {
	Code  Code
	Retry bool
	N     int
}

func Retryable(status int) bool {
	switch status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return true
	case http.StatusNotFound:
		return false
	}
	return status >= 500 && status < 600
}

func classify(ctx context.Context, n int) Result {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := Result{Code: CodeTimeout, Retry: true}
	if n > 2 {
		r.N = n
	} else {
		r.N = 0
	}
	if ctx.Err() == nil {
		r.N++
	}
	return r
}

func record(seen map[string]bool, key string) {
	seen[key] = true
}

func skipped() int { return 1 }
`

func generate(t *testing.T) []Mutant {
	t.Helper()
	ms, err := Generate("toy/toy.go", []byte(src), []string{"Retryable", "classify", "record"})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func names(ms []Mutant) []string {
	var n []string
	for _, m := range ms {
		n = append(n, m.Name)
	}
	return n
}

// Every operator makes its mutants, named by function, operator and site,
// with a whole-line edit inside the function that applies once.
func TestGenerateMakesEveryOperatorsMutants(t *testing.T) {
	ms := generate(t)
	byName := map[string]Mutant{}
	for _, m := range ms {
		if _, dup := byName[m.Name]; dup {
			t.Errorf("two mutants named %s", m.Name)
		}
		byName[m.Name] = m
		edited, err := m.Apply(src)
		if err != nil {
			t.Errorf("%s: %v", m.Name, err)
			continue
		}
		if edited == src {
			t.Errorf("%s changes nothing", m.Name)
		}
		for _, e := range m.Edits {
			if !strings.HasSuffix(e.Old, "\n") || strings.Count(src, e.Old) != 1 {
				t.Errorf("%s: the replaced text is not whole lines occurring once: %q", m.Name, e.Old)
			}
		}
		if strings.Contains(m.Edits[0].Old, "func skipped") {
			t.Errorf("%s edits a function out of scope", m.Name)
		}
	}
	want := map[string]string{
		"gen_retryable_case_removed_1":  "`case http.StatusServiceUnavailable, http.StatusTooManyRequests: ⏎ return true` removed",
		"gen_retryable_case_removed_2":  "`case http.StatusNotFound: ⏎ return false` removed",
		"gen_retryable_case_value_1":    "`case http.StatusServiceUnavailable, http.StatusTooManyRequests:` → `case http.StatusTooManyRequests:`",
		"gen_retryable_case_value_2":    "`case http.StatusServiceUnavailable, http.StatusTooManyRequests:` → `case http.StatusServiceUnavailable:`",
		"gen_retryable_boundary_1":      "`return status >= 500 && status < 600` → `return status > 500 && status < 600`",
		"gen_retryable_boundary_2":      "`return status >= 500 && status < 600` → `return status >= 500 && status <= 600`",
		"gen_retryable_drop_right_1":    "`return status >= 500 && status < 600` → `return status >= 500`",
		"gen_retryable_drop_left_1":     "`return status >= 500 && status < 600` → `return status < 600`",
		"gen_retryable_const_inc_1":     "`return status >= 500 && status < 600` → `return status >= 501 && status < 600`",
		"gen_retryable_const_dec_1":     "`return status >= 500 && status < 600` → `return status >= 499 && status < 600`",
		"gen_retryable_const_double_1":  "`return status >= 500 && status < 600` → `return status >= 1000 && status < 600`",
		"gen_retryable_const_half_1":    "`return status >= 500 && status < 600` → `return status >= 250 && status < 600`",
		"gen_retryable_const_zero_1":    "`return status >= 500 && status < 600` → `return status >= 0 && status < 600`",
		"gen_classify_call_removed_1":   "`defer cancel()` removed",
		"gen_classify_field_1":          "`r := Result{Code: CodeTimeout, Retry: true}` → `r := Result{Retry: true}`",
		"gen_classify_field_2":          "`r := Result{Code: CodeTimeout, Retry: true}` → `r := Result{Code: CodeTimeout}`",
		"gen_classify_negate_1":         "`if n > 2 {` → `if !(n > 2) {`",
		"gen_classify_swap_branches_1":  "`if n > 2 { ⏎ r.N = n ⏎ } else { ⏎ r.N = 0 ⏎ }` → `if n > 2 { ⏎ r.N = 0 ⏎ } else { ⏎ r.N = n ⏎ }`",
		"gen_classify_assign_removed_1": "`r.N = n` removed",
		"gen_classify_eq_flip_1":        "", // ctx.Err() == nil: a comparison with nil is left alone
		"gen_classify_assign_removed_3": "`r.N++` removed",
		"gen_record_early_return_1":     "`seen[key] = true` → `return ⏎ seen[key] = true`",
		"gen_record_assign_removed_1":   "`seen[key] = true` removed",
	}
	for name, edit := range want {
		m, ok := byName[name]
		switch {
		case edit == "" && ok:
			t.Errorf("%s should not be generated (%s)", name, m.Edit())
		case edit == "":
		case !ok:
			t.Errorf("no mutant %s (have %s)", name, strings.Join(names(ms), " "))
		case m.Edit() != edit:
			t.Errorf("%s: edit %s, want %s", name, m.Edit(), edit)
		}
	}
	if m := byName["gen_classify_negate_1"]; m.Func != "classify" || m.Op != OpNegate || m.Line != 32 {
		t.Errorf("gen_classify_negate_1: func %q op %q line %d, want classify negate 32", m.Func, m.Op, m.Line)
	}
}

// A mutant's name does not depend on other functions: editing one leaves
// the names and edits of another's mutants as they were.
func TestNamesAreStableUnderEditsElsewhere(t *testing.T) {
	before := generate(t)
	changed := strings.Replace(src, "\tseen[key] = true\n", "\tif key != \"\" {\n\t\tseen[key] = true\n\t}\n", 1)
	after, err := Generate("toy/toy.go", []byte(changed), []string{"Retryable", "classify", "record"})
	if err != nil {
		t.Fatal(err)
	}
	edits := map[string]string{}
	for _, m := range after {
		edits[m.Name] = m.Edit()
	}
	for _, m := range before {
		if m.Func == "record" {
			continue
		}
		if edits[m.Name] != m.Edit() {
			t.Errorf("%s: %q before, %q after an edit of record", m.Name, m.Edit(), edits[m.Name])
		}
	}
}

func TestScopeNamesAFunctionThatDoesNotExist(t *testing.T) {
	if _, err := Generate("toy/toy.go", []byte(src), []string{"Nope"}); err == nil || !strings.Contains(err.Error(), "no function Nope") {
		t.Fatalf("err = %v, want one naming Nope", err)
	}
	if _, err := ParseScope("toy/toy.go Retryable\n"); err == nil {
		t.Fatal("a scope line without a colon was accepted")
	}
}

// Compiles drops the mutants that do not type-check (a variable left
// unused when its only use is removed) and keeps the rest.
func TestCompilesDropsWhatDoesNotCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	root := t.TempDir()
	code := `package toy

func Sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total += x
	}
	return total
}

func Last(xs []int) int {
	v := 0
	for _, x := range xs {
		v = x
	}
	return v
}
`
	for name, body := range map[string]string{"go.mod": "module example.com/toy\n\ngo 1.22\n", "toy/toy.go": code} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := Generate("toy/toy.go", []byte(code), []string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	ok, dropped, err := Compiles(root, ms)
	if err != nil {
		t.Fatal(err)
	}
	// Removing `v = x` (or `total += x`) leaves x declared and not used.
	if !slices.Contains(names(dropped), "gen_last_assign_removed_1") || !slices.Contains(names(dropped), "gen_sum_assign_removed_1") {
		t.Errorf("dropped %v, want gen_last_assign_removed_1 and gen_sum_assign_removed_1 among them", names(dropped))
	}
	if !slices.Contains(names(ok), "gen_sum_const_inc_1") {
		t.Errorf("kept %v, want gen_sum_const_inc_1 (total := 1 compiles)", names(ok))
	}
	if len(ok)+len(dropped) != len(ms) {
		t.Errorf("%d kept + %d dropped of %d", len(ok), len(dropped), len(ms))
	}
}

func TestResultsRoundTrip(t *testing.T) {
	r := &Results{Exercise: "E99", Command: "go run ./lab verify --killset E99", Covers: "abc", Generator: Version, Runs: 3, Dropped: 2,
		Entries: []Entry{
			{Name: "gen_a_boundary_1", Status: Required, Op: OpBoundary, Where: "x.go:3 (a)", Edit: "`a < b` → `a <= b`", Killed: 3, Says: "E99 failed: one over"},
			{Name: "gen_a_const_inc_1", Status: Merged, MergedInto: "gen_a_boundary_1", Op: OpConstInc, Where: "x.go:3 (a)", Edit: "`1` → `2`", Killed: 3, Says: "E99 failed: one over"},
			{Name: "gen_b_negate_1", Status: Survivor, Op: OpNegate, Where: "x.go:9 (b)", Edit: "`if c {` → `if !(c) {`", Review: "equivalent: c is always true here"},
		}}
	var b strings.Builder
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	got, err := ParseResults(b.String())
	if err != nil {
		t.Fatal(err)
	}
	got.Exercise = r.Exercise
	if !slices.Equal(got.Entries, r.Entries) || got.Covers != r.Covers || got.Runs != 3 || got.Dropped != 2 || got.Command != r.Command {
		t.Errorf("round trip:\n%+v\nwant\n%+v\n%s", got, r, b.String())
	}
}

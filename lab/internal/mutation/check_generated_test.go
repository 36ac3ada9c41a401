package mutation

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/testenv"
	"quoteflowlab.dev/lab/internal/mutagen"
)

// An answer that checks both ends of the valid range: it catches every
// hand-written mutant of the toy course and both generated ones below.
const fullAnswer = `package main

import ("fmt"; "os"; "quoteflowlab.dev/checkpoints/12/quoteflow")

func main() {
	if quoteflow.Valid(0) { fmt.Println("E12 failed: quantity 0 accepted"); os.Exit(1) }
	if !quoteflow.Valid(1) { fmt.Println("E12 failed: quantity 1 rejected"); os.Exit(1) }
	if !quoteflow.Valid(100) { fmt.Println("E12 failed: quantity 100 rejected"); os.Exit(1) }
	if quoteflow.Valid(101) { fmt.Println("E12 failed: quantity 101 accepted"); os.Exit(1) }
	fmt.Println("E12 passed: 0 and 101 rejected, 1 and 100 accepted")
}
`

// toyGenerated writes the toy course's scope, a kill-set result in which
// two generated mutants of Valid are required (the upper bound one over
// and one under), and the properties table that maps their messages.
func toyGenerated(t *testing.T, root string) (required []string) {
	t.Helper()
	testenv.Write(t, filepath.Join(root, "lessons/12/checks/scope.txt"), "checkpoints/12/quoteflow/q.go: Valid\n")
	testenv.Write(t, filepath.Join(root, "answers/full/main.go"), fullAnswer)
	ms, err := mutagen.Generate("checkpoints/12/quoteflow/q.go", []byte(toyCheckpoint), []string{"Valid"})
	if err != nil {
		t.Fatal(err)
	}
	res := &mutagen.Results{Exercise: "E12", Command: "go run ./lab verify --killset E12", Covers: "toy", Generator: mutagen.Version, Runs: 3}
	says := map[string]string{"gen_valid_boundary_2": "E12 failed: quantity 100 rejected", "gen_valid_const_inc_2": "E12 failed: quantity 101 accepted"}
	for _, m := range ms {
		e := mutagen.Entry{Name: m.Name, Op: m.Op, Where: m.Where("checkpoints/12"), Edit: m.Edit(), Status: mutagen.Survivor, Review: "out of scope: toy"}
		if s, ok := says[m.Name]; ok {
			e.Status, e.Killed, e.Says, e.Review = mutagen.Required, 3, s, ""
			required = append(required, m.Name)
		}
		res.Entries = append(res.Entries, e)
	}
	if len(required) != 2 {
		t.Fatalf("the generator no longer makes %v of the toy: %v", says, required)
	}
	var b strings.Builder
	if err := res.Write(&b); err != nil {
		t.Fatal(err)
	}
	testenv.Write(t, filepath.Join(root, "lessons/12/checks/generated.txt"), b.String())
	testenv.Write(t, filepath.Join(root, "lessons/12/checks/properties.md"), "| property | stated as | smallest violations |\n|---|---|---|\n"+
		"| quantities 1 to 100 are valid | `1 to 100` | zero_accepted, one_rejected |\n\n"+
		"## The reference's messages\n\n| the reference says | property |\n|---|---|\n| `quantity 10` | quantities 1 to 100 are valid |\n")
	return required
}

// The generated mutants that the reference catches are required too: they
// run once every hand-written mutant is caught, in the same schema build,
// and an answer that catches the hand-written ones but not them fails,
// each missed one named with its operator, its place and the property.
func TestCheckGenerated(t *testing.T) {
	t.Parallel()
	root := toyRepo(t)
	required := toyGenerated(t, root)

	t.Run("an answer that checks only what the hand-written mutants break fails on the generated ones", func(t *testing.T) {
		r := toyCheck(t, root, grade.Request{Answer: "lessons/13/answer_previous"})
		if r.Verdict != report.Failed {
			t.Fatalf("verdict %s (%s), want failed", r.Verdict, r.Summary)
		}
		for _, name := range []string{"zero_accepted", "one_rejected"} {
			if p := property(t, r, name); p.Status != report.Caught {
				t.Errorf("%s: %s, want caught (the hand-written set passes this answer)", name, p.Status)
			}
		}
		for _, name := range required {
			p := property(t, r, name)
			if p.Status != report.Missed || p.Generated == nil || p.Generated.Property != "quantities 1 to 100 are valid" {
				t.Errorf("%s: %+v, want a missed generated mutant breaking the stated property", name, p)
			}
		}
		if !strings.Contains(r.Summary, "catches every hand-written required mutant (2/2), yet lets through 2 of 2 generated mutants") {
			t.Errorf("summary %q", r.Summary)
		}
		var b strings.Builder
		r.WriteText(&b)
		for _, want := range []string{"): 0 of 2 caught\n", "MISSED     const_inc      gen_valid_const_inc_2", "at quoteflow/q.go:7 (Valid): `return q >= 1 && q <= 100` → `return q >= 1 && q <= 101`", "it breaks: quantities 1 to 100 are valid"} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("the report lacks %q:\n%s", want, b.String())
			}
		}
		if s := r.Score; s == nil || s.Generated != 2 || s.GeneratedCaught != 0 || s.Required != 2 {
			t.Errorf("score %+v: generated mutants are counted apart", r.Score)
		}
	})

	t.Run("an answer that checks the whole range passes, generated mutants included", func(t *testing.T) {
		r := toyCheck(t, root, grade.Request{Answer: "answers/full"})
		if r.Verdict != report.Passed || !strings.Contains(r.Summary, "and 2/2 generated ones") {
			t.Fatalf("verdict %s (%s), want passed with 2/2 generated", r.Verdict, r.Summary)
		}
	})

	t.Run("generated mutants wait until every hand-written one is caught", func(t *testing.T) {
		testenv.Write(t, filepath.Join(root, "answers/lax/main.go"), strings.Replace(fullAnswer, `if quoteflow.Valid(0) { fmt.Println("E12 failed: quantity 0 accepted"); os.Exit(1) }`, "", 1))
		r := toyCheck(t, root, grade.Request{Answer: "answers/lax"})
		if p := property(t, r, "zero_accepted"); r.Verdict != report.Failed || p.Status != report.Missed {
			t.Fatalf("verdict %s, zero_accepted %s; want failed on it", r.Verdict, p.Status)
		}
		for _, name := range required {
			if p := property(t, r, name); p.Status != report.NotRun {
				t.Errorf("%s: %s, want not run while a hand-written mutant is missed", name, p.Status)
			}
		}
		if strings.Contains(r.Summary, "generated") {
			t.Errorf("summary %q speaks of generated mutants that did not run", r.Summary)
		}
	})

	t.Run("a required mutant the generator no longer makes is a course bug, said in a note", func(t *testing.T) {
		root := toyRepo(t)
		toyGenerated(t, root)
		gen := filepath.Join(root, "lessons/12/checks/generated.txt")
		data, err := os.ReadFile(gen)
		if err != nil {
			t.Fatal(err)
		}
		testenv.Write(t, gen, strings.Replace(string(data), "gen_valid_const_inc_2: required", "gen_valid_const_inc_9: required", 1))
		if _, err := Generated(root, course.Lesson{Number: 12}); err == nil || !strings.Contains(err.Error(), "go run ./lab verify --killset E12") {
			t.Fatalf("err = %v, want one naming the command that remakes generated.txt", err)
		}
	})
}

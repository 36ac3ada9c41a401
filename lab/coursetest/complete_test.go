package coursetest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/testenv"
)

// Adding a lesson touches several places; this test says which one was
// forgotten. Every lesson of the manifest must have its page, checkpoint,
// starter, hint and reference answer; at least two required checks (mutants,
// or measured properties and broken variants); its scripts; a row in the
// README's lesson map; and the root go.mod's replace of its checkpoint.
// CONTRIBUTING.md ("Add a lesson") lists the same parts.
func TestEveryLessonIsComplete(t *testing.T) {
	root := testenv.Root(t)
	readme := read(t, root, "README.md")
	gomod := read(t, root, "go.mod")
	for _, l := range lessons(t, root) {
		t.Run(l.Exercise(), func(t *testing.T) {
			for what, p := range map[string]string{
				"lesson page": l.Page(), "checkpoint": l.Checkpoint() + "/go.mod", "hint": l.Hint(),
			} {
				if !exists(root, p) {
					t.Errorf("%s: no %s (%s)", l.Exercise(), what, p)
				}
			}
			for what, dir := range map[string]string{"starter": l.Starter(), "reference answer": l.Reference()} {
				if !hasGo(root, dir) {
					t.Errorf("%s: the %s %s has no .go file", l.Exercise(), what, dir)
				}
			}
			checks, err := check.Load(root, l.Checks(), l.Exercise())
			if err != nil {
				t.Fatalf("%s: %v", l.Exercise(), err)
			}
			required := 0
			for _, v := range checks {
				if v.Required && v.Kind != report.Wheat {
					required++
				}
			}
			switch l.Method {
			case report.Mutants:
				if required < 2 {
					t.Errorf("%s: %d required mutants in %s; a lesson needs at least 2", l.Exercise(), required, l.Checks())
				}
				if exists(root, l.Dir()+"/grader") {
					t.Errorf("%s: graded with mutants, yet it has a grader of its own (%s/grader), which lab check would run instead", l.Exercise(), l.Dir())
				}
			case report.Measured:
				if required < 2 {
					t.Errorf("%s: %d broken variants in %s; the grader must be proven against at least 2", l.Exercise(), required, l.Checks())
				}
				if !hasGo(root, l.Dir()+"/grader") {
					t.Errorf("%s: a measured lesson brings its own grader, a main package in %s/grader: there is none", l.Exercise(), l.Dir())
				}
			default:
				t.Errorf("%s: unknown grading method %q", l.Exercise(), l.Method)
			}
			ex := strings.ToLower(l.Exercise())
			cp := filepath.Base(l.Checkpoint())
			for _, s := range []string{ex + "_answer", ex + "_starter", "checkpoint_" + cp} {
				if !exists(root, "testscripts/"+s+".txtar") {
					t.Errorf("%s: no script testscripts/%s.txtar", l.Exercise(), s)
				}
			}
			row := regexp.MustCompile(`(?m)^\| \[` + regexp.QuoteMeta(strings.TrimPrefix(cp, "0")) + `\b[^\n]*\]\(` + regexp.QuoteMeta(l.Page()) + `\)`)
			if !row.MatchString(readme) {
				t.Errorf("%s: README.md's lesson map has no row linking %s", l.Exercise(), l.Page())
			}
			replace := "replace quoteflowlab.dev/" + l.Checkpoint() + " => ./" + l.Checkpoint()
			if !strings.Contains(gomod, replace) {
				t.Errorf("%s: the root go.mod lacks %q", l.Exercise(), replace)
			}
		})
	}
}

// Every mutant, wheat and broken variant applies to its file as it is now:
// an edit whose text is gone names its check and its lesson here, in
// `go test ./...`, before any student meets it.
func TestEveryCheckApplies(t *testing.T) {
	root := testenv.Root(t)
	for _, l := range lessons(t, root) {
		checks, err := check.Load(root, l.Checks(), l.Exercise())
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range checks {
			edited, err := v.Apply(root)
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			orig := read(t, root, v.File)
			if string(edited) == orig {
				t.Errorf("%s changes nothing in %s", v.ID(), v.File)
			}
			want := l.Checkpoint() + "/"
			if v.Kind == report.Broken {
				want = l.Reference() + "/"
			}
			if !strings.HasPrefix(v.File, want) {
				t.Errorf("%s edits %s, outside %s", v.ID(), v.File, want)
			}
			if changed, _ := v.BaseChanged(root); changed {
				t.Logf("note: %s: %s changed since the edit was written (base:); it still applies — read it once against the new file and update base:", v.ID(), v.File)
			}
		}
	}
}

// eachMutantLesson runs test on each mutant-graded lesson, as a subtest
// named after its exercise.
func eachMutantLesson(t *testing.T, test func(t *testing.T, root string, l course.Lesson)) {
	root := testenv.Root(t)
	for _, l := range lessons(t, root) {
		if l.Method == report.Mutants {
			t.Run(l.Exercise(), func(t *testing.T) { test(t, root, l) })
		}
	}
}

// lessons are the course's lessons under root.
func lessons(t *testing.T, root string) []course.Lesson {
	t.Helper()
	ls, err := course.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func read(t *testing.T, root, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func exists(root, p string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
	return err == nil
}

func hasGo(root, dir string) bool {
	found := false
	filepath.WalkDir(filepath.Join(root, filepath.FromSlash(dir)), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
			found = true
		}
		return nil
	})
	return found
}

package check

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/report"
)

// A lesson's checks load in one place: the builds an answer runs on
// (mutants and wheats), the broken tools a grader must reject, or all; --only
// and --variant narrow them to one by name; an unknown name lists the known.
func TestOfAndFindPickALessonsChecks(t *testing.T) {
	root := t.TempDir()
	l := course.Lesson{Number: 15, Method: report.Measured}
	dir := filepath.Join(root, filepath.FromSlash(l.Checks()))
	os.MkdirAll(dir, 0o755)
	def := func(kind string) string {
		return "kind: " + kind + "\nstory: s\nfile: f.go\nbase: 00\n-- replace --\na\n-- with --\nb\n"
	}
	for name, kind := range map[string]string{"m1": "mutant\nrequired: true", "m2": "mutant\nrequired: false", "w": "wheat", "b1": "broken\nrequired: true\nexpect: p", "b2": "broken\nrequired: true\nexpect: q"} {
		os.WriteFile(filepath.Join(dir, name+".txtar"), []byte(def(kind)), 0o644)
	}
	for _, tc := range []struct {
		which Which
		only  string
		want  []string
	}{
		{All, "", []string{"b1", "b2", "m1", "m2", "w"}},
		{Builds, "", []string{"m1", "m2", "w"}},
		{Tools, "", []string{"b1", "b2"}},
		{Builds, "m2", []string{"m2"}},
		{Builds, "b1", []string{}},
		{Tools, "nope", []string{}},
	} {
		cs, err := Of(root, l, tc.which, tc.only)
		if got := Names(cs); err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("Of(%d, %q) = %q, %v; want %q", tc.which, tc.only, got, err, tc.want)
		}
	}
	if c, err := Find(root, l, Tools, "b2"); err != nil || c.Expect != "q" {
		t.Fatalf("Find b2: %+v, %v", c, err)
	}
	_, err := Find(root, l, Tools, "m1")
	var unknown *UnknownError
	if !errors.As(err, &unknown) || !slices.Equal(unknown.Known, []string{"b1", "b2"}) || err.Error() != `no such broken variant "m1" (known: b1, b2)` {
		t.Fatalf("Find m1 among the tools: %v", err)
	}
}

package course

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestFindRootWalksPastNestedModules(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "go.mod"), "// the course\nmodule \"quoteflowlab.dev\" // root\n\ngo 1.26\n")
	write(t, filepath.Join(root, "checkpoints/13/go.mod"), "module quoteflowlab.dev/checkpoints/13\n")
	deep := filepath.Join(root, "checkpoints/13/quoteflow")
	os.MkdirAll(deep, 0o755)
	got, err := FindRoot(deep)
	if err != nil || got != root {
		t.Fatalf("FindRoot(%s) = %q, %v; want %q", deep, got, err, root)
	}
}

func TestFindRootOutsideTheRepo(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "go.mod"), "module example.com/other\n")
	if _, err := FindRoot(dir); !errors.Is(err, ErrNotInRepo) {
		t.Fatalf("err = %v, want ErrNotInRepo", err)
	}
}

func TestParseExercise(t *testing.T) {
	for _, in := range []string{"E14", "e14", "14"} {
		if l, err := ParseExercise(in); err != nil || l.Number != 14 {
			t.Errorf("ParseExercise(%q) = %d, %v", in, l.Number, err)
		}
	}
	for _, in := range []string{"E11", "E16", "x", ""} {
		if _, err := ParseExercise(in); !errors.Is(err, ErrUnknownExercise) {
			t.Errorf("ParseExercise(%q): err = %v, want ErrUnknownExercise", in, err)
		}
	}
	l, _ := ParseExercise("E14")
	if l.Starter() != "lessons/14/exercise" || l.Reference() != "lessons/15/answer_previous" || l.Checkpoint() != "checkpoints/14" {
		t.Errorf("paths: %s %s %s", l.Starter(), l.Reference(), l.Checkpoint())
	}
}

func TestHeadingDropsTheLessonLabel(t *testing.T) {
	for md, want := range map[string]string{
		"# Lesson 14: Retry once\n":    "Retry once",
		"intro\n# 14 — Retry once\n":   "Retry once",
		"# Retry once\n":               "Retry once",
		"# 140 retries\n":              "140 retries",
		"# Lesson 14\n":                "Lesson 14",
		"no heading\n## Sub heading\n": "",
	} {
		if got := heading([]byte(md), 14); got != want {
			t.Errorf("heading(%q) = %q, want %q", md, got, want)
		}
	}
}

func TestRecordThenLoadState(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	st, err := LoadState(dir)
	if err != nil || len(st.Exercises) != 0 {
		t.Fatalf("missing state: %+v, %v", st, err)
	}
	at := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	if err := Record(dir, "E13", Progress{Status: Failing, CheckedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := Record(dir, "E12", Progress{Status: Passed, CheckedAt: at}); err != nil {
		t.Fatal(err)
	}
	st, err = LoadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Exercises["E12"].Status != Passed || st.Exercises["E13"].Status != Failing || !st.Exercises["E13"].CheckedAt.Equal(at) {
		t.Fatalf("state %+v", st)
	}
	if s := Status("").String(); s != "not started" {
		t.Errorf("zero status reads %q", s)
	}
}

func TestStateDirFollowsTheEnvironment(t *testing.T) {
	t.Setenv(StateDirEnv, "")
	if got := StateDir("/repo"); got != filepath.Join("/repo", ".lab") {
		t.Errorf("default StateDir = %q", got)
	}
	t.Setenv(StateDirEnv, "/elsewhere")
	if got := StateDir("/repo"); got != "/elsewhere" {
		t.Errorf("StateDir with %s = %q", StateDirEnv, got)
	}
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

package course

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"quoteflowlab.dev/kit/report"
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

// toyCourse is a course under a temporary root with lessons 12, 14 and 100
// declared, a lesson 20 with no exercise and a folder that is no lesson.
func toyCourse(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, n := range []string{"12", "14", "100"} {
		write(t, filepath.Join(root, "lessons", n, "lesson.toml"), "title = \"Lesson "+n+"\"\ntask = \"do "+n+"\"\nmethod = \"mutants\"\n")
	}
	write(t, filepath.Join(root, "lessons/14/lesson.toml"), "title = \"Retry\"\ntask = \"retry once\"\nmethod = \"measured\"\nredis = true\n")
	write(t, filepath.Join(root, "lessons/14/grader/main.go"), "package main\n")
	write(t, filepath.Join(root, "lessons/20/README.md"), "# 20\n")
	write(t, filepath.Join(root, "lessons/notes/lesson.toml"), "not a lesson")
	return root
}

func TestLoadFindsTheLessonsByTheirFolders(t *testing.T) {
	ls, err := Load(toyCourse(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range ls {
		got = append(got, fmt.Sprintf("%d %s/%s/%s/%v", l.Number, l.Title, l.Task, l.Method, l.Redis))
	}
	want := []string{"12 Lesson 12/do 12/mutants/false", "14 Retry/retry once/measured/true", "100 Lesson 100/do 100/mutants/false"}
	if !slices.Equal(got, want) {
		t.Fatalf("Load = %q\nwant %q", got, want)
	}
}

func TestFind(t *testing.T) {
	root := toyCourse(t)
	for _, in := range []string{"E14", "e14", "14"} {
		if l, err := Find(root, in); err != nil || l.Number != 14 {
			t.Errorf("Find(%q) = %d, %v", in, l.Number, err)
		}
	}
	for _, in := range []string{"E11", "E20", "x", ""} {
		_, err := Find(root, in)
		if !errors.Is(err, ErrUnknownExercise) {
			t.Errorf("Find(%q): err = %v, want ErrUnknownExercise", in, err)
		} else if !strings.Contains(err.Error(), "(the exercises are E12, E14, E100)") {
			t.Errorf("Find(%q): %v; want the exercises listed in order", in, err)
		}
	}
	l, _ := Find(root, "E14")
	if l.Starter() != "lessons/14/exercise" || l.Reference() != "lessons/15/answer_previous" || l.Checkpoint() != "checkpoints/14" {
		t.Errorf("paths: %s %s %s", l.Starter(), l.Reference(), l.Checkpoint())
	}
}

// A lesson.toml lab cannot use is an error that names it and says what is
// wrong; so is an exercise with no lesson.toml.
func TestLoadNamesTheFileOfABadManifest(t *testing.T) {
	for _, tc := range []struct{ name, file, body, want string }{
		{"no task", "lessons/14/lesson.toml", "title = \"t\"\nmethod = \"mutants\"\n", `lessons/14/lesson.toml: missing or empty "task"`},
		{"empty title", "lessons/14/lesson.toml", "title = \" \"\ntask = \"x\"\nmethod = \"mutants\"\n", `lessons/14/lesson.toml: missing or empty "title"`},
		{"no method", "lessons/14/lesson.toml", "title = \"t\"\ntask = \"x\"\n", `lessons/14/lesson.toml: missing or empty "method"`},
		{"unknown method", "lessons/14/lesson.toml", "title = \"t\"\ntask = \"x\"\nmethod = \"tests\"\n", `lessons/14/lesson.toml: method "tests": want "mutants" or "measured"`},
		{"unknown key", "lessons/14/lesson.toml", "title = \"t\"\ntask = \"x\"\nmethod = \"mutants\"\nredis_url = \"x\"\n", `lessons/14/lesson.toml: unknown key "redis_url"`},
		{"wrong type", "lessons/14/lesson.toml", "title = \"t\"\ntask = \"x\"\nmethod = \"mutants\"\nredis = \"yes\"\n", `lessons/14/lesson.toml: toml: line 4`},
		{"not toml", "lessons/14/lesson.toml", "title: t\n", `lessons/14/lesson.toml: toml: line 1`},
		{"no lesson.toml", "lessons/14/exercise/main.go", "package main\n", "lessons/14/exercise exists but lessons/14/lesson.toml does not"},
		{"measured, no grader", "lessons/14/lesson.toml", "title = \"t\"\ntask = \"x\"\nmethod = \"measured\"\n", `lessons/14/lesson.toml: method "measured" needs the lesson's own grader program, lessons/14/grader`},
		{"a grader, mutants", "lessons/12/grader/main.go", "package main\n", `lessons/12/lesson.toml: lessons/12/grader is the lesson's own grader: its method is "measured", not "mutants"`},
		{"number spelt oddly", "lessons/014/lesson.toml", "title = \"t\"\ntask = \"x\"\nmethod = \"mutants\"\n", "lessons/014/lesson.toml: the folder's name must be the lesson's number as is, lessons/14"},
	} {
		root := t.TempDir()
		write(t, filepath.Join(root, "lessons/12/lesson.toml"), "title = \"t\"\ntask = \"x\"\nmethod = \"mutants\"\n")
		write(t, filepath.Join(root, filepath.FromSlash(tc.file)), tc.body)
		if ls, err := Load(root); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Load = %d lessons, %v; want an error with %q", tc.name, len(ls), err, tc.want)
		}
		if _, err := Find(root, "E12"); err == nil || errors.Is(err, ErrUnknownExercise) {
			t.Errorf("%s: Find = %v; want the manifest's error", tc.name, err)
		}
	}
}

// The course itself: its first exercise is E12, E15 is measured, E17 runs
// with Redis and E14 without.
func TestTheCourseLoads(t *testing.T) {
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) == 0 || ls[0].Exercise() != "E12" {
		t.Fatalf("lessons %v, want E12 first", ls)
	}
	for name, want := range map[string]string{"E14": "mutants false", "E15": "measured false", "E17": "mutants true"} {
		l, err := Find(root, name)
		if got := fmt.Sprintf("%s %v", l.Method, l.Redis); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
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
	st, warns, err := LoadState(dir)
	if err != nil || len(st.Exercises) != 0 || len(warns) != 0 {
		t.Fatalf("missing state: %+v, %v, %v", st, warns, err)
	}
	at := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	mustRecord(t, dir, "E13", Progress{Status: report.Failed, CheckedAt: at})
	mustRecord(t, dir, "E12", Progress{Status: report.Passed, CheckedAt: at})
	st = mustLoad(t, dir)
	if st.Exercises["E12"].Status != report.Passed || st.Exercises["E13"].Status != report.Failed || !st.Exercises["E13"].CheckedAt.Equal(at) {
		t.Fatalf("state %+v", st)
	}
}

// A state file written when the status said "failing" reads as a failed
// verdict: a student's progress survives the rename.
func TestOldFailingStatusReadsAsFailed(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "state.json"), `{"exercises": {"E12": {"status": "failing", "checked_at": "2026-11-30T07:00:00Z"}}}`)
	if st := mustLoad(t, dir); st.Exercises["E12"].Status != report.Failed {
		t.Fatalf("E12: %+v; want failed", st.Exercises["E12"])
	}
}

// One bad entry (here a timestamp that is not one) must not cost the others:
// the passed E13 survives, the bad E12 is written back as it was, and the
// warning names it.
func TestABadEntryLosesNothing(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "state.json"), `{"exercises": {
		"E12": {"status": "failing", "checked_at": "yesterday-ish"},
		"E13": {"status": "passed", "checked_at": "2026-11-30T07:00:00Z", "summary": "all caught"}}}`)
	st, warns, err := LoadState(dir)
	if err != nil || len(warns) != 1 || !strings.Contains(warns[0], "E12") {
		t.Fatalf("LoadState: warnings %q, err %v; want one warning naming E12", warns, err)
	}
	if st.Exercises["E13"].Status != report.Passed {
		t.Fatalf("E13 lost: %+v", st.Exercises)
	}
	mustRecord(t, dir, "E14", Progress{Status: report.Failed, CheckedAt: time.Now()})
	data, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	if !strings.Contains(string(data), "yesterday-ish") || !strings.Contains(string(data), "all caught") {
		t.Fatalf("rewriting lost an entry:\n%s", data)
	}
}

func TestAFileThatIsNotJSONIsKeptAside(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "state.json"), `{"exercises": {"E13": {"status": "passed"`)
	_, warns, err := LoadState(dir)
	if err != nil || len(warns) != 1 {
		t.Fatalf("warnings %q, err %v", warns, err)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "state.json.bad")); err != nil || !strings.Contains(string(data), "E13") {
		t.Fatalf("state.json.bad: %q, %v", data, err)
	}
}

func TestAPassIsNeverTakenBack(t *testing.T) {
	dir := t.TempDir()
	first := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	mustRecord(t, dir, "E14", Progress{Status: report.Passed, CheckedAt: first})
	mustRecord(t, dir, "E14", Progress{Status: report.Failed, CheckedAt: first.Add(time.Hour)})
	p := mustLoad(t, dir).Exercises["E14"]
	if p.Status != report.Failed || p.PassedAt == nil || !p.PassedAt.Equal(first) {
		t.Fatalf("after a failing re-check: %+v; want failing with passed_at %v", p, first)
	}
}

func TestRecordLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	for range 5 {
		mustRecord(t, dir, "E12", Progress{Status: report.Failed, CheckedAt: time.Now()})
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files in the state dir: %v", entries)
	}
}

func mustRecord(t *testing.T, dir, ex string, p Progress) {
	t.Helper()
	if _, err := Record(dir, ex, p); err != nil {
		t.Fatal(err)
	}
}

func mustLoad(t *testing.T, dir string) State {
	t.Helper()
	st, warns, err := LoadState(dir)
	if err != nil || len(warns) > 0 {
		t.Fatalf("LoadState: %v %v", warns, err)
	}
	return st
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

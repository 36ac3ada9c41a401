package budget

import (
	"os"
	"path/filepath"
	"testing"
)

// Tools outside the course are cached by what go build reads of them, so
// the same module in a new folder finds its binaries (and a changed one
// does not); tools in the course by their path.
func TestToolsCacheNameIsTheContentOutsideTheCourse(t *testing.T) {
	t.Parallel()
	module := func(extra map[string]string) string {
		dir := t.TempDir()
		files := map[string]string{
			"go.mod":        "module mine\n\ngo 1.26\n",
			"call/main.go":  "package main\n\nfunc main() {}\n",
			"retry/main.go": "package main\n\nfunc main() {}\n",
			"PLAN.md":       "a plan",
		}
		for k, v := range extra {
			files[k] = v
		}
		for name, body := range files {
			if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	a, b := toolsCacheName(module(nil)), toolsCacheName(module(nil))
	if a != b || len(a) < len("external_")+16 {
		t.Errorf("one module in two folders: %q and %q, want one content name", a, b)
	}
	for what, extra := range map[string]map[string]string{
		"an edited tool":               {"retry/main.go": "package main\n\nfunc main() { println() }\n"},
		"a new package":                {"probe/main.go": "package main\n\nfunc main() {}\n"},
		"another module path":          {"go.mod": "module yours\n\ngo 1.26\n"},
		"a tool moved to a new folder": {"call/main.go": "", "call2/main.go": "package main\n\nfunc main() {}\n"},
	} {
		if got := toolsCacheName(module(extra)); got == a {
			t.Errorf("%s: same name %q as the module before", what, got)
		}
	}
	// What go build does not read does not matter.
	if got := toolsCacheName(module(map[string]string{"PLAN.md": "another plan", "testdata/x.go": "junk"})); got != a {
		t.Errorf("a changed plan and testdata: %q, want %q", got, a)
	}
	if got := toolsCacheName("lessons/16/answer_previous"); got != "lessons_16_answer_previous" {
		t.Errorf("an answer in the course: %q", got)
	}
}

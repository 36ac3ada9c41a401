package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Usage errors exit 2 with a message on stderr and nothing on stdout; -h
// exits 0. None of these needs a build.
func TestHarnessExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args   string
		code   int
		stderr string
	}{
		{"check", 2, "want exactly one exercise"},
		{"check E99", 2, `unknown exercise "E99"`},
		{"check --bogus E12", 2, "flag provided but not defined: -bogus"},
		{"check E12 E13", 2, "want exactly one exercise"},
		{"check E12 --timeout 0s", 2, "--timeout must be positive"},
		{"check E12 --answer /", 2, "inside the course's root module"},
		{"check -h", 0, "usage: lab check ENN"},
		{"hint", 2, "want exactly one exercise"},
		{"hint E11", 2, "unknown exercise"},
		{"diff 12", 2, "want two checkpoint numbers"},
		{"diff 12 99", 2, `no checkpoint "99"`},
		{"list extra", 2, "takes no arguments"},
		{"verify --bogus", 2, "flag provided but not defined"},
		{"verify no-such-item", 2, "no item matches no-such-item"},
	} {
		var stdout, stderr strings.Builder
		code := Main(strings.Fields(tc.args), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("lab %s: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), tc.code, tc.stderr)
		}
		if stdout.Len() != 0 {
			t.Errorf("lab %s: wrote to stdout: %q", tc.args, stdout.String())
		}
	}
}

func TestParseArgsTakesFlagsAnywhere(t *testing.T) {
	fs := newFlags("check", "", &strings.Builder{})
	asJSON := fs.Bool("json", false, "")
	answer := fs.String("answer", "", "")
	pos, _, ok := parseArgs(fs, []string{"--json", "E14", "--answer", "x", "--", "-y"})
	if !ok || !*asJSON || *answer != "x" || strings.Join(pos, " ") != "E14 -y" {
		t.Fatalf("got %v %v %q %v", pos, *asJSON, *answer, ok)
	}
}

func TestDiffTreesShowsAddedRemovedAndChangedFiles(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"a/go.mod":         "module a\n",
		"a/x/same.go":      "package x\n",
		"a/x/changed.go":   "package x\n\nconst n = 1\n",
		"a/x/gone.go":      "package x\n",
		"a/x/notes.txt":    "ignored\n",
		"b/go.mod":         "module b\n",
		"b/x/same.go":      "package x\n",
		"b/x/changed.go":   "package x\n\nconst n = 2\n",
		"b/x/new.go":       "package x\n",
		"b/README.md":      "# b\n",
		"b/x/.hidden/h.go": "package h\n",
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	out, err := diffTrees(root, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{
		"# a -> b: 2 changed, 2 added, 1 removed\n",
		"--- a/x/changed.go\n+++ b/x/changed.go\n",
		"-const n = 1\n+const n = 2\n",
		"--- /dev/null\n+++ b/x/new.go\n",
		"--- /dev/null\n+++ b/README.md\n",
		"--- a/x/gone.go\n+++ /dev/null\n",
		"-module a\n+module b\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"same.go", "notes.txt", "h.go"} {
		if strings.Contains(got, bad) {
			t.Errorf("diff mentions %s:\n%s", bad, got)
		}
	}
}

func TestFailingTestsNamesTopLevelFailuresAndHangs(t *testing.T) {
	out := "--- FAIL: TestA (0.00s)\n    --- FAIL: TestA/sub (0.00s)\n--- FAIL: TestB (0.01s)\nFAIL\n"
	if got := failingTests(out); got != "TestA, TestB" {
		t.Errorf("failingTests = %q", got)
	}
	hang := "panic: test timed out after 60s\n\trunning tests:\n\t\tTestSlow (1m0s)\n\ngoroutine 1 [running]:\n"
	if got := failingTests(hang); got != "TestSlow (hung until -timeout 60s)" {
		t.Errorf("failingTests(hang) = %q", got)
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"quoteflowlab.dev/lab/internal/course"
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
		{"stats --provider notaurl", 2, `--provider "notaurl" is not a base URL`},
		{"reset --provider 127.0.0.1:9101", 2, "is not a base URL like http://127.0.0.1:9101"},
		{"stats extra", 2, "usage: lab stats [--provider URL]"},
		{"check E14 --answer lessons/14/no-such-dir", 2, "no such directory"},
		{"check E14 --answer ../../lessons", 2, "answer lessons has no .go files: give the directory of your main package, like lessons/14/exercise"},
		{"check E14 --variant no_floor", 2, "--variant is for E15 only"},
		{"check E15 --variant nope --answer ../../lessons/16/answer_previous", 2, `unknown variant "nope" (known: full_budget_read, `},
		{"check E15 --variant ../E15 --answer ../../lessons/16/answer_previous", 2, `unknown variant "../E15"`},
		{"check E15 --variant no_floor", 2, "lessons/15/exercise/deadline/main.go is not that file: add --answer lessons/16/answer_previous"},
		{"check -h", 0, "--variant NAME"},
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

// lab verify proves the E15 grader too: it has an item that runs the
// testscripts named e15_variant_*, there are such scripts, and the test
// function its -run pattern selects exists (a rename of either would
// otherwise make the item run no script at all).
func TestVerifyRunsTheE15GraderBrokenVariants(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := course.FindRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range verifyItems(root, false) {
		if strings.HasPrefix(it.name, "E15 grader: ") {
			found = true
		}
	}
	if !found {
		t.Errorf("lab verify has no E15 grader item")
	}
	scripts, err := filepath.Glob(filepath.Join(root, "testscripts", variantScripts+"*.txtar"))
	if err != nil || len(scripts) == 0 {
		t.Errorf("no testscripts/%s*.txtar: lab verify's E15 grader item would run no script (%v)", variantScripts, err)
	}
	src, err := os.ReadFile(filepath.Join(root, "testscripts", "script_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "func TestScripts(t *testing.T)") {
		t.Errorf("testscripts/script_test.go has no func TestScripts: lab verify's E15 grader item would run no script")
	}
}

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/testenv"
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
		{"check E12 --answer /", 2, "answer / has no .go files"},
		{"check E12 --answer ../../checkpoints/12/quoteflow", 2, "belongs to the module in"},
		{"check E12 --repeat 0", 2, "--repeat must be between 1 and 100"},
		{"check E15 --repeat 3", 2, "--repeat and --separate are for exercises checked with mutants"},
		{"check E15 --answer /", 2, "is outside the repository and is not a module of its own"},
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
		{"check E14 --variant no_floor", 2, "--variant is for measured exercises (E15)"},
		{"check E15 --variant nope --answer ../../lessons/16/answer_previous", 2, `no such broken variant "nope" (known: `},
		{"check E15 --variant ../E15 --answer ../../lessons/16/answer_previous", 2, `no such broken variant "../E15"`},
		{"check E15 --variant no_floor", 2, "a file of the reference answer: add --answer lessons/16/answer_previous"},
		{"check -h", 0, "-variant NAME"},
	} {
		usageExits(t, tc.args, tc.code, tc.stderr)
	}
}

// usageExits runs lab with args and wants the exit code, each of want in
// stderr and nothing on stdout; it returns stderr.
func usageExits(t *testing.T, args string, code int, want ...string) string {
	t.Helper()
	var stdout, stderr strings.Builder
	if got := Main(strings.Fields(args), &stdout, &stderr); got != code {
		t.Errorf("lab %s: exit %d, want %d; stderr %q", args, got, code, stderr.String())
	}
	for _, w := range want {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("lab %s: stderr %q, want %q", args, stderr.String(), w)
		}
	}
	if stdout.Len() != 0 {
		t.Errorf("lab %s: wrote to stdout: %q", args, stdout.String())
	}
	return stderr.String()
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

// lab verify reads go test -json: a failing script is named with its own
// output, not the tail of the run; passing and skipped ones are counted.
func TestVerifyGroupsScriptResults(t *testing.T) {
	events := strings.Join([]string{
		`{"Action":"run","Package":"quoteflowlab.dev/testscripts","Test":"TestScripts/e14_answer"}`,
		`{"Action":"output","Package":"quoteflowlab.dev/testscripts","Test":"TestScripts/e14_answer","Output":"> exec lab check E14\n"}`,
		`{"Action":"pass","Package":"quoteflowlab.dev/testscripts","Test":"TestScripts/e14_answer"}`,
		`{"Action":"output","Package":"quoteflowlab.dev/testscripts","Test":"TestScripts/e14_starter","Output":"FAIL: testscripts/e14_starter.txtar:5: no match for verdict\n"}`,
		`{"Action":"fail","Package":"quoteflowlab.dev/testscripts","Test":"TestScripts/e14_starter"}`,
		`{"Action":"output","Package":"quoteflowlab.dev/testscripts","Test":"TestScripts/e13_answer","Output":"passing output of another exercise\n"}`,
		`{"Action":"pass","Package":"quoteflowlab.dev/testscripts","Test":"TestScripts/e13_answer"}`,
		`{"Action":"fail","Package":"quoteflowlab.dev/testscripts"}`,
	}, "\n")
	run := readTestEvents([]byte(events))
	r := run.item(verifyItem{
		match: func(_, test string) bool { return strings.HasPrefix(test, "TestScripts/e14_") },
		want:  2,
	})
	if r.OK || !strings.Contains(r.Summary, "1 failed: TestScripts/e14_starter") {
		t.Fatalf("summary %q", r.Summary)
	}
	if !strings.Contains(r.Detail, "no match for verdict") || strings.Contains(r.Detail, "another exercise") {
		t.Errorf("detail must be the failing script's own output:\n%s", r.Detail)
	}
	ok := run.item(verifyItem{match: func(_, test string) bool { return test == "TestScripts/e13_answer" }, want: 1})
	if !ok.OK || !strings.Contains(ok.Summary, "1 scripts passed: e13_answer") {
		t.Errorf("e13 group: %+v", ok)
	}
}

// Every script group lab verify reports matches at least one script, so
// a rename cannot make an item silently run nothing.
func TestEveryVerifyScriptGroupHasScripts(t *testing.T) {
	root := testenv.Root(t)
	scripts := scriptNames(root)
	lessons, err := course.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range verifyItems(root, lessons) {
		if it.want == 0 || it.run != nil {
			continue
		}
		n := 0
		for _, s := range scripts {
			if it.match("quoteflowlab.dev/testscripts", "TestScripts/"+s) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("verify item %q matches no script in testscripts/", it.name)
		}
	}
	src, err := os.ReadFile(filepath.Join(root, "testscripts", "script_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "func TestScripts(t *testing.T)") {
		t.Errorf("testscripts/script_test.go has no func TestScripts: lab verify's script items would run nothing")
	}
}

// The item of a lesson's own grader passes only when every broken check of
// the lesson has a passing case among the grader's tests (a case named
// after it), so a new broken check the grader's tests never grade fails it.
func TestVerifyGraderItemWantsACasePerBrokenCheck(t *testing.T) {
	root := testenv.Root(t)
	l, err := course.Find(root, "E15")
	if err != nil {
		t.Fatal(err)
	}
	broken, err := check.Of(root, l, check.Tools, "")
	if err != nil || len(broken) < 2 {
		t.Fatalf("%d broken checks (%v)", len(broken), err)
	}
	const pkg = "quoteflowlab.dev/lessons/15/grader/budget"
	events := func(skip string) *testRun {
		lines := []string{`{"Action":"pass","Package":"` + pkg + `","Test":"TestReferencePasses"}`}
		for _, b := range broken {
			if b.Name != skip {
				lines = append(lines, `{"Action":"pass","Package":"`+pkg+`","Test":"TestRejects/`+b.Name+`"}`)
			}
		}
		lines = append(lines, `{"Action":"pass","Package":"`+pkg+`","Test":"TestRejects"}`, `{"Action":"pass","Package":"`+pkg+`"}`)
		return readTestEvents([]byte(strings.Join(lines, "\n")))
	}
	it := graderRun(root, l, "lessons/15/grader")
	if r := graderResult(root, l, it, events("")); !r.OK || !strings.Contains(r.Summary, fmt.Sprintf("a case for each of the %d broken checks", len(broken))) {
		t.Fatalf("every case passed: %+v", r)
	}
	skip := broken[1].Name
	if r := graderResult(root, l, it, events(skip)); r.OK || !strings.Contains(r.Summary, "no passing case for 1 of") || !strings.Contains(r.Summary, skip) {
		t.Fatalf("no case for %s, yet: %+v", skip, r)
	}
}

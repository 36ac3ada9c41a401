package measured

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/runner"
	"quoteflowlab.dev/lab/internal/variant"
)

// The grader's proof, that it rejects every broken variant of the reference
// answer (lessons/15/mutants/<name>.txtar, kind variant) for the property
// its bug breaks, is made by the testscripts testscripts/e15_variant_<name>.txtar,
// which run `lab check E15 --answer <reference> --variant <name>` (and by
// `lab verify`, which runs those scripts). Grading each variant here too
// would run the same proof twice in `go test ./...`, so this test only
// checks that every variant can be graded meaningfully: its edit applies to
// the current reference file, it expects a real required property, it
// changes something, it compiles, and it has its script.
func TestBrokenVariantsAreWellFormed(t *testing.T) {
	root := repoRoot(t)
	l := e15()
	variants, err := Variants(root, l)
	if err != nil {
		t.Fatal(err)
	}
	if len(variants) == 0 {
		t.Fatalf("no broken variants in %s", l.Checks())
	}
	names := map[string]bool{}
	for _, v := range variants {
		names[v.Name] = true
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			if !IsRequiredProperty(v.Expect) {
				t.Errorf("expects %q, which is not a required property of the grader", v.Expect)
			}
			if !strings.HasPrefix(v.File, l.Reference()+"/") {
				t.Errorf("edits %s, which is not a file of the reference answer %s", v.File, l.Reference())
			}
			broken, err := v.Apply(root)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(v.File, ".json") && !json.Valid(broken) {
				t.Errorf("%s is not valid JSON once edited: its bug must be in the numbers, so that the grader catches it by %s", v.File, v.Expect)
			}
			checkVariantScript(t, root, l, v)
			if strings.HasSuffix(v.File, ".go") {
				checkVariantBuilds(t, root, l, v)
			}
		})
	}
	scripts, err := filepath.Glob(filepath.Join(root, "testscripts", "e15_variant_*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scripts {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(s), "e15_variant_"), ".txtar")
		if !names[name] {
			t.Errorf("%s has no variant %s/%s.txtar", s, l.Checks(), name)
		}
	}
}

// checkVariantScript checks that v's testscript grades v and looks for its
// property among the failures.
func checkVariantScript(t *testing.T, root string, l course.Lesson, v variant.Variant) {
	t.Helper()
	path := filepath.Join(root, "testscripts", "e15_variant_"+v.Name+".txtar")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("no testscript proves that the grader rejects this variant: %v", err)
		return
	}
	src := string(data)
	run := regexp.MustCompile(`(?m)^! exec lab check E15 --answer ` + regexp.QuoteMeta(l.Reference()) + ` --variant ` + regexp.QuoteMeta(v.Name) + `$`)
	if !run.MatchString(src) {
		t.Errorf("%s does not run `! exec lab check E15 --answer %s --variant %s`", path, l.Reference(), v.Name)
	}
	if !strings.Contains(src, "+required +"+v.Expect+"$'") {
		t.Errorf("%s does not assert that %s is FAILED", path, v.Expect)
	}
}

// checkVariantBuilds builds the reference's packages with v swapped in: a
// variant must compile, so that the grader catches its bug by behaviour.
func checkVariantBuilds(t *testing.T, root string, l course.Lesson, v variant.Variant) {
	t.Helper()
	if testing.Short() {
		return
	}
	overlay, err := variant.WriteOverlay(root, t.TempDir(), v)
	if err != nil {
		t.Fatal(err)
	}
	// Several packages: go build compiles them all and writes nothing.
	res := runner.Run(context.Background(), runner.Cmd{Name: runner.GoCommand(), Args: []string{"build", "-overlay", overlay, "./" + l.Reference() + "/..."}, Dir: root})
	if !res.OK() {
		t.Errorf("does not compile with the reference: %v\n%s", res.Err, res.Output)
	}
}

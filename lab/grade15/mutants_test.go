package grade15

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The grader's proof, that it rejects every broken variant of the reference
// answer (testscripts/mutants/E15/<name>/) for the property its bug breaks,
// is made by the testscripts testscripts/e15_variant_<name>.txtar, which run
// `lab check E15 --answer lessons/16/answer_previous --variant <name>` (and
// by `lab verify`'s E15 grader item, which runs those scripts). Grading each
// variant here too would run the same proof twice in `go test ./...`, so
// this test only checks that every variant can be graded meaningfully:
// it is complete, expects a real required property, was made from the
// current reference file, differs from it, compiles, and has its script.
func TestBrokenVariantsAreWellFormed(t *testing.T) {
	root := repoRoot(t)
	ref := filepath.Join(root, filepath.FromSlash(ReferenceAnswer))
	variants, err := Variants(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(variants) == 0 {
		t.Fatalf("no broken variants in %s", VariantsDir)
	}
	names := map[string]bool{}
	for _, v := range variants {
		names[v.Name] = true
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			if !IsRequiredProperty(v.Expect) {
				t.Errorf("expects %q, which is not a required property of the grader", v.Expect)
			}
			if err := v.Fits(ref); err != nil {
				t.Fatalf("%v: remake it from the current file and update its base line (%s/README.md)", err, VariantsDir)
			}
			orig, err := os.ReadFile(filepath.Join(ref, filepath.FromSlash(v.Replaces)))
			if err != nil {
				t.Fatal(err)
			}
			broken, err := os.ReadFile(v.With)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(orig, broken) {
				t.Errorf("%s is the reference file itself: it has no bug", v.With)
			}
			if strings.HasSuffix(v.Replaces, ".json") && !json.Valid(broken) {
				t.Errorf("%s is not valid JSON: its bug must be in the numbers, so that the grader catches it by %s", v.With, v.Expect)
			}
			checkVariantScript(t, root, v)
			if strings.HasSuffix(v.Replaces, ".go") {
				checkVariantBuilds(t, root, v)
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
			t.Errorf("%s has no variant %s/%s", s, VariantsDir, name)
		}
	}
}

// checkVariantScript checks that v's testscript grades v and looks for its
// property among the failures.
func checkVariantScript(t *testing.T, root string, v Variant) {
	t.Helper()
	path := filepath.Join(root, "testscripts", "e15_variant_"+v.Name+".txtar")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("no testscript proves that the grader rejects this variant: %v", err)
		return
	}
	src := string(data)
	run := regexp.MustCompile(`(?m)^! exec lab check E15 --answer ` + regexp.QuoteMeta(ReferenceAnswer) + ` --variant ` + regexp.QuoteMeta(v.Name) + `$`)
	if !run.MatchString(src) {
		t.Errorf("%s does not run `! exec lab check E15 --answer %s --variant %s`", path, ReferenceAnswer, v.Name)
	}
	if !strings.Contains(src, "+required +"+v.Expect+"$'") {
		t.Errorf("%s does not assert that %s is FAILED", path, v.Expect)
	}
}

// checkVariantBuilds builds the reference's packages with v swapped in: a
// variant must compile, so that the grader catches its bug by behaviour.
func checkVariantBuilds(t *testing.T, root string, v Variant) {
	t.Helper()
	if testing.Short() {
		return
	}
	overlay := filepath.Join(t.TempDir(), "overlay.json")
	if err := v.WriteOverlay(filepath.Join(root, filepath.FromSlash(ReferenceAnswer)), overlay); err != nil {
		t.Fatal(err)
	}
	goCmd, err := goCommand()
	if err != nil {
		t.Fatal(err)
	}
	// Several packages: go build compiles them all and writes nothing.
	cmd := exec.Command(goCmd, "build", "-overlay", overlay, "./"+ReferenceAnswer+"/...")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("does not compile with the reference: %v\n%s", err, out)
	}
}

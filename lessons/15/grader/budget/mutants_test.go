package budget

import (
	"encoding/json"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/check"
)

// Every broken variant can be graded meaningfully: its edit applies to
// the current reference file, it expects a real required property, and it
// changes something (a JSON file stays valid JSON, so the grader catches
// its bug by the numbers). That the grader rejects each one for its
// property, and that each compiles, is TestGraderRejectsEveryBrokenVariant.
func TestBrokenVariantsAreWellFormed(t *testing.T) {
	root := repoRoot(t)
	l := e15(t)
	variants, err := check.Of(root, l, check.Tools, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(variants) == 0 {
		t.Fatalf("no broken variants in %s", l.Checks())
	}
	for _, v := range variants {
		t.Run(v.Name, func(t *testing.T) {
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
		})
	}
}

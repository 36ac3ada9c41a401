package mutant

import (
	"encoding/json"
	"errors"
	"go/format"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"quoteflowlab.dev/lab/internal/course"
)

const target = "package quoteflow\n\nconst maxAttempts = 2\n\nfunc f() int { return maxAttempts }\n"

func sample() Mutant {
	m := Mutant{
		Story: "a failing supplier is asked three times.", Required: true,
		Target: "checkpoints/14/quoteflow/retry.go",
		Edits:  []Edit{{Old: "const maxAttempts = 2\n", New: "const maxAttempts = 3 // MUTANT\n"}},
	}
	m.Base = Hash([]byte(target))
	m.Content, _ = m.Apply([]byte(target))
	return m
}

func TestFormatThenParseGivesTheSameMutant(t *testing.T) {
	m := sample()
	got, err := Parse(Format(m))
	if err != nil {
		t.Fatal(err)
	}
	if got.Story != m.Story || got.Required != m.Required || got.Base != m.Base || got.Target != m.Target ||
		string(got.Content) != string(m.Content) || len(got.Edits) != 1 || got.Edits[0] != m.Edits[0] {
		t.Fatalf("round trip changed the mutant:\n got %+v\nwant %+v", got, m)
	}
}

func TestParseRejectsBrokenDefinitions(t *testing.T) {
	for name, def := range map[string]string{
		"no story":           "required: true\n-- checkpoints/12/a.go --\nx\n",
		"no required":        "story: s.\n-- checkpoints/12/a.go --\nx\n",
		"unknown header":     "story: s.\nrequired: true\ncolour: red\n-- checkpoints/12/a.go --\nx\n",
		"two files":          "story: s.\nrequired: true\n-- checkpoints/12/a.go --\nx\n-- checkpoints/12/b.go --\ny\n",
		"no file":            "story: s.\nrequired: true\n",
		"outside checkpoint": "story: s.\nrequired: true\n-- lessons/12/exercise/main.go --\nx\n",
		"escaping path":      "story: s.\nrequired: true\n-- checkpoints/../go.mod --\nx\n",
		"replace alone":      "story: s.\nrequired: true\n-- replace --\na\n-- checkpoints/12/a.go --\nx\n",
		"with alone":         "story: s.\nrequired: true\n-- with --\na\n-- checkpoints/12/a.go --\nx\n",
	} {
		if _, err := Parse([]byte(def)); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
}

func TestApplyWantsEachEditToMatchExactlyOnce(t *testing.T) {
	m := sample()
	if _, err := m.Apply([]byte("package quoteflow\n")); err == nil || !strings.Contains(err.Error(), "not in") {
		t.Errorf("missing lines: err = %v", err)
	}
	if _, err := m.Apply([]byte(target + target)); err == nil || !strings.Contains(err.Error(), "occur 2 times") {
		t.Errorf("ambiguous lines: err = %v", err)
	}
}

func TestOverlayMapsTheAbsoluteCheckpointFileToTheReplacement(t *testing.T) {
	root := t.TempDir()
	m := sample()
	ov, err := m.WriteOverlay(root, filepath.Join(root, ".lab", "cache", "x"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(ov)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Replace map[string]string }
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(root, "checkpoints", "14", "quoteflow", "retry.go")
	repl, ok := doc.Replace[want]
	if len(doc.Replace) != 1 || !ok {
		t.Fatalf("overlay %s, want one entry for %s", data, want)
	}
	if got, _ := os.ReadFile(repl); string(got) != string(m.Content) {
		t.Errorf("replacement file holds %q, want the mutant", got)
	}
	if _, err := os.Stat(want); err == nil {
		t.Errorf("the checkpoint file was created; the overlay must not touch the tree")
	}
}

func TestCheckCurrentAndRemakeFollowTheCheckpoint(t *testing.T) {
	root := t.TempDir()
	m := sample()
	m.Exercise, m.Name, m.File = "E14", "three_attempts", filepath.Join(root, "def.txtar")
	file := filepath.Join(root, filepath.FromSlash(m.Target))
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte(target), 0o644)
	if err := m.CheckCurrent(root); err != nil {
		t.Fatalf("fresh mutant: %v", err)
	}

	// The checkpoint gains a comment: the mutant is stale until remade.
	os.WriteFile(file, []byte("// Package quoteflow quotes.\n"+target), 0o644)
	if err := m.CheckCurrent(root); !errors.Is(err, ErrStale) {
		t.Fatalf("after a checkpoint change: err = %v, want ErrStale", err)
	}
	if changed, err := m.Remake(root); err != nil || !changed {
		t.Fatalf("Remake = %v, %v", changed, err)
	}
	if err := m.CheckCurrent(root); err != nil {
		t.Fatalf("after Remake: %v", err)
	}
	if !strings.HasPrefix(string(m.Content), "// Package quoteflow quotes.\n") || !strings.Contains(string(m.Content), "maxAttempts = 3") {
		t.Errorf("remade content lost the change or the bug:\n%s", m.Content)
	}
	def, err := os.ReadFile(m.File)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := Parse(def); err != nil || string(back.Content) != string(m.Content) {
		t.Errorf("written definition does not parse back: %v", err)
	}
}

// The course's own definitions: every one parses, tells one sentence, and
// was made from the current version of its checkpoint file.
func TestCourseMutantsAreCurrent(t *testing.T) {
	root, err := course.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := LoadAll(root)
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]int{}
	for _, m := range ms {
		if err := m.CheckCurrent(root); err != nil {
			t.Error(err)
		}
		if src, err := format.Source(m.Content); err != nil || string(src) != string(m.Content) {
			t.Errorf("%s/%s: the replacement file is not gofmt-formatted Go (%v)", m.Exercise, m.Name, err)
		}
		if !strings.HasSuffix(m.Story, ".") || strings.Contains(strings.TrimSuffix(m.Story, "."), ". ") {
			t.Errorf("%s/%s: the story should be one sentence: %q", m.Exercise, m.Name, m.Story)
		}
		if !strings.HasPrefix(m.Target, "checkpoints/"+strings.TrimPrefix(m.Exercise, "E")+"/") {
			t.Errorf("%s/%s replaces %s, not a file of its exercise's checkpoint", m.Exercise, m.Name, m.Target)
		}
		if m.Required {
			required[m.Exercise]++
		}
	}
	for ex, want := range map[string]int{"E12": 2, "E13": 5, "E14": 3} {
		if required[ex] < want {
			t.Errorf("%s has %d required mutants, want at least %d (COURSE.md §6)", ex, required[ex], want)
		}
	}
}

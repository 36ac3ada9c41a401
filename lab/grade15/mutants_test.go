package grade15

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A mutant is one broken variant of the reference answer: one file replaced
// by a copy with one deliberate bug (testscripts/mutants/E15/<name>/).
type mutant struct {
	name     string
	replaces string // slash path inside the answer directory
	with     string // the broken copy, absolute
	expect   string // the property that must fail
	story    string
	base     string // SHA-256 of the reference file the mutant was made from
}

// loadMutants reads every testscripts/mutants/E15/*/mutant.txt.
func loadMutants(t *testing.T, root string) []mutant {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, "testscripts", "mutants", "E15", "*", "mutant.txt"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no E15 mutants found (%v)", err)
	}
	var out []mutant
	for _, path := range dirs {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		m := mutant{name: filepath.Base(filepath.Dir(path))}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			key, value, _ := strings.Cut(sc.Text(), ": ")
			switch key {
			case "replaces":
				m.replaces = value
			case "with":
				m.with = filepath.Join(filepath.Dir(path), value)
			case "expect":
				m.expect = value
			case "story":
				m.story = value
			case "base":
				m.base = value
			}
		}
		f.Close()
		if m.replaces == "" || m.with == "" || m.expect == "" || m.base == "" {
			t.Fatalf("%s: want replaces, with, expect and base lines", path)
		}
		out = append(out, m)
	}
	return out
}

// overlay writes a `go build -overlay` file that swaps m's file into the answer in dir.
func (m mutant) overlay(t *testing.T, dir string) string {
	t.Helper()
	target := filepath.Join(dir, filepath.FromSlash(m.replaces))
	cur, err := os.ReadFile(target)
	if err != nil {
		t.Fatalf("mutant %s replaces %s: %v", m.name, m.replaces, err)
	}
	if sum := sha256.Sum256(cur); hex.EncodeToString(sum[:]) != m.base {
		t.Fatalf("mutant %s was made from an older %s: remake it from the current file and update its base line", m.name, m.replaces)
	}
	data, err := json.Marshal(map[string]map[string]string{"Replace": {target: m.with}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "overlay.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Each broken variant of the reference must be rejected, and the property
// its bug breaks must be among the failures.
func TestBrokenVariantsAreRejected(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs every broken variant")
	}
	root := repoRoot(t)
	dir := filepath.Join(root, "lessons", "16", "answer_previous")
	for _, m := range loadMutants(t, root) {
		if !slices.ContainsFunc(specs, func(s spec) bool { return s.name == m.expect && s.required }) {
			t.Errorf("mutant %s expects %q, which is not a required property", m.name, m.expect)
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			r := grade(t, Options{Dir: dir, Overlay: m.overlay(t, dir)})
			for _, p := range r.Properties {
				if strings.HasPrefix(p.Name, "build_") && !p.OK {
					t.Fatalf("the broken variant must compile, so that its bug is caught by behaviour: %s", p.Detail)
				}
			}
			for _, p := range r.Properties {
				if p.Name == m.expect && p.OK && strings.HasPrefix(p.Detail, "skipped") {
					t.Skipf("%s cannot be graded on this system (%s), so this variant cannot be caught here", m.expect, p.Detail)
				}
			}
			if r.Passed {
				t.Fatalf("the grader passed a broken answer: %s", m.story)
			}
			var failed []string
			found := false
			for _, p := range r.Failed() {
				failed = append(failed, p.Name)
				if p.Name == m.expect {
					found = true
					t.Logf("rejected: %s\n\tobserved: %s", p.Sentence, p.Detail)
				}
			}
			if !found {
				t.Errorf("want %s among the failed properties, got %v (bug: %s)", m.expect, failed, m.story)
			}
		})
	}
}

package grade

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// What an answer changes, adds or removes where grading looks is named and
// put back; what it writes elsewhere (its own folder) is not the guard's.
func TestGuardRestoresTheCourse(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.mod":                           "module quoteflowlab.dev\n",
		"checkpoints/13/quoteflow/a.go":    "package quoteflow\n",
		"lessons/13/mutants/m.txtar":       "kind: mutant\n",
		"lessons/12/exercise/main.go":      "package main\n",
		"checkpoints/14/quoteflow/gone.go": "package quoteflow\n",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	g, err := NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Restore(); len(got) != 0 {
		t.Fatalf("nothing changed, yet the guard says %v", got)
	}
	os.WriteFile(filepath.Join(root, "checkpoints/13/quoteflow/a.go"), []byte("package quoteflow // evil\n"), 0o644)
	os.WriteFile(filepath.Join(root, "checkpoints/13/extra.txt"), []byte("hi"), 0o644)
	os.WriteFile(filepath.Join(root, "lessons/13/mutants/m.txtar"), []byte("kind: wheat\n"), 0o644)
	os.Remove(filepath.Join(root, "checkpoints/14/quoteflow/gone.go"))
	os.WriteFile(filepath.Join(root, "lessons/12/exercise/main.go"), []byte("package main // mine\n"), 0o644)

	got := g.Restore()
	want := []string{"checkpoints/13/extra.txt", "checkpoints/13/quoteflow/a.go", "checkpoints/14/quoteflow/gone.go", "lessons/13/mutants/m.txtar"}
	if !slices.Equal(got, want) {
		t.Fatalf("Restore = %v; want %v", got, want)
	}
	for name, body := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if name == "lessons/12/exercise/main.go" {
			body = "package main // mine\n" // the answer's own folder is not guarded
		}
		if err != nil || string(data) != body {
			t.Errorf("%s = %q, %v; want %q", name, data, err, body)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "checkpoints/13/extra.txt")); !os.IsNotExist(err) {
		t.Errorf("the added file is still there (%v)", err)
	}
	if got := g.Restore(); len(got) != 0 {
		t.Fatalf("after a restore, the guard still says %v", got)
	}
}

// Answers run at once may each change a file, differently: every version
// found is kept, the first under the file's own name, none overwritten.
func TestGuardKeepsEveryVersionItFinds(t *testing.T) {
	root := t.TempDir()
	t.Setenv("LAB_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	readme := filepath.Join(root, "checkpoints", "13", "README.md")
	if err := os.MkdirAll(filepath.Dir(readme), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readme, []byte("course\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, found := range []string{"mine\n", "", "mine\n", "theirs\n"} {
		if err := os.WriteFile(readme, []byte(found), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := g.Restore(); len(got) != 1 {
			t.Fatalf("changed %v, want the README", got)
		}
	}
	kept := filepath.Join(g.KeptIn(), "checkpoints", "13", "README.md")
	for name, want := range map[string]string{"": "mine\n", "~2": "", "~3": "theirs\n"} {
		if got, err := os.ReadFile(kept + name); err != nil || string(got) != want {
			t.Errorf("README.md%s: %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := os.Stat(kept + "~4"); err == nil {
		t.Errorf("README.md~4 exists: a version found twice is kept once")
	}
}

// A change that keeps the file's size and puts its modification time back
// (os.Chtimes) is found all the same, every time: Restore reads a file again
// only when its status changed, and a write always changes the change time.
func TestGuardFindsAChangeThatHidesItsTime(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "checkpoints", "13", "quoteflow", "a.go")
	os.MkdirAll(filepath.Dir(file), 0o755)
	const body = "package quoteflow // good\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		if got := g.Restore(); len(got) != 0 {
			t.Fatalf("round %d: nothing changed, yet the guard says %v", round, got)
		}
		before, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte("package quoteflow // evil\n"), 0o644); err != nil { // same size
			t.Fatal(err)
		}
		if err := os.Chtimes(file, before.ModTime(), before.ModTime()); err != nil {
			t.Fatal(err)
		}
		if got := g.Restore(); !slices.Equal(got, []string{"checkpoints/13/quoteflow/a.go"}) {
			t.Fatalf("round %d: a same-size change with its old modification time: Restore = %v", round, got)
		}
		if data, _ := os.ReadFile(file); string(data) != body {
			t.Fatalf("round %d: not put back: %q", round, data)
		}
	}
}

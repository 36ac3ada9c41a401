package grade

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Whatever an answer changes, adds or removes anywhere in the course is
// named and put back: the checkpoints, lab itself, the provider, a page,
// another lesson's folder, git's hooks; the folders it made go too. What it
// writes in its own folder, lab's state, git's objects, what .gitignore
// lists and an editor's swap file are not the guard's.
func TestGuardRestoresTheCourse(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		".gitignore":                       "/.lab/\n*.test\nquoteflow-data/\n/exercise\n",
		"go.mod":                           "module quoteflowlab.dev\n",
		"README.md":                        "# the course\n",
		"checkpoints/13/quoteflow/a.go":    "package quoteflow\n",
		"lessons/13/checks/m.txtar":        "kind: mutant\n",
		"lessons/12/exercise/main.go":      "package main\n",
		"lessons/16/exercise/main.go":      "package main\n",
		"checkpoints/14/quoteflow/gone.go": "package quoteflow\n",
		"lab/main.go":                      "package main\n",
		".git/config":                      "[core]\n",
		".git/objects/ab/cdef":             "blob\n",
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	answer := filepath.Join(root, "lessons", "12", "exercise")
	g, err := NewGuard(root, answer)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Restore(); len(got) != 0 {
		t.Fatalf("nothing changed, yet the guard says %v", got)
	}
	write := func(name, body string) {
		p := filepath.Join(root, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("checkpoints/13/quoteflow/a.go", "package quoteflow // evil\n")
	write("checkpoints/13/extra.txt", "hi")
	write("lessons/13/checks/m.txtar", "kind: wheat\n")
	os.Remove(filepath.Join(root, "checkpoints/14/quoteflow/gone.go"))
	write("README.md", "# the course, and the answer was here\n")
	write("lab/evil.go", "package main // the answer's code\n")
	write("provider/evil/evil.go", "package evil\n")
	write("lessons/16/exercise/main.go", "package main // the answer was here\n")
	write(".git/hooks/pre-commit", "#!/bin/sh\n")
	write(".gitignore", "*\n")
	// Not the guard's:
	write("lessons/12/exercise/main.go", "package main // mine\n")
	write("lessons/12/exercise/data/out.json", "{}")
	write(".lab/cache/x", "cache")
	write(".git/objects/ab/cdef", "another blob\n")
	write("lessons/16/exercise/.main.go.swp", "vim")
	write("lessons/16/exercise/main.go~", "backup")
	write("lab/lab.test", "binary")
	write("quoteflow-data/baskets.db", "data")

	got := g.Restore()
	want := []string{
		".git/hooks/pre-commit", ".gitignore", "README.md",
		"checkpoints/13/extra.txt", "checkpoints/13/quoteflow/a.go", "checkpoints/14/quoteflow/gone.go",
		"lab/evil.go", "lessons/13/checks/m.txtar", "lessons/16/exercise/main.go", "provider/evil/evil.go",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Restore = %v; want %v", got, want)
	}
	for name, body := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		switch name {
		case "lessons/12/exercise/main.go":
			body = "package main // mine\n" // the answer's own folder is not guarded
		case ".git/objects/ab/cdef":
			body = "another blob\n"
		}
		if err != nil || string(data) != body {
			t.Errorf("%s = %q, %v; want %q", name, data, err, body)
		}
	}
	for _, gone := range []string{"checkpoints/13/extra.txt", "lab/evil.go", "provider", ".git/hooks"} {
		if _, err := os.Stat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Errorf("%s, added, is still there (%v)", gone, err)
		}
	}
	for _, kept := range []string{"lessons/12/exercise/data/out.json", "lessons/16/exercise/.main.go.swp", "lessons/16/exercise/main.go~", "lab/lab.test", "quoteflow-data/baskets.db"} {
		if _, err := os.Stat(filepath.Join(root, kept)); err != nil {
			t.Errorf("%s, not the guard's, is gone (%v)", kept, err)
		}
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

// A file over 1 MB (a student's binary) is not copied into memory: a change
// to it is named but cannot be put back, and a new one is moved whole into
// the folder of kept versions.
func TestGuardNamesLargeFilesItCannotKeep(t *testing.T) {
	root := t.TempDir()
	t.Setenv("LAB_STATE_DIR", filepath.Join(t.TempDir(), "state"))
	big := make([]byte, maxCopied+1)
	bin := filepath.Join(root, "checkpoints", "17", "quoteflow")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.WriteFile(bin, big, 0o755); err != nil {
		t.Fatal(err)
	}
	g, err := NewGuard(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Restore(); len(got) != 0 {
		t.Fatalf("nothing changed, yet the guard says %v", got)
	}
	big[0] = 1
	if err := os.WriteFile(bin, big, 0o755); err != nil {
		t.Fatal(err)
	}
	added := filepath.Join(root, "lab", "big.bin")
	os.MkdirAll(filepath.Dir(added), 0o755)
	if err := os.WriteFile(added, big, 0o644); err != nil {
		t.Fatal(err)
	}
	got := g.Restore()
	want := []string{"checkpoints/17/quoteflow (over 1 MB: lab kept no copy to put back)", "lab/big.bin"}
	if !slices.Equal(got, want) {
		t.Fatalf("Restore = %q; want %q", got, want)
	}
	if _, err := os.Stat(added); !os.IsNotExist(err) {
		t.Errorf("the large file added is still in the course (%v)", err)
	}
	if data, err := os.ReadFile(filepath.Join(g.KeptIn(), "lab", "big.bin")); err != nil || len(data) != len(big) {
		t.Errorf("the large file added was not kept whole: %d bytes, %v", len(data), err)
	}
	if got := g.Restore(); len(got) != 0 {
		t.Fatalf("after a restore, the guard still says %v", got)
	}
}

// lab's progress record is the one file of its state the guard keeps: an
// answer that writes itself "passed" records (or a record where there was
// none) is named, and the record is put back as it was.
func TestGuardKeepsTheProgressRecord(t *testing.T) {
	for _, before := range []string{`{"exercises":{}}` + "\n", ""} {
		root := t.TempDir()
		state := filepath.Join(root, ".lab")
		os.MkdirAll(state, 0o755)
		record := filepath.Join(state, "state.json")
		if before != "" {
			os.WriteFile(record, []byte(before), 0o644)
		}
		g, err := NewGuard(root)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(state, "other"), []byte("lab's own\n"), 0o644) // the rest of the state is not the guard's
		if got := g.Restore(); len(got) != 0 {
			t.Fatalf("nothing changed the record, yet %q", got)
		}
		os.WriteFile(record, []byte(`{"exercises":{"E19":{"status":"passed","summary":"forged"}}}`), 0o644)
		if got := g.Restore(); !slices.Equal(got, []string{".lab/state.json"}) {
			t.Fatalf("record forged (before: %q): Restore = %q, want it named", before, got)
		}
		data, err := os.ReadFile(record)
		switch {
		case before == "" && err == nil:
			t.Errorf("there was no record, and a forged one is left: %q", data)
		case before != "" && string(data) != before:
			t.Errorf("record %q after Restore, want it as it was: %q", data, before)
		}
	}
}

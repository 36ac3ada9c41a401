package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeFiles writes files (slash paths → content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// says runs bin and returns what it printed.
func says(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return strings.TrimSpace(string(out))
}

// A shelf skips the go command only while nothing the build reads changed:
// the binary it keeps always does what the source says, through an edit
// to the package, to a module it replaces by a folder, to the overlay, to
// the environment, and a binary put in its place; a stamp made without the
// key is worthless; a copy of the module elsewhere (a second clone) with
// the same binaries is up to date.
func TestShelfRunsGoWhenAnythingBuiltFromChanged(t *testing.T) {
	if _, err := exec.LookPath(GoCommand()); err != nil {
		t.Skip("no go command")
	}
	t.Setenv("GOFLAGS", "")
	mod := filepath.Join(t.TempDir(), "course")
	writeFiles(t, mod, map[string]string{
		"go.mod":         "module example.com/course\n\ngo 1.22\n\nrequire example.com/dep v0.0.0\n\nreplace example.com/dep => ./dep // a folder inside\n",
		"cmd/main.go":    "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(\"one\", dep.Word) }\n",
		"dep/go.mod":     "module example.com/dep\n\ngo 1.22\n",
		"dep/dep.go":     "package dep\n\nconst Word = \"a\"\n",
		".lab/cache/x":   "the lab's state: never read by a build\n",
		"notes/todo.txt": "read by nothing, hashed all the same\n",
	})
	bin := filepath.Join(t.TempDir(), "bin", "cmd")
	shelf := &Shelf{Key: []byte("0123456789abcdef0123456789abcdef")}
	ctx := context.Background()
	build := func(s *Shelf, dir, overlay string, wantUpToDate bool, want string) {
		t.Helper()
		res := s.Build(ctx, dir, overlay, bin, "./cmd")
		if !res.OK() {
			t.Fatalf("build: %v\n%s", res.Err, res.Output)
		}
		if res.UpToDate != wantUpToDate {
			t.Fatalf("UpToDate %v, want %v", res.UpToDate, wantUpToDate)
		}
		if got := says(t, bin); got != want {
			t.Fatalf("the binary says %q, want %q (built from what the source says now)", got, want)
		}
	}
	build(shelf, mod, "", false, "one a")
	build(shelf, mod, "", true, "one a")
	oneA := filepath.Join(t.TempDir(), "one-a")
	if b, err := os.ReadFile(bin); err != nil || os.WriteFile(oneA, b, 0o755) != nil {
		t.Fatal("keeping a copy of the first binary:", err)
	}

	writeFiles(t, mod, map[string]string{".lab/cache/x": "changed: still not read"})
	build(shelf, mod, "", true, "one a")

	writeFiles(t, mod, map[string]string{"cmd/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/dep\"\n)\n\nfunc main() { fmt.Println(\"two\", dep.Word) }\n"})
	build(shelf, mod, "", false, "two a")
	build(shelf, mod, "", true, "two a")

	writeFiles(t, mod, map[string]string{"dep/dep.go": "package dep\n\nconst Word = \"b\"\n"})
	build(shelf, mod, "", false, "two b")

	edited := filepath.Join(t.TempDir(), "edited.go")
	writeFiles(t, filepath.Dir(edited), map[string]string{"edited.go": "package dep\n\nconst Word = \"c\"\n"})
	ov := filepath.Join(t.TempDir(), "overlay.json")
	data, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(mod, "dep", "dep.go"): edited}})
	writeFiles(t, filepath.Dir(ov), map[string]string{"overlay.json": string(data)})
	build(shelf, mod, ov, false, "two c")
	build(shelf, mod, ov, true, "two c")
	writeFiles(t, filepath.Dir(edited), map[string]string{"edited.go": "package dep\n\nconst Word = \"d\"\n"})
	build(shelf, mod, ov, false, "two d")
	build(shelf, mod, "", false, "two b")

	t.Setenv("CGO_ENABLED", "0")
	build(shelf, mod, "", false, "two b")
	build(shelf, mod, "", true, "two b")

	// An older binary put in its place, with the stamp of the present
	// one: go runs (and builds the present one).
	stamp, err := os.ReadFile(bin + stampSuffix)
	if err != nil {
		t.Fatal(err)
	}
	copyBin := func(from string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(bin); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin+stampSuffix, stamp, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyBin(oneA)
	build(shelf, mod, "", false, "two b")
	stamp, _ = os.ReadFile(bin + stampSuffix)
	copyBin(bin) // the same bytes, rewritten: still the binary the stamp is of
	build(shelf, mod, "", true, "two b")

	// A stamp made under another key does not pass.
	build(&Shelf{Key: []byte("another key, not the shelf's own")}, mod, "", false, "two b")
	build(shelf, mod, "", false, "two b")
	build(shelf, mod, "", true, "two b")

	// A copy of the module elsewhere builds the same binary: up to date.
	clone := filepath.Join(t.TempDir(), "clone")
	if err := os.CopyFS(clone, os.DirFS(mod)); err != nil {
		t.Fatal(err)
	}
	build(shelf, clone, "", true, "two b")

	// A module replaced by a folder outside: never shelved.
	writeFiles(t, clone, map[string]string{"go.mod": "module example.com/course\n\ngo 1.22\n\nrequire example.com/dep v0.0.0\n\nreplace example.com/dep => " + filepath.Join(mod, "dep") + "\n"})
	build(shelf, clone, "", false, "two b")
	build(shelf, clone, "", false, "two b")

	// No key: go decides every time.
	build(nil, mod, "", false, "two b")
}

// BenchmarkBuildInputs is what a shelf adds to a build of the course: the
// hash of everything go build could read, taken before the build
// (contents), and the statuses compared after one that ran (status).
func BenchmarkBuildInputs(b *testing.B) {
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	for _, contents := range []bool{true, false} {
		b.Run(map[bool]string{true: "contents", false: "status"}[contents], func(b *testing.B) {
			for b.Loop() {
				if _, ok := readInputs(root, "", []string{"./lessons/13/answer_previous"}, nil, contents); !ok {
					b.Fatal("the course is not shelved")
				}
			}
		})
	}
}

// A file saved while go builds leaves no stamp, even when it is saved back
// as it was: what go read is not known then, and the next build runs go.
func TestShelfDoesNotStampABuildDuringWhichAFileWasSaved(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("elsewhere the content is compared after the build, and the same content stamps")
	}
	if _, err := exec.LookPath(GoCommand()); err != nil {
		t.Skip("no go command")
	}
	mod := filepath.Join(t.TempDir(), "course")
	main := "package main\n\nfunc main() { println(\"built\") }\n"
	writeFiles(t, mod, map[string]string{"go.mod": "module example.com/course\n\ngo 1.22\n", "cmd/main.go": main})
	bin := filepath.Join(t.TempDir(), "cmd")
	shelf := &Shelf{Key: []byte("0123456789abcdef0123456789abcdef")}
	ctx := context.Background()
	res := shelf.build(mod, "", []string{"./cmd"}, []string{bin}, func() Result {
		r := Build(ctx, mod, "", bin, "./cmd")
		writeFiles(t, mod, map[string]string{"cmd/main.go": main}) // saved during the build, as it was
		return r
	})
	if !res.OK() || res.UpToDate {
		t.Fatalf("first build: ok %v, up to date %v: %s", res.OK(), res.UpToDate, res.Output)
	}
	if _, err := os.Stat(bin + stampSuffix); err == nil {
		t.Fatal("a build during which a file was saved left a stamp")
	}
	for i, want := range []bool{false, true} {
		if res := shelf.Build(ctx, mod, "", bin, "./cmd"); !res.OK() || res.UpToDate != want {
			t.Fatalf("build %d after: ok %v, up to date %v, want %v", i+1, res.OK(), res.UpToDate, want)
		}
	}
}

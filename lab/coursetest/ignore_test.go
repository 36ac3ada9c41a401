package coursetest_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/testenv"
)

// ignored reads the root go.mod's ignore directives (one a line, or a
// block), as slash paths without "./".
func ignored(t *testing.T, gomod string) []string {
	t.Helper()
	var dirs []string
	inBlock := false
	for line := range strings.SplitSeq(gomod, "\n") {
		line, _, _ = strings.Cut(line, "//")
		line = strings.TrimSpace(line)
		switch {
		case line == "ignore (":
			inBlock = true
		case inBlock && line == ")":
			inBlock = false
		case inBlock && line != "":
			dirs = append(dirs, strings.TrimPrefix(line, "./"))
		case strings.HasPrefix(line, "ignore "):
			dirs = append(dirs, strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(line, "ignore ")), "./"))
		}
	}
	return dirs
}

// The lessons' packages that import a checkpoint (the exercises' starters
// and reference answers) are left out of the root's ./... by go.mod's
// ignore directive: `go test ./...` would compile them, and with them the
// checkpoints they import, keyed by the clone's directory (a fresh clone
// compiles them all again), while the suite builds, runs and vets each of
// them anyway (the e*_answer and e*_starter scripts, TestLessonsVetClean).
// `go build ./lessons/13/exercise`, `go run`, lab check: any package named
// explicitly builds as before; lessons/deps/deps.go names their checkpoint
// imports for go mod tidy. Every other lessons package (E15's tools,
// which import no checkpoint, and the reference's budget package and its
// tests) stays in ./...: the list is exactly what this test derives. So
// do the lessons' demo programs (lessons/NN/demo), whose tests run with
// the suite: the checkpoint packages they import (18's hedge, 19's
// breaker) are small, and ./... compiled them before, in lab.
func TestLessonsThatImportACheckpointAreLeftOutOfDotDotDot(t *testing.T) {
	root := testenv.Root(t)
	ignore := ignored(t, read(t, root, "go.mod"))
	var want []string
	imported := map[string]bool{} // checkpoint packages the lessons import
	err := filepath.WalkDir(filepath.Join(root, "lessons"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" || d.Name() == "checks" || d.Name() == "demo" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
			return fs.SkipDir
		}
		files, _ := filepath.Glob(filepath.Join(path, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || f == filepath.Join(root, "lessons", "deps", "deps.go") { // the list checked below
				continue
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range ast.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(p, "quoteflowlab.dev/checkpoints/") {
					imported[p] = true
					rel, _ := filepath.Rel(root, path)
					if rel = filepath.ToSlash(rel); !slices.Contains(want, rel) {
						want = append(want, rel)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("no lessons package imports a checkpoint: the walk found nothing")
	}
	for _, dir := range want {
		if !slices.Contains(ignore, dir) {
			t.Errorf("%s imports a checkpoint: add `./%s` to the ignore block of go.mod", dir, dir)
		}
	}
	// go mod tidy skips ignored folders: lessons/deps/deps.go names what
	// they import, so that tidy keeps the checkpoints' require lines.
	deps, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "lessons", "deps", "deps.go"), nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, imp := range deps.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		named[p] = true
		if !imported[p] {
			t.Errorf("lessons/deps/deps.go imports %s, which no lessons package imports: remove it", p)
		}
	}
	for p := range imported {
		if !named[p] {
			t.Errorf("a lessons package imports %s: add it to lessons/deps/deps.go (go mod tidy would drop its module)", p)
		}
	}
	for _, dir := range ignore {
		if !slices.Contains(want, dir) {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir))); err != nil {
				t.Errorf("go.mod ignores ./%s, which does not exist: remove it", dir)
			} else {
				t.Errorf("go.mod ignores ./%s, which imports no checkpoint: go test ./... must compile and vet it", dir)
			}
		}
	}
}

package testscripts

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLessonsVetClean vets every package under lessons/ (go vet, GOWORK=off,
// the scripts' flags, so that it shares the packages go test compiled): the root's ./... leaves out the starters and reference
// answers that import a checkpoint (go.mod's ignore block), and go test
// ./... therefore no longer vets them on its way.
func TestLessonsVetClean(t *testing.T) {
	if testing.Short() {
		t.Skip("vets the lessons' packages")
	}
	t.Parallel()
	goVars, err := hostGoEnv()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	err = filepath.WalkDir(filepath.Join(repo, "lessons"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" || d.Name() == "checks" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") {
			return fs.SkipDir
		}
		if files, _ := filepath.Glob(filepath.Join(path, "*.go")); len(files) > 0 {
			// A folder whose files no build compiles (lessons/deps, kept for
			// go mod tidy under a tag no build sets) is no package to vet.
			var noGo *build.NoGoError
			if _, err := build.ImportDir(path, 0); errors.As(err, &noGo) {
				return nil
			}
			rel, _ := filepath.Rel(repo, path)
			pkgs = append(pkgs, "./"+filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) == 0 {
		t.Fatal("no package under lessons/")
	}
	cmd := exec.Command("go", append([]string{"vet"}, pkgs...)...)
	cmd.Dir = repo
	cmd.Env = append(append(os.Environ(), goVars...), "GOWORK=off", "GOFLAGS="+trimpathFlags(goVars))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet %s: %v\n%s", strings.Join(pkgs, " "), err, out)
	}
	t.Logf("vetted %d packages under lessons/", len(pkgs))
}

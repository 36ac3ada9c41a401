package mutagen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
)

// Compiles type-checks every mutant (its package with the edited file in
// place of the file as it is now under root) and returns those that
// compile and those that do not. The packages' dependencies are read from
// the export data `go list -export` leaves in the build cache, one go list
// per package in the module holding it.
func Compiles(root string, ms []Mutant) (ok, dropped []Mutant, err error) {
	byDir := map[string][]int{}
	var dirs []string
	for i, m := range ms {
		d := path.Dir(m.File)
		if _, seen := byDir[d]; !seen {
			dirs = append(dirs, d)
		}
		byDir[d] = append(byDir[d], i)
	}
	good := make([]bool, len(ms))
	for _, d := range dirs {
		pc, err := loadPackage(filepath.Join(root, filepath.FromSlash(d)))
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", d, err)
		}
		for _, i := range byDir[d] {
			good[i] = pc.compiles(root, ms[i])
		}
	}
	for i, m := range ms {
		if good[i] {
			ok = append(ok, m)
		} else {
			dropped = append(dropped, m)
		}
	}
	return ok, dropped, nil
}

// pkgChecker type-checks one package with one file swapped.
type pkgChecker struct {
	dir   string
	path  string
	fset  *token.FileSet
	files map[string]*ast.File // base name → parsed as it is now
	names []string
	imp   types.Importer
}

type listed struct {
	ImportPath string
	Export     string
	Dir        string
	GoFiles    []string
	DepOnly    bool
	Error      *struct{ Err string }
}

func loadPackage(dir string) (*pkgChecker, error) {
	cmd := exec.Command("go", "list", "-e", "-export", "-deps", "-json=ImportPath,Export,Dir,GoFiles,DepOnly,Error", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %v: %s", err, stderr.String())
	}
	exports := map[string]string{}
	pc := &pkgChecker{dir: dir, fset: token.NewFileSet(), files: map[string]*ast.File{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			return nil, err
		}
		if p.Error != nil {
			return nil, fmt.Errorf("%s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly {
			pc.path, pc.names = p.ImportPath, p.GoFiles
		}
	}
	for _, n := range pc.names {
		f, err := parser.ParseFile(pc.fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		pc.files[n] = f
	}
	pc.imp = importer.ForCompiler(pc.fset, "gc", func(p string) (io.ReadCloser, error) {
		e, ok := exports[p]
		if !ok || e == "" {
			return nil, fmt.Errorf("no export data for %s", p)
		}
		return os.Open(e)
	})
	return pc, nil
}

// compiles reports whether the package type-checks with m applied.
func (pc *pkgChecker) compiles(root string, m Mutant) bool {
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.File)))
	if err != nil {
		return false
	}
	edited, err := m.Apply(string(src))
	if err != nil {
		return false
	}
	base := path.Base(m.File)
	ef, err := parser.ParseFile(pc.fset, filepath.Join(pc.dir, base), edited, parser.SkipObjectResolution)
	if err != nil {
		return false
	}
	files := make([]*ast.File, 0, len(pc.names))
	found := false
	for _, n := range pc.names {
		if n == base {
			files = append(files, ef)
			found = true
		} else {
			files = append(files, pc.files[n])
		}
	}
	if !found {
		return false // a file this platform does not build
	}
	failed := false
	conf := types.Config{Importer: pc.imp, Error: func(error) { failed = true }}
	_, _ = conf.Check(pc.path, pc.fset, files, nil)
	return !failed
}

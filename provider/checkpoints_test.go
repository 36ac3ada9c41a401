package provider_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"quoteflowlab.dev/provider"
)

// TestEveryCheckpointAcceptsTheScenariosOfItsLesson reads the list of
// scenarios each checkpoint accepts (its `var Scenarios = []string{...}`)
// and checks that checkpoint N accepts exactly the provider's scenarios that
// arrived in lesson N or earlier: a scenario added here without the lesson
// that teaches it, or a checkpoint that forgot one, fails.
func TestEveryCheckpointAcceptsTheScenariosOfItsLesson(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "checkpoints", "*"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, dir := range dirs {
		n, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue // not a checkpoint
		}
		got, where := checkpointScenarios(t, dir)
		if where == "" {
			t.Errorf("checkpoint %d declares no `var Scenarios = []string{...}` (outside tests)", n)
			continue
		}
		want := provider.ScenariosUpTo(n)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s accepts %v; the provider's scenarios of lessons up to %d are %v", where, got, n, want)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("found no checkpoint under ../checkpoints")
	}
}

// checkpointScenarios finds the Scenarios list in a checkpoint's non-test
// Go files; where is "" when there is none.
func checkpointScenarios(t *testing.T, dir string) (names []string, where string) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		src, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(src), "Scenarios") {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if name.Name != "Scenarios" || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.CompositeLit)
					if !ok {
						t.Errorf("%s: Scenarios is not a []string literal", path)
						continue
					}
					for _, elt := range lit.Elts {
						bl, ok := elt.(*ast.BasicLit)
						if !ok || bl.Kind != token.STRING {
							t.Errorf("%s: Scenarios holds a non-literal element", path)
							continue
						}
						s, _ := strconv.Unquote(bl.Value)
						names = append(names, s)
					}
					where = path
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names, where
}

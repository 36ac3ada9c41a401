package mutagen

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// A Scope is what an exercise is about: files, and in each the functions
// whose mutants are generated. Its text form, one file per line:
//
//	# comment
//	checkpoints/14/quoteflow/retry.go: Service.withRetry retryable isTransient
//	checkpoints/14/quoteflow/service.go: *
type Scope struct {
	Files []ScopeFile
}

// A ScopeFile is one line of a scope.
type ScopeFile struct {
	File  string   // slash path from the repository root
	Funcs []string // "Name", "Recv.Name", or "*" for all
}

// ParseScope reads a scope's text.
func ParseScope(text string) (Scope, error) {
	var s Scope
	err := eachLine(text, func(n int, line string) error {
		file, funcs, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(file) == "" || len(strings.Fields(funcs)) == 0 {
			return fmt.Errorf("line %d: want `path/to/file.go: Func Recv.Method ...` (or `: *`)", n)
		}
		file = strings.TrimSpace(file)
		if err := sourcePath(n, file); err != nil {
			return err
		}
		if slices.ContainsFunc(s.Files, func(f ScopeFile) bool { return f.File == file }) {
			return fmt.Errorf("line %d: %s is named twice", n, file)
		}
		s.Files = append(s.Files, ScopeFile{File: file, Funcs: strings.Fields(funcs)})
		return nil
	})
	if err == nil && len(s.Files) == 0 {
		err = fmt.Errorf("no file in scope")
	}
	return s, err
}

// ReadScope reads the scope file at slash path name under root.
func ReadScope(root, name string) (Scope, error) { return readParsed(root, name, ParseScope) }

// eachLine calls f with each line of text that is neither blank nor a #
// comment, trimmed, and its number, until f returns an error.
func eachLine(text string, f func(n int, line string) error) error {
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := f(i+1, line); err != nil {
			return err
		}
	}
	return nil
}

// sourcePath checks that file, named on line n, is a clean slash path of a
// non-test .go file.
func sourcePath(n int, file string) error {
	if path.Clean(file) != file || path.IsAbs(file) || path.Ext(file) != ".go" || strings.HasSuffix(file, "_test.go") {
		return fmt.Errorf("line %d: %q must be a clean slash path of a non-test .go file from the repository root", n, file)
	}
	return nil
}

// readParsed parses the file at slash path name under root; a parse error
// names the file.
func readParsed[T any](root, name string, parse func(string) (T, error)) (T, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		var zero T
		return zero, err
	}
	v, err := parse(string(data))
	if err != nil {
		return v, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// FromScope generates the mutants of every function in scope, as the files
// are now under root. Names are unique: where two files give the same name,
// both get their package's name in front (gen_<pkg>_<func>_...).
func FromScope(root string, s Scope) ([]Mutant, error) {
	var all []Mutant
	for _, f := range s.Files {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.File)))
		if err != nil {
			return nil, err
		}
		ms, err := Generate(f.File, src, f.Funcs)
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	byName := map[string][]int{}
	for i, m := range all {
		byName[m.Name] = append(byName[m.Name], i)
	}
	for name, is := range byName {
		if len(is) < 2 {
			continue
		}
		for _, i := range is {
			pkg := path.Base(path.Dir(all[i].File))
			all[i].Name = "gen_" + snake(pkg) + "_" + strings.TrimPrefix(name, "gen_")
		}
	}
	return all, nil
}

// Hash is the hex SHA-256 of what a kill-set run covers: the generator's
// version, the scope's text, every file in scope and every Go file under
// each of dirs (the reference answer), by name and content. A recorded result
// whose hash differs is stale.
func Hash(root, scopeFile string, s Scope, dirs ...string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "mutagen %s\n", Version)
	add := func(name string) error {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%s %x\n", name, sum)
		return nil
	}
	if err := add(scopeFile); err != nil {
		return "", err
	}
	for _, f := range s.Files {
		if err := add(f.File); err != nil {
			return "", err
		}
	}
	for _, d := range dirs {
		var names []string
		err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(d)), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(p, ".go") {
				return err
			}
			rel, err := filepath.Rel(root, p)
			names = append(names, filepath.ToSlash(rel))
			return err
		})
		if err != nil {
			return "", err
		}
		slices.Sort(names)
		for _, n := range names {
			if err := add(n); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

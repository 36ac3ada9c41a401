package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
)

// DocsRecord is where `lab verify --docs` records each demo whose figures
// it found as the page states them, with the hash of everything those
// figures depend on. `lab verify --docs --recorded` (CI) runs only the
// demos whose hash changed since: the demos take minutes of wall time, and
// most changes touch none of what they depend on.
const DocsRecord = ".ci/docs-verified.txt"

// docsInputs are what a demo's figures depend on (tests, Markdown and
// testdata aside), besides the lesson's own folder: the lab, the toolkit,
// the provider and the checkpoints.
var docsInputs = []string{"lab", "kit", "provider", "checkpoints", "go.mod", "go.sum"}

// docsHash is the hex SHA-256 of what the figures of page depend on: the
// Go release, every input file by name and content, the lesson's folder
// (mutants aside) and the page itself, with its Chinese twin.
func docsHash(root, page string) (string, error) {
	var names []string
	ignored := grade.Gitignored(root) // go build's outputs, QuoteFlow's data, editors' swap files: none is an input
	add := func(dir string, skip func(rel string) bool) error {
		return filepath.WalkDir(filepath.Join(root, filepath.FromSlash(dir)), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if grade.Unguarded(rel, e.IsDir(), ignored) {
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			name := e.Name()
			if e.IsDir() {
				if name == "testdata" || name == "quoteflow-data" || strings.HasPrefix(name, ".") && rel != "." || skip(rel) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(name, "_test.go") || strings.HasSuffix(name, ".md") && rel != page && rel != course.Twin(page) || !e.Type().IsRegular() {
				return nil
			}
			names = append(names, rel)
			return nil
		})
	}
	none := func(string) bool { return false }
	for _, d := range docsInputs {
		if err := add(d, none); err != nil {
			return "", err
		}
	}
	lesson := filepath.ToSlash(filepath.Dir(page))
	// The exercise folder is the student's (the starter, or what they wrote):
	// no demo reads it, and .ci/run fills every one with its reference answer
	// while the figures are checked beside it.
	if err := add(lesson, func(rel string) bool { return rel == lesson+"/checks" || rel == lesson+"/exercise" }); err != nil {
		return "", err
	}
	slices.Sort(names)
	names = slices.Compact(names)
	h := sha256.New()
	fmt.Fprintf(h, "go %s\n", runtime.Version())
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(n)))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %x\n", n, sha256.Sum256(data))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readDocsRecord reads DocsRecord: item name → hash. A missing file is an
// empty record.
func readDocsRecord(root string) (map[string]string, error) {
	out := map[string]string{}
	f, err := os.Open(filepath.Join(root, DocsRecord))
	if os.IsNotExist(err) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		hash, name, ok := strings.Cut(line, " ")
		if !ok || len(hash) != 64 {
			return nil, fmt.Errorf("%s:%d: want `<sha256> <item>`", DocsRecord, n)
		}
		out[name] = hash
	}
	return out, sc.Err()
}

// writeDocsRecord writes rec to DocsRecord, one item a line, sorted.
func writeDocsRecord(root string, rec map[string]string) error {
	var b strings.Builder
	b.WriteString("# The lesson pages' figures, checked against fresh runs of their demos by `go run ./lab verify --docs`:\n")
	b.WriteString("# each line is a demo that passed and the hash of everything its figures depend on (lab, provider,\n")
	b.WriteString("# internal, checkpoints, the lesson's folder and page; tests and Markdown aside). Written by that command;\n")
	b.WriteString("# CI (lab verify --docs --recorded) runs again only the demos whose hash changed.\n")
	for _, n := range slices.Sorted(maps.Keys(rec)) {
		fmt.Fprintf(&b, "%s %s\n", rec[n], n)
	}
	path := filepath.Join(root, DocsRecord)
	if old, err := os.ReadFile(path); err == nil && string(old) == b.String() {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

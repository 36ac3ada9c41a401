package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/diff"
)

// runDiff implements `lab diff NN MM`: the unified diff from checkpoint NN's
// sources to checkpoint MM's, file by file.
func runDiff(args []string, stdout, stderr io.Writer) int {
	f := form{name: "diff", usage: "NN MM   (for example: lab diff 13 14)", min: 2, max: 2, wrong: "want two checkpoint numbers"}
	fset := f.flags(stderr)
	c, code, ok := f.parse(fset, args, stderr)
	if !ok {
		return code
	}
	var dirs [2]string
	for i, a := range c.pos {
		n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(a, "/"), "checkpoints/"))
		dirs[i] = "checkpoints/" + strconv.Itoa(n)
		if fi, serr := os.Stat(filepath.Join(c.root, dirs[i])); err != nil || serr != nil || !fi.IsDir() {
			return usageError(fset, stderr, "no checkpoint %q (have: %s)", a, strings.Join(checkpointNumbers(c.root), ", "))
		}
	}
	out, err := diffTrees(c.root, dirs[0], dirs[1])
	if err != nil {
		return failed(stderr, "lab diff", err)
	}
	stdout.Write(out)
	return 0
}

// diffTrees diffs the sources (Go files, go.mod, READMEs) of two directories
// under root. A file on one side only is shown against /dev/null.
func diffTrees(root, oldDir, newDir string) ([]byte, error) {
	oldFiles, err := sourceFiles(filepath.Join(root, oldDir))
	if err != nil {
		return nil, err
	}
	newFiles, err := sourceFiles(filepath.Join(root, newDir))
	if err != nil {
		return nil, err
	}
	all := maps.Clone(newFiles)
	maps.Copy(all, oldFiles)
	names := slices.Sorted(maps.Keys(all))
	var body []byte
	var changed, added, removed int
	for _, n := range names {
		o, inOld := oldFiles[n]
		nw, inNew := newFiles[n]
		oldName, newName := path.Join(oldDir, n), path.Join(newDir, n)
		switch {
		case !inOld:
			oldName = "/dev/null"
			added++
		case !inNew:
			newName = "/dev/null"
			removed++
		}
		d := diff.Diff(oldName, o, newName, nw)
		if d != nil && inOld && inNew {
			changed++
		}
		body = append(body, d...)
	}
	head := fmt.Sprintf("# %s -> %s: %d changed, %d added, %d removed\n", oldDir, newDir, changed, added, removed)
	if len(body) == 0 {
		head = fmt.Sprintf("# %s -> %s: no differences in Go files, go.mod or READMEs\n", oldDir, newDir)
	}
	return append([]byte(head), body...), nil
}

// sourceFiles reads the files `lab diff` shows, keyed by slash path
// relative to dir.
func sourceFiles(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(d.Name(), ".") || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") && name != "go.mod" && !strings.EqualFold(strings.TrimSuffix(name, ".md"), "README") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist", dir)
	}
	return files, err
}

// checkpointNumbers lists the checkpoints present, for error messages.
func checkpointNumbers(root string) []string {
	entries, _ := os.ReadDir(filepath.Join(root, "checkpoints"))
	var ns []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil && e.IsDir() {
			ns = append(ns, e.Name())
		}
	}
	return ns
}

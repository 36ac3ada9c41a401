package grade

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/fileid"
)

// A Guard keeps what grading depends on as it was before any answer ran:
// every checkpoint, every lesson's checks (lessons/*/mutants) and the root
// go.mod and go.sum. An answer runs as the student, so it can write there;
// Restore finds what it changed, puts the files back, and says which. The
// course is about 300 files and 2 MB, held in memory.
//
// Restore runs after every run of an answer, so it reads again only the
// files whose status changed: on Linux a file whose device, inode, size,
// mode, modification time and change time are what they were when it was
// last read holds what it held then. Any write, rename over it, chmod or
// touch sets the change time to the present, which no process can set back
// (os.Chtimes sets the modification time, and sets the change time to now).
// Elsewhere every file is read each time.
//
// Lab cannot tell an answer's write from a person's (an edit saved in an
// editor, a git pull while a check runs), so nothing it finds is thrown
// away: each changed or new file is first copied, as found, into
// <state dir>/changed/<time>/ (KeptIn says where).
type Guard struct {
	root  string
	mu    sync.Mutex
	files map[string]guarded // slash path from root → what it held
	kept  string             // where the changed versions were copied, once any was
}

type guarded struct {
	data []byte
	mode fs.FileMode
	id   fileid.ID // the file's status when data was read; zero: not known
}

// Guarded says whether grading depends on the file at rel (a slash path
// from the root).
func Guarded(rel string) bool {
	switch {
	case rel == "go.mod" || rel == "go.sum":
		return true
	case strings.HasPrefix(rel, "checkpoints/"):
		return true
	case strings.HasPrefix(rel, "lessons/"):
		parts := strings.Split(rel, "/")
		return len(parts) >= 4 && parts[2] == "mutants"
	}
	return false
}

// NewGuard reads what grading depends on under root.
func NewGuard(root string) (*Guard, error) {
	files, err := readGuarded(root, nil)
	if err != nil {
		return nil, err
	}
	return &Guard{root: root, files: files}, nil
}

// readGuarded reads what grading depends on under root; a file whose
// status is what it was when prev's copy was read is prev's copy.
func readGuarded(root string, prev map[string]guarded) (map[string]guarded, error) {
	files := map[string]guarded{}
	add := func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || !Guarded(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			files[rel] = guarded{mode: info.Mode()} // a link or a device: its kind is what counts
			return nil
		}
		id := fileid.Of(info)
		if was, ok := prev[rel]; ok && id.Known() && was.id == id {
			files[rel] = was
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if after, err := os.Lstat(path); err != nil || fileid.Of(after) != id {
			id = fileid.ID{} // changed while it was read: read it again next time
		}
		files[rel] = guarded{data: data, mode: info.Mode(), id: id}
		return nil
	}
	for _, top := range []string{"checkpoints", "lessons"} {
		if err := filepath.WalkDir(filepath.Join(root, top), add); err != nil {
			return nil, err
		}
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		info, err := os.Lstat(filepath.Join(root, f))
		if err != nil {
			continue
		}
		if err := add(filepath.Join(root, f), fs.FileInfoToDirEntry(info), nil); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// Restore compares what grading depends on with what it was, puts back
// every file that was changed or removed, removes every file that was
// added, and returns their slash paths, sorted. A file it could not put
// back is named with the reason.
func (g *Guard) Restore() []string {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now, err := readGuarded(g.root, g.files)
	if err != nil {
		return []string{"(the course could not be read back: " + err.Error() + ")"}
	}
	var changed []string
	for rel, was := range g.files {
		is, ok := now[rel]
		if ok && is.mode == was.mode && bytes.Equal(is.data, was.data) {
			g.files[rel] = is // the same content: its new status need not be read again
			continue
		}
		changed = append(changed, rel)
		if ok {
			g.keep(rel, is)
		}
		path := filepath.Join(g.root, filepath.FromSlash(rel))
		if !was.mode.IsRegular() {
			continue // not ours to recreate; named all the same
		}
		os.RemoveAll(path) // a directory or a link put in its place goes too
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, was.data, was.mode.Perm()); err != nil {
			changed[len(changed)-1] += " (could not be restored: " + err.Error() + ")"
		}
	}
	for rel, is := range now {
		if _, ok := g.files[rel]; !ok {
			changed = append(changed, rel)
			g.keep(rel, is)
			os.Remove(filepath.Join(g.root, filepath.FromSlash(rel)))
		}
	}
	slices.Sort(changed)
	return changed
}

// keep copies a changed file, as found, under the state dir before it is
// put back; g.mu is held. Answers run at once, so one check may find the
// same file changed several times, differently: the first version found
// keeps the file's name, each other one is kept beside it as NAME~2,
// NAME~3, …; none overwrites another.
func (g *Guard) keep(rel string, is guarded) {
	if !is.mode.IsRegular() {
		return
	}
	if g.kept == "" {
		g.kept = filepath.Join(course.StateDir(g.root), "changed", time.Now().Format("20060102-150405.000"))
	}
	base := filepath.Join(g.kept, filepath.FromSlash(rel))
	if os.MkdirAll(filepath.Dir(base), 0o755) != nil {
		return
	}
	for n := 1; n < 100; n++ {
		path := base
		if n > 1 {
			path = fmt.Sprintf("%s~%d", base, n)
		}
		old, err := os.ReadFile(path)
		if err == nil && bytes.Equal(old, is.data) {
			return // this version is kept already
		}
		if errors.Is(err, fs.ErrNotExist) {
			_ = os.WriteFile(path, is.data, 0o644)
			return
		}
	}
}

// KeptIn is the folder the changed files were copied to, as found, before
// Restore put the originals back; "" when nothing changed.
func (g *Guard) KeptIn() string {
	if g == nil {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.kept
}

// Tampered is the sentence a report gives when files changed while the
// answer ran: which, that they were put back, and where the changed
// versions are.
func (g *Guard) Tampered(who string, changed []string) string {
	s := who + " changed files the grading depends on while it ran: " + strings.Join(changed, ", ") + " (lab put them back"
	if dir := g.KeptIn(); dir != "" {
		s += "; the versions it found are kept in " + dir + ", in case the change was yours"
	}
	return s + ")."
}

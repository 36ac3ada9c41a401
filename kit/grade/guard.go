package grade

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/fileid"
	"quoteflowlab.dev/kit/msg"
)

// A Guard keeps the course as it was before any answer ran: every file of
// the repository but the answer's own folder and lab's state (see
// Unguarded for the few other exceptions, none of which a build, a test or
// a verdict reads). An answer runs as the student, so it can write there;
// Restore finds what it changed, added or removed, puts the course back
// (a file added is removed, with the folders made for it), and says which.
// The course is about 700 files and 5 MB, held in memory.
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
	root   string
	except except
	mu     sync.Mutex
	files  map[string]guarded  // slash path from root → what it held
	dirs   map[string]struct{} // slash paths of the folders there were
	kept   string              // where the changed versions were copied, once any was
	// progress is lab's record of each exercise's verdict (state.json in
	// the state folder, which the guard otherwise leaves alone): what it
	// held (nil: there was none), so that an answer cannot write itself
	// "passed" records for other exercises.
	progress     string
	progressData []byte
	// Restores called at once share a look at the course: ticket numbers
	// the calls and the looks; last is the ticket the last look was begun
	// under, and lastFound what it found.
	ticket    atomic.Uint64
	last      uint64
	lastFound []string
}

type guarded struct {
	data []byte
	mode fs.FileMode
	id   fileid.ID // the file's status when data was read; zero: not known
	// large: over maxCopied, so data is not kept; such a file is compared
	// by its status (id, or elsewhere its size and modification time).
	large bool
	size  int64
	mtime time.Time
}

// maxCopied is the largest file the guard keeps a copy of. The course's
// own files are all under 100 KB; a larger one is a student's (a binary
// go build left in a checkpoint's folder): it is compared by its status,
// named when that changed, but cannot be put back.
const maxCopied = 1 << 20

// same reports whether two readings of a file found the same file.
func same(was, is guarded) bool {
	if was.mode != is.mode || was.large != is.large {
		return false
	}
	if !was.large {
		return bytes.Equal(is.data, was.data)
	}
	if was.id.Known() {
		return was.id == is.id
	}
	return was.size == is.size && was.mtime.Equal(is.mtime)
}

// except is what a guard leaves alone: folders (absolute, cleaned) and the
// patterns of the root's .gitignore as it was when the guard was made (an
// answer that adds a line there does not unguard anything).
type except struct {
	dirs    []string
	ignored []string
}

// editorFiles are the names editors write beside a file being edited (vim's
// swap files and its write test, Emacs's locks and backups): never read by
// a build, and written while a person edits another exercise.
var editorFiles = []string{".*.sw?", "*~", ".#*", "#*#", "4913"}

// Unguarded says whether the guard leaves the entry rel (a slash path from
// the root; dir: a folder) alone, whatever the folders it was told to skip:
// git's own data (but .git/config and .git/hooks, which run programs),
// what the root's .gitignore lists as given (go build's and go test's
// outputs, lab's state folder, QuoteFlow's data folder), and editors'
// swap and backup files.
func Unguarded(rel string, dir bool, ignored []string) bool {
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return rel != ".git" && rel != ".git/config" && rel != ".git/hooks" && !strings.HasPrefix(rel, ".git/hooks/")
	}
	base := path.Base(rel)
	if !dir {
		for _, p := range editorFiles {
			if ok, _ := path.Match(p, base); ok {
				return true
			}
		}
	}
	for _, p := range ignored {
		p, dirOnly := strings.CutSuffix(p, "/")
		if dirOnly && !dir {
			continue
		}
		if anchored, ok := strings.CutPrefix(p, "/"); ok {
			if m, _ := path.Match(anchored, rel); m {
				return true
			}
		} else if m, _ := path.Match(p, base); m {
			return true
		}
	}
	return false
}

// Gitignored reads the patterns of the root's .gitignore that this guard
// understands (a name or a glob, anchored by a leading slash or not, a
// folder by a trailing one); negations and patterns with a slash inside are
// left out, so they guard rather than skip.
func Gitignored(root string) []string {
	data, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		return nil
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		if strings.Contains(strings.Trim(line, "/"), "/") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// NewGuard reads every file of the course under root but those of the
// folders in skip (the answer's own, the check's cache) and lab's state.
func NewGuard(root string, skip ...string) (*Guard, error) {
	ex := except{ignored: Gitignored(root)}
	for _, d := range append(skip, filepath.Join(root, ".lab"), course.StateDir(root)) {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			ex.dirs = append(ex.dirs, abs)
		}
	}
	g := &Guard{except: ex, progress: filepath.Join(course.StateDir(root), course.StateFile)}
	if data, err := os.ReadFile(g.progress); err == nil {
		g.progressData = data
	}
	var err error
	if g.root, err = filepath.Abs(root); err != nil {
		return nil, err
	}
	g.files, g.dirs, err = g.read(nil)
	if err != nil {
		return nil, err
	}
	return g, nil
}

// read reads the guarded files under the root; a file whose status is what
// it was when prev's copy was read is prev's copy.
func (g *Guard) read(prev map[string]guarded) (map[string]guarded, map[string]struct{}, error) {
	files, dirs := map[string]guarded{}, map[string]struct{}{}
	err := filepath.WalkDir(g.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if p == g.root {
			return nil
		}
		rel, _ := filepath.Rel(g.root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if slices.Contains(g.except.dirs, p) || Unguarded(rel, true, g.except.ignored) {
				return filepath.SkipDir
			}
			dirs[rel] = struct{}{}
			return nil
		}
		if Unguarded(rel, false, g.except.ignored) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
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
		if info.Size() > maxCopied {
			files[rel] = guarded{mode: info.Mode(), id: id, large: true, size: info.Size(), mtime: info.ModTime()}
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if after, err := os.Lstat(p); err != nil || fileid.Of(after) != id {
			id = fileid.ID{} // changed while it was read: read it again next time
		}
		files[rel] = guarded{data: data, mode: info.Mode(), id: id}
		return nil
	})
	return files, dirs, err
}

// Restore compares the course with what it was, puts back every file that
// was changed or removed, removes every file that was added (and the
// folders made for them, once empty), and returns their slash paths,
// sorted. A file it could not put back is named with the reason.
//
// Runs end ten at a time: a call that waited while another looked at the
// course is answered by a look begun after it was called, when there was
// one (what it found is what this call would find), instead of looking
// again.
func (g *Guard) Restore() []string {
	if g == nil {
		return nil
	}
	called := g.ticket.Add(1)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.last > called {
		return slices.Clone(g.lastFound)
	}
	g.last = g.ticket.Add(1)
	g.lastFound = g.restore()
	return slices.Clone(g.lastFound)
}

// restore is Restore's look at the course; g.mu is held.
func (g *Guard) restore() []string {
	now, nowDirs, err := g.read(g.files)
	if err != nil {
		return []string{"(the course could not be read back: " + err.Error() + ")"}
	}
	var changed []string
	for rel, was := range g.files {
		is, ok := now[rel]
		if ok && same(was, is) {
			g.files[rel] = is // the same content: its new status need not be read again
			continue
		}
		changed = append(changed, rel)
		if ok && !is.large {
			g.keep(rel, is)
		}
		path := filepath.Join(g.root, filepath.FromSlash(rel))
		if !was.mode.IsRegular() {
			continue // not ours to recreate; named all the same
		}
		if was.large {
			changed[len(changed)-1] += " (over 1 MB: lab kept no copy to put back)"
			g.files[rel] = is
			if !ok {
				delete(g.files, rel)
			}
			continue
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
			path := filepath.Join(g.root, filepath.FromSlash(rel))
			if is.large { // moved aside whole, not read into memory
				if err := g.moveAside(rel, path); err != nil {
					changed[len(changed)-1] += " (could not be moved out of the course: " + err.Error() + ")"
				}
				continue
			}
			g.keep(rel, is)
			os.Remove(path)
		}
	}
	if name, ok := g.restoreProgress(); !ok {
		changed = append(changed, name)
	}
	// Folders made since, deepest first: each goes once it is empty (what
	// an answer put there is gone; what is left is not the guard's).
	var made []string
	for rel := range nowDirs {
		if _, ok := g.dirs[rel]; !ok {
			made = append(made, rel)
		}
	}
	slices.SortFunc(made, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, rel := range made {
		if os.Remove(filepath.Join(g.root, filepath.FromSlash(rel))) == nil && !slices.ContainsFunc(changed, func(f string) bool { return strings.HasPrefix(f, rel+"/") }) {
			changed = append(changed, rel+"/")
		}
	}
	slices.Sort(changed)
	return changed
}

// restoreProgress puts lab's progress record back as it was when the
// check began, if it changed (an answer cannot write "passed" for any
// exercise: lab writes a verdict only after the last run); it returns the
// name to report and whether the record was as it was. Another lab check
// of the same course that ends meanwhile changes it too, and is undone:
// its verdict is in its own report, and its record comes back when it is
// run again. g.mu is held.
func (g *Guard) restoreProgress() (string, bool) {
	name := g.progress
	if rel, err := filepath.Rel(g.root, g.progress); err == nil && !strings.HasPrefix(rel, "..") {
		name = filepath.ToSlash(rel)
	}
	now, err := os.ReadFile(g.progress)
	switch {
	case err != nil && g.progressData == nil:
		return name, true
	case err == nil && g.progressData != nil && bytes.Equal(now, g.progressData):
		return name, true
	}
	if err == nil {
		g.keep(".lab-progress/"+course.StateFile, guarded{data: now, mode: 0o644})
	}
	if g.progressData == nil {
		os.Remove(g.progress)
		return name, false
	}
	tmp := g.progress + ".restore"
	if err := os.WriteFile(tmp, g.progressData, 0o644); err != nil || os.Rename(tmp, g.progress) != nil {
		os.Remove(tmp)
		return name + " (could not be restored)", false
	}
	return name, false
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

// moveAside moves a new file too large to copy in memory into the folder
// of kept versions (a copy, then removed, when that folder is on another
// file system); g.mu is held.
func (g *Guard) moveAside(rel, path string) error {
	if g.kept == "" {
		g.kept = filepath.Join(course.StateDir(g.root), "changed", time.Now().Format("20060102-150405.000"))
	}
	to := filepath.Join(g.kept, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	for n := 2; ; n++ {
		if _, err := os.Lstat(to); errors.Is(err, fs.ErrNotExist) {
			break
		}
		to = fmt.Sprintf("%s~%d", filepath.Join(g.kept, filepath.FromSlash(rel)), n)
	}
	if os.Rename(path, to) == nil {
		return nil
	}
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Remove(path)
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
	kept := ""
	if dir := g.KeptIn(); dir != "" {
		kept = msg.T("guard.kept", dir)
	}
	return msg.T("guard.tampered", who, strings.Join(changed, ", "), kept)
}

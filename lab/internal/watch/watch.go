// Package watch tells `lab watch` when an exercise's files change. It
// listens for file events (fsnotify) and falls back to polling where those
// cannot be set up; polling can also be asked for, for the places where
// events are set up but never arrive (a Windows drive under WSL2, network
// and synced folders). Either way a burst of changes — an editor writing a
// temporary file and renaming it, a formatter rewriting five files — is
// one signal, sent once the folder has been quiet for a moment.
package watch

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Mode is how changes are noticed.
type Mode string

const (
	Events Mode = "events" // file events from the operating system
	Poll   Mode = "poll"   // the folder is scanned every interval
)

// DefaultInterval is the polling interval.
const DefaultInterval = 500 * time.Millisecond

// Quiet is how long the folder must stay unchanged before a burst of
// changes is reported as one. Editors save within a few milliseconds, so a
// short window costs little in the time from save to verdict.
const Quiet = 80 * time.Millisecond

// fastScan is how often polling rescans while a burst settles.
const fastScan = 20 * time.Millisecond

// smallFile is the size up to which polling hashes a file's content, so an
// edit that keeps its size within the file system's time resolution is
// still seen.
const smallFile = 1 << 20

// Options says what to watch.
type Options struct {
	Dir string // the folder, watched with everything under it
	// Match reports whether a change to the file at rel (a slash path from
	// Dir) matters. Folders are always followed.
	Match    func(rel string) bool
	Poll     bool          // poll instead of trying file events
	Interval time.Duration // polling interval; default DefaultInterval
}

// A Watcher reports changes on C: one value per burst. C holds at most one
// value, so however many bursts happen while nobody reads it, the reader
// sees one.
type Watcher struct {
	C    <-chan struct{}
	Mode Mode
	// Fallback says why file events could not be set up, when polling was
	// chosen for that reason; nil otherwise.
	Fallback error
	Interval time.Duration // the polling interval, in Poll mode
	stop     context.CancelFunc
	done     chan struct{}
}

// Start starts watching; it stops when ctx is done or Close is called.
func Start(ctx context.Context, o Options) (*Watcher, error) {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Match == nil {
		o.Match = func(string) bool { return true }
	}
	if st, err := os.Stat(o.Dir); err != nil {
		return nil, err
	} else if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", o.Dir)
	}
	ctx, stop := context.WithCancel(ctx)
	raw := make(chan struct{}, 1)
	out := make(chan struct{}, 1)
	w := &Watcher{C: out, stop: stop, done: make(chan struct{})}

	var source func()
	if !o.Poll {
		fw, err := newEvents(o.Dir)
		if err == nil {
			w.Mode = Events
			source = func() { watchEvents(ctx, fw, o, raw) }
		} else {
			w.Fallback = err
		}
	}
	if source == nil {
		w.Mode, w.Interval = Poll, o.Interval
		first := scan(o.Dir, o.Match) // the state the first run sees
		source = func() { poll(ctx, o, first, raw) }
	}
	go func() {
		defer close(w.done)
		go source()
		debounce(ctx, raw, out)
	}()
	return w, nil
}

// Close stops the watcher and waits for it.
func (w *Watcher) Close() {
	w.stop()
	<-w.done
}

// notify sends a signal without blocking: one pending signal is enough.
func notify(c chan<- struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// debounce forwards a burst of raw signals as one, Quiet after the last.
func debounce(ctx context.Context, raw <-chan struct{}, out chan<- struct{}) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-raw:
			t.Reset(Quiet)
		case <-t.C:
			notify(out)
		}
	}
}

// newWatcher makes the file-event watcher; a test makes it fail.
var newWatcher = fsnotify.NewWatcher

// newEvents sets up file events on dir and every folder under it.
func newEvents(dir string) (*fsnotify.Watcher, error) {
	fw, err := newWatcher()
	if err != nil {
		return nil, fmt.Errorf("file events: %w", err)
	}
	if err := addTree(fw, dir); err != nil {
		fw.Close()
		return nil, fmt.Errorf("file events on %s: %w", dir, err)
	}
	return fw, nil
}

// addTree watches dir and the folders under it (file events are per folder).
func addTree(fw *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if p != dir && skipDir(d.Name()) {
			return filepath.SkipDir
		}
		return fw.Add(p)
	})
}

// skipDir: hidden folders (.git, editor state) are not the answer.
func skipDir(name string) bool { return strings.HasPrefix(name, ".") }

func watchEvents(ctx context.Context, fw *fsnotify.Watcher, o Options, raw chan<- struct{}) {
	defer fw.Close()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-fw.Events:
			if !ok {
				return
			}
			if ev.Op == fsnotify.Chmod {
				continue // a touch or a permission change, not an edit
			}
			if ev.Has(fsnotify.Create) {
				if st, err := os.Stat(ev.Name); err == nil && st.IsDir() && !skipDir(st.Name()) {
					// A new folder: watch it, and count what was written into
					// it before the watch was in place.
					_ = addTree(fw, ev.Name)
					if len(scan(ev.Name, func(rel string) bool { return o.Match(relTo(o.Dir, filepath.Join(ev.Name, rel))) })) > 0 {
						notify(raw)
					}
					continue
				}
			}
			if o.Match(relTo(o.Dir, ev.Name)) {
				notify(raw)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				notify(raw) // events were lost: better one check too many
			}
		}
	}
}

// relTo returns p as a slash path relative to dir.
func relTo(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}

// fileState is what polling compares: size, modification time, and for a
// small file a hash of its content.
type fileState struct {
	size  int64
	mtime time.Time
	sum   [sha256.Size]byte
}

// scan records every matching file under dir.
func scan(dir string, match func(string) bool) map[string]fileState {
	files := map[string]fileState{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished while we looked: the next scan sees it
		}
		if d.IsDir() {
			if p != dir && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel := relTo(dir, p)
		if !match(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		st := fileState{size: info.Size(), mtime: info.ModTime()}
		if info.Mode().IsRegular() && info.Size() <= smallFile {
			if data, err := os.ReadFile(p); err == nil {
				st.sum = sha256.Sum256(data)
			}
		}
		files[rel] = st
		return nil
	})
	return files
}

func same(a, b map[string]fileState) bool {
	return maps.EqualFunc(a, b, func(x, y fileState) bool { return x.size == y.size && x.mtime.Equal(y.mtime) && x.sum == y.sum })
}

// poll scans every interval; after a change it rescans quickly until the
// folder has been quiet for a while, so the debouncer sees a burst end
// soon after it does, not an interval later.
func poll(ctx context.Context, o Options, last map[string]fileState, raw chan<- struct{}) {
	var lastChange time.Time
	t := time.NewTimer(o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := scan(o.Dir, o.Match)
		if !same(last, now) {
			last, lastChange = now, time.Now()
			notify(raw)
		}
		next := o.Interval
		if time.Since(lastChange) < 3*Quiet {
			next = min(fastScan, o.Interval)
		}
		t.Reset(next)
	}
}

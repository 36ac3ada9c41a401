package watch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"quoteflowlab.dev/kit/testenv"
)

func start(t *testing.T, dir string, poll bool) *Watcher {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := Start(ctx, Options{Dir: dir, Poll: poll, Interval: 50 * time.Millisecond,
		Match: func(rel string) bool { return strings.HasSuffix(rel, ".go") }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	if !poll && w.Mode != Events {
		t.Skipf("no file events here: %v", w.Fallback)
	}
	return w
}

func signalled(w *Watcher, within time.Duration) bool {
	select {
	case <-w.C:
		return true
	case <-time.After(within):
		return false
	}
}

// Polling sees an edit that keeps the size and the modification time:
// the content hash differs.
func TestPollSeesSameSizeSameTimeEdit(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "main.go")
	testenv.Write(t, f, "package main // aaaa\n")
	st, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	w := start(t, dir, true)
	testenv.Write(t, f, "package main // bbbb\n")
	if err := os.Chtimes(f, st.ModTime(), st.ModTime()); err != nil {
		t.Fatal(err)
	}
	if !signalled(w, 5*time.Second) {
		t.Fatal("no change seen for new content of the same size and time")
	}
}

// Only matching files count; a new folder's files do, in both modes.
func TestMatchAndNewFolders(t *testing.T) {
	inBothModes(t, func(t *testing.T, poll bool) {
		dir := t.TempDir()
		testenv.Write(t, filepath.Join(dir, "main.go"), "package main\n")
		w := start(t, dir, poll)
		testenv.Write(t, filepath.Join(dir, "notes.txt"), "not Go")
		testenv.Write(t, filepath.Join(dir, ".git", "x.go"), "hidden folder")
		if signalled(w, 500*time.Millisecond) {
			t.Fatal("a change to files that do not match was reported")
		}
		testenv.Write(t, filepath.Join(dir, "probe", "main.go"), "package main\n")
		if !signalled(w, 5*time.Second) {
			t.Fatal("a Go file in a new folder was not seen")
		}
		testenv.Write(t, filepath.Join(dir, "probe", "main.go"), "package main // edited\n")
		if !signalled(w, 5*time.Second) {
			t.Fatal("an edit in the new folder was not seen")
		}
	})
}

// A burst of writes is one signal, sent after the burst.
func TestBurstIsOneSignal(t *testing.T) {
	inBothModes(t, func(t *testing.T, poll bool) {
		dir := t.TempDir()
		f := filepath.Join(dir, "main.go")
		testenv.Write(t, f, "package main\n")
		w := start(t, dir, poll)
		var end time.Time
		for attempt := 1; ; attempt++ {
			// Each write's time is taken before it starts: the watcher
			// cannot see a write before then, so the signal is due
			// Quiet after the last write's start at the earliest (taken
			// after it, a preemption between the write and the clock
			// read made a correct watcher look early).
			last, gap := time.Now(), time.Duration(0)
			for i := range 20 {
				now := time.Now()
				testenv.Write(t, f, "package main // "+strings.Repeat("x", i)+"\n")
				gap, last = max(gap, now.Sub(last)), now
				time.Sleep(2 * time.Millisecond)
			}
			if gap < Quiet/2 {
				end = last
				break
			}
			// Writes Quiet apart are two bursts: the machine is too busy.
			if attempt == 3 {
				t.Skipf("the machine is too busy to write a burst: writes %v apart", gap)
			}
			for signalled(w, 3*Quiet+100*time.Millisecond) {
			}
		}
		select {
		case <-w.C:
			if time.Now().Before(end.Add(Quiet)) {
				t.Fatal("signalled before the burst had been quiet for Quiet")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no signal for the burst")
		}
		if signalled(w, 3*Quiet+100*time.Millisecond) {
			t.Fatal("a second signal for one burst")
		}
	})
}

// Where file events cannot be set up, polling takes over and says why.
func TestFallsBackToPolling(t *testing.T) {
	saved := newWatcher
	t.Cleanup(func() { newWatcher = saved })
	newWatcher = func() (*fsnotify.Watcher, error) { return nil, errors.New("too many open files") }
	dir := t.TempDir()
	f := filepath.Join(dir, "main.go")
	testenv.Write(t, f, "package main\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w2, err := Start(ctx, Options{Dir: dir, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if w2.Mode != Poll || w2.Fallback == nil || !strings.Contains(w2.Fallback.Error(), "too many open files") {
		t.Fatalf("mode %s, fallback %v; want poll, saying why", w2.Mode, w2.Fallback)
	}
	testenv.Write(t, f, "package main // edited\n")
	if !signalled(w2, 5*time.Second) {
		t.Fatal("the fallback saw no change")
	}
}

// inBothModes runs test as a subtest polling ("poll") and on file events
// ("events").
func inBothModes(t *testing.T, test func(t *testing.T, poll bool)) {
	for _, poll := range []bool{true, false} {
		t.Run(map[bool]string{true: "poll", false: "events"}[poll], func(t *testing.T) { test(t, poll) })
	}
}

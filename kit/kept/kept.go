// Package kept keeps directories of build outputs from one run of the
// course's own test suite to the next, in the user's cache directory
// (quoteflowlab/test-tools), so that `go build -o` into them finds a binary
// up to date and does not link it again: go itself decides, from the
// binary's build ID, whether the source, the flags and every dependency
// are what the binary was linked from, so what runs is always what the
// source says; only the links are saved.
//
// A directory is taken by one process at a time: Take renames it to a name
// of its own, and the function it returns renames it back. Two test runs at
// once never share one: the second starts from an empty directory.
package kept

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Root is where kept directories live: <user cache dir>/quoteflowlab/test-tools.
func Root() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(base, "quoteflowlab", "test-tools"), nil
}

// staleAfter is how long a taken directory left by a killed run stays.
const staleAfter = 24 * time.Hour

// Take takes the directory kept under name for this process alone and
// returns its path and the function that hands it back. It returns "" (and
// a no-op) where nothing can be kept; the caller then builds afresh.
func Take(name string) (dir string, give func()) {
	root, err := Root()
	if err != nil {
		return "", func() {}
	}
	home := filepath.Join(root, name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", func() {}
	}
	// Taken directories left by a run that was killed: gone a day after
	// they were taken (the time is in the name, so one in use is never
	// mistaken for an old one, however old its files).
	old, _ := filepath.Glob(home + ".taken-*-*")
	for _, o := range old {
		_, at, _ := strings.Cut(strings.TrimPrefix(o, home+".taken-"), "-")
		if ns, err := strconv.ParseInt(at, 10, 64); err == nil && time.Since(time.Unix(0, ns)) > staleAfter {
			os.RemoveAll(o)
		}
	}
	mine := fmt.Sprintf("%s.taken-%d-%d", home, os.Getpid(), time.Now().UnixNano())
	if err := os.Rename(home, mine); err != nil { // none kept yet, or another run holds it
		if err := os.Mkdir(mine, 0o755); err != nil {
			return "", func() {}
		}
	}
	return mine, func() {
		if os.Rename(mine, home) != nil { // another run handed its copy back first
			os.RemoveAll(mine)
		}
	}
}

// TakeAs is Take, with the directory moved to dst (which must not exist,
// on the same file system) while it is taken: for a caller whose layout
// fixes the path. Where dst cannot hold it, dst is made empty and nothing
// is kept.
func TakeAs(name, dst string) (give func(), err error) {
	dir, handBack := Take(name)
	if dir != "" {
		if err := os.Rename(dir, dst); err == nil {
			return func() {
				if os.Rename(dst, dir) == nil {
					handBack()
				} else {
					os.RemoveAll(dir)
				}
			}, nil
		}
		handBack()
	}
	return func() {}, os.MkdirAll(dst, 0o755)
}

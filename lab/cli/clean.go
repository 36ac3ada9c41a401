package cli

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"quoteflowlab.dev/kit/course"
)

// runClean implements `lab clean`: remove lab check's build cache. Progress
// (state.json) is kept.
func runClean(args []string, stdout, stderr io.Writer) int {
	f := form{name: "clean", usage: "   (removes the build cache under .lab/cache; your progress is kept)", state: true, wrong: "takes no arguments"}
	c, code, ok := f.parse(f.flags(stderr), args, stderr)
	if !ok {
		return code
	}
	cache := filepath.Join(course.StateDir(c.root), "cache")
	size := dirSize(cache)
	if err := os.RemoveAll(cache); err != nil {
		return failed(stderr, "lab clean", err)
	}
	fmt.Fprintf(stdout, "removed %s (%.1f MB); progress in %s is kept\n", cache, float64(size)/1e6, filepath.Join(course.StateDir(c.root), "state.json"))
	return 0
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

package grade

import (
	"crypto/rand"
	"os"
	"path/filepath"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/runner"
)

// Key files: the secrets of a grading method, kept between checks in the
// cache and never on disk while an answer runs.
const (
	// SchemataKey keys the mutant schemata's selectors (so that the same
	// answer builds the same schema, which the build cache serves) and the
	// stamps of the mutation method's builds.
	SchemataKey = "schemata.key"
	// ToolsKey keys the stamps of the measured method's builds; it is kept
	// in each answer's folder of built tools.
	ToolsKey = "tools.key"
)

// TakeKey takes the key called name out of the folder cacheDir: it is read
// and removed, and kept in memory until PutKey writes it back when the
// check is done, so an answer never finds it. A missing key (a first check,
// a check that was killed, two at once) means a new one: only the caches
// lose (a schema built anew, a binary whose stamp no longer passes is
// handed to go build).
func TakeKey(cacheDir, name string) []byte {
	file := filepath.Join(cacheDir, name)
	data, err := os.ReadFile(file)
	os.Remove(file)
	if err == nil && len(data) >= 16 {
		return data
	}
	key := make([]byte, 32)
	rand.Read(key)
	return key
}

// NewKey is a fresh random key, for one check.
func NewKey() []byte {
	key := make([]byte, 32)
	rand.Read(key)
	return key
}

// PutKey writes the key back once no answer runs.
func PutKey(cacheDir, name string, key []byte) {
	if os.MkdirAll(cacheDir, 0o755) == nil {
		_ = os.WriteFile(filepath.Join(cacheDir, name), key, 0o600)
	}
}

// Shelf is the build shelf of a check whose key is key: builds whose
// inputs did not change since it built them do not start the go command
// (see runner.Shelf). The course's state folder is never read as an input.
func Shelf(root string, key []byte) *runner.Shelf {
	skip := []string{}
	if abs, err := filepath.Abs(course.StateDir(root)); err == nil {
		skip = append(skip, abs)
	}
	return &runner.Shelf{Key: key, Skip: skip}
}

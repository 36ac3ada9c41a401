package grade

import (
	"crypto/rand"
	"os"
	"path/filepath"
)

// SchemataKey names the key file of the mutant schemata's selectors, kept
// between `lab verify --killset` runs in the cache (so that the same
// answer builds the same schema, which the build cache serves) and never
// on disk while an answer runs. lab check makes a key of its own for
// every check.
const SchemataKey = "schemata.key"

// TakeKey takes the key called name out of the folder cacheDir: it is read
// and removed, and kept in memory until PutKey writes it back when the
// check is done, so an answer never finds it. A missing key (a first check,
// a check that was killed, two at once) means a new one: only the build
// cache loses (a schema compiled anew).
func TakeKey(cacheDir, name string) []byte {
	file := filepath.Join(cacheDir, name)
	data, err := os.ReadFile(file)
	os.Remove(file)
	if err == nil && len(data) >= 16 {
		return data
	}
	return NewKey()
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

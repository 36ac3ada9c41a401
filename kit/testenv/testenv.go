// Package testenv is what the course's tests share about their
// surroundings: the repository root, and a file written with its folders.
package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"quoteflowlab.dev/kit/course"
)

// Root is the course's repository root above the working directory.
func Root(t testing.TB) string {
	t.Helper()
	root, err := course.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// Write writes body to the file at path, making its folders.
func Write(t testing.TB, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

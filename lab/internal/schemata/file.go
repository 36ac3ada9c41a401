package schemata

import (
	"os"
	"path/filepath"
)

func readFile(root, slashPath string) ([]byte, error) {
	return os.ReadFile(filepath.Join(root, filepath.FromSlash(slashPath)))
}

package check

import (
	"encoding/json"
	"path/filepath"
)

// writeOverlayFile writes ov as dir/overlay.json.
func writeOverlayFile(dir string, ov Overlay) (string, error) {
	data, err := json.MarshalIndent(ov, "", "  ")
	if err != nil {
		return "", err
	}
	file, err := filepath.Abs(filepath.Join(dir, "overlay.json"))
	if err != nil {
		return "", err
	}
	return file, WriteIfChanged(file, data)
}

// WriteOverlayFile writes ov as dir/overlay.json and returns its path.
func WriteOverlayFile(dir string, ov Overlay) (string, error) { return writeOverlayFile(dir, ov) }

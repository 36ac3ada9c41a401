//go:build !linux

package grade

import "io/fs"

// fileID is never known here: every file is read each time.
type fileID struct{}

func (fileID) known() bool { return false }

func statID(fs.FileInfo) fileID { return fileID{} }

//go:build !linux

package fileid

import "io/fs"

// ID is never known here: callers read a file again each time.
type ID struct{}

// Known is always false here.
func (ID) Known() bool { return false }

// Of is the zero ID here.
func Of(fs.FileInfo) ID { return ID{} }

// String is always "" here.
func (ID) String() string { return "" }

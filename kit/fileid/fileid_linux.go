package fileid

import (
	"fmt"
	"io/fs"
	"syscall"
)

// ID is what a file's status says of its content: device, inode, size,
// mode, modification and change time. Any write, rename over the file,
// chmod or touch sets the change time to the present, which no process can
// set back (os.Chtimes sets the modification time, and the change time to
// now); so a file whose ID is what it was holds what it held then.
type ID struct {
	dev, ino, size      uint64
	mode                uint32
	mtimeSec, mtimeNsec int64
	ctimeSec, ctimeNsec int64
}

// Known says whether id says anything: false for the zero ID, and always
// where Of cannot read a file's change time.
func (id ID) Known() bool { return id.ctimeSec != 0 || id.ctimeNsec != 0 }

// Of is the ID of the file info describes (from os.Stat or os.Lstat).
func Of(info fs.FileInfo) ID {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return ID{}
	}
	return ID{
		dev: uint64(st.Dev), ino: uint64(st.Ino), size: uint64(st.Size), mode: uint32(st.Mode),
		mtimeSec: int64(st.Mtim.Sec), mtimeNsec: int64(st.Mtim.Nsec),
		ctimeSec: int64(st.Ctim.Sec), ctimeNsec: int64(st.Ctim.Nsec),
	}
}

// String is the ID as text, for a hash; "" when not known.
func (id ID) String() string {
	if !id.Known() {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%o:%d.%09d:%d.%09d", id.dev, id.ino, id.size, id.mode, id.mtimeSec, id.mtimeNsec, id.ctimeSec, id.ctimeNsec)
}

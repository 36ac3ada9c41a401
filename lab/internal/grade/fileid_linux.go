package grade

import (
	"io/fs"
	"syscall"
)

// fileID is what a file's status says of its content: any change to the
// file sets ctime to the present.
type fileID struct {
	dev, ino, size       uint64
	mode                 uint32
	mtimeNsec, ctimeNsec int64
	mtimeSec, ctimeSec   int64
}

func (id fileID) known() bool { return id.ctimeSec != 0 || id.ctimeNsec != 0 }

func statID(info fs.FileInfo) fileID {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{
		dev: uint64(st.Dev), ino: uint64(st.Ino), size: uint64(st.Size), mode: uint32(st.Mode),
		mtimeSec: int64(st.Mtim.Sec), mtimeNsec: int64(st.Mtim.Nsec),
		ctimeSec: int64(st.Ctim.Sec), ctimeNsec: int64(st.Ctim.Nsec),
	}
}

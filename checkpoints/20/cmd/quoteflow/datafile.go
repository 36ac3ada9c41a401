package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// openData opens the bbolt file at path and reads all of it once, so a
// damaged file (cut short by a full disk or a bad copy, or overwritten) is
// refused here, in one sentence, rather than crash the server on first use:
// bbolt maps the file into memory and trusts it, and a page past its end is
// a SIGBUS, a garbled one a panic or a SIGSEGV.
func openData(path string) (db *bolt.DB, err error) {
	// A fault on the mapped file becomes a panic this goroutine recovers.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if db != nil {
				db.Close()
			}
			db, err = nil, damaged(path, fmt.Sprint("a page could not be read: ", r))
		}
	}()
	db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, fmt.Errorf("%s is in use (is another quoteflow running on it? Stop it or pick another --data)", path)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrVersionMismatch):
		return nil, damaged(path, err.Error())
	case err != nil:
		return nil, err
	}
	if err := readAll(db, path); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// readAll checks that the file holds every page its header counts, then
// reads every key and value of every bucket.
func readAll(db *bolt.DB, path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	return db.View(func(tx *bolt.Tx) error {
		if need := tx.Size(); info.Size() < need {
			return damaged(path, fmt.Sprintf("it is %d bytes long, but its pages need %d", info.Size(), need))
		}
		var walk func(b *bolt.Bucket) error
		walk = func(b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				if v == nil {
					if inner := b.Bucket(k); inner != nil {
						return walk(inner)
					}
				}
				return nil
			})
		}
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error { return walk(b) })
	})
}

// damagedError is a data file that cannot be used as it is.
type damagedError struct{ path, why string }

func (e *damagedError) Error() string {
	return fmt.Sprintf("%s is damaged (%s): move it aside or restore it from a backup, then start again (a new empty file is made in its place)", e.path, e.why)
}

func damaged(path, why string) error { return &damagedError{path: path, why: why} }

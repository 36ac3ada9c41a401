// Package fileid tells, from a file's status alone, that the file still
// holds what it held when it was last read (Linux; elsewhere it never
// tells, and callers read the file again).
package fileid

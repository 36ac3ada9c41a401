//go:build !unix

package runner

func unixChild(string) bool { return false }

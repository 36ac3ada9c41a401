//go:build !unix && !windows

package runner

func endWithParent() {}

func parentGone() <-chan struct{} { return nil }

//go:build !linux

package runner

// BecomeSubreaper does nothing outside Linux: there, a child that starts
// a process group or session of its own can outlive the run (only the
// child's own group is killed).
func BecomeSubreaper() bool { return false }

// SweepSupported says whether Sweep can find what a run left behind.
const SweepSupported = false

func sweep(*tracked) int { return 0 }

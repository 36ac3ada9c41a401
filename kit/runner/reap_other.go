//go:build !linux

package runner

// BecomeSubreaper does nothing outside Linux: there, a child that starts
// a process group or session of its own can outlive the run (only the
// child's own group is killed).
func BecomeSubreaper() bool { return false }

// SweepSupported says whether Sweep can find what a run left behind.
const SweepSupported = false

func sweep(*tracked) (killed, left int, names []string) { return 0, 0, nil }

// groupLeft says whether anything still runs in process group pgid: 1 when
// something does (it cannot be counted here), else 0.
func groupLeft(pgid int) int {
	if groupAlive(pgid) {
		return 1
	}
	return 0
}

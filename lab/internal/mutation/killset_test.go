package mutation

import (
	"testing"

	"quoteflowlab.dev/kit/runner"
)

// What the kill-set records of a failure is comparable from run to run,
// names a panic by its own line, and tells a timing failure (which load
// alone can make) from a wrong status or count (which it cannot).
func TestKillSetReadsFailures(t *testing.T) {
	for _, c := range []struct {
		out, says string
		timed     bool
	}{
		{"E14 failed: flaky: boreal was called 1 times, want exactly 2\n", "E14 failed: flaky: boreal was called 1 times, want exactly 2", false},
		{"E16 failed (jitter): line 0 took 1.234s on 127.0.0.1:43121 (ElapsedMS:0.256 Best:0x1f0249926f80)\n", "E16 failed (jitter): line 0 took DUR on LOOPBACK (ElapsedMS:NUM Best:PTR)", true},
		{"E17 failed (renewal): taking 6 free slots, got 0: context deadline exceeded\n", "E17 failed (renewal): taking 6 free slots, got 0: context deadline exceeded", true},
		{"goroutine 1 [running]:\npanic: semaphore: released more than held\n\ngoroutine 7:\nmain.main()\n\t/x/main.go:210 +0xa5\n", "panic: semaphore: released more than held", false},
		{"fatal error: sync: unlock of unlocked mutex\n\ngoroutine 9:\nsync/waitgroup.go:238 +0x1f\n", "fatal error: sync: unlock of unlocked mutex", false},
	} {
		res := runner.Result{Output: c.out, ExitCode: 1}
		if got := says(res); got != c.says {
			t.Errorf("says(%q) = %q, want %q", c.out, got, c.says)
		}
		if got := timed(res); got != c.timed {
			t.Errorf("timed(%q) = %t, want %t", c.out, got, c.timed)
		}
	}
	if !sameWords(map[string]int{"E17 failed: got 0: context deadline exceeded": 3}, 3) {
		t.Error("three held-back failures with one line, word for word, are not the mutant's")
	}
	if sameWords(map[string]int{"took 1.2s": 1, "took 1.4s": 1}, 2) || sameWords(map[string]int{"x": 1}, 1) {
		t.Error("failures that differ, or a single one, count as the mutant's")
	}
}

package cli

import (
	"strings"
	"testing"
)

// lab watch's usage errors exit 2, in its own words (the check's request
// is completed and accepted as lab check's), before anything is watched or
// built.
func TestWatchUsage(t *testing.T) {
	for _, tc := range []struct {
		args string
		code int
		want []string
	}{
		{"watch E12 E13", 2, []string{"lab watch: want at most one exercise", "usage: lab watch [ENN]"}},
		{"watch E12 --poll-interval 1ms", 2, []string{"--poll-interval must be between 10ms and 1m"}},
		{"watch E12 --timeout 0s", 2, []string{"--timeout must be positive"}},
		{"watch E99", 2, []string{`lab watch: unknown exercise "E99"`, "usage: lab watch [ENN]"}},
		{"watch E12 --answer /", 2, []string{"lab watch: answer / has no .go files"}},
		{"watch --frobnicate", 2, []string{"flag provided but not defined: -frobnicate"}},
		{"watch -h", 0, []string{"usage: lab watch [ENN]", "-poll-interval", "events never arrive", "Ctrl-C stops"}},
	} {
		stderr := usageExits(t, tc.args, tc.code, tc.want...)
		if strings.Contains(stderr, "lab check:") || strings.Contains(stderr, "usage: lab check") {
			t.Errorf("lab %s: speaks of lab check: %q", tc.args, stderr)
		}
	}
}

func TestHelpListsWatch(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := Main([]string{"help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "\n  watch     check an exercise again on every save") {
		t.Fatalf("lab help: exit %d, output %q; want watch listed", code, stdout.String())
	}
}

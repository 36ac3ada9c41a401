package testscripts

import (
	"runtime/debug"
	"slices"
	"strings"
	"testing"
)

// What the scripts build (a checkpoint's suite, its vet, quoteflow, an
// answer) is built with -trimpath exactly when go test built this binary
// with it, so the standard library and the modules compile once a run.
func TestScriptsBuildAsTheSuiteWasBuilt(t *testing.T) {
	self, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("this test binary has no build info")
	}
	want := slices.ContainsFunc(self.Settings, func(s debug.BuildSetting) bool { return s.Key == "-trimpath" && s.Value == "true" })
	for _, host := range []string{"", "-mod=mod", "-mod=mod -trimpath"} {
		got := trimpathFlags([]string{"GOCACHE=/c", "GOFLAGS=" + host})
		if !strings.HasPrefix(got, host) {
			t.Errorf("host GOFLAGS %q became %q: the host's flags must be kept", host, got)
		}
		trimmed := strings.Contains(got, "-trimpath")
		if host == "-mod=mod -trimpath" {
			want := true // the host asked for it
			if trimmed != want {
				t.Errorf("host GOFLAGS %q became %q", host, got)
			}
			continue
		}
		if trimmed != want {
			t.Errorf("host GOFLAGS %q became %q; this binary was built with -trimpath=%v", host, got, want)
		}
	}
}

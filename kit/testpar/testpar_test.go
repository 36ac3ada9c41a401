package testpar

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// Run plain, it checks the default (3 per CPU, at least 4); run with
// -parallel N, that N is left alone.
func TestPerCPUSetsParallelUnlessGiven(t *testing.T) {
	f := flag.Lookup("test.parallel")
	if f == nil {
		t.Fatal("no test.parallel flag")
	}
	before := f.Value.String()
	given := PerCPU(3, 4)
	got := f.Value.String()
	if given["test.parallel"] {
		if got != before {
			t.Errorf("-parallel %s was given, PerCPU changed it to %s", before, got)
		}
		return
	}
	if want := strconv.Itoa(max(4, 3*runtime.GOMAXPROCS(0))); got != want {
		t.Errorf("test.parallel = %s, want %s (3 per CPU, at least 4)", got, want)
	}
}

// Package testpar sets how many of a test package's parallel tests run at
// once when the command line does not say: for packages whose tests mostly
// wait (a browser, a child process, a lease's TTL, a latency they asked
// for), where go test's default of one per CPU leaves the CPUs idle.
package testpar

import (
	"flag"
	"runtime"
	"strconv"
)

// PerCPU parses the test flags and, unless the command line gave
// -parallel, sets it to perCPU tests per CPU, and at least least. It
// reports the flags the command line set, by name ("test.count", ...).
// Call it from TestMain, before m.Run.
func PerCPU(perCPU, least int) (given map[string]bool) {
	flag.Parse()
	given = map[string]bool{}
	flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["test.parallel"] {
		n := max(least, perCPU*runtime.GOMAXPROCS(0))
		if err := flag.Set("test.parallel", strconv.Itoa(n)); err != nil {
			panic(err) // only without the testing flags registered: not from TestMain
		}
	}
	return given
}

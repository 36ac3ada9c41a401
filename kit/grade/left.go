package grade

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/runner"
)

// LeftBehind adds up what the runs of one check left running when they
// ended: any process, in the run's process group or in a group or session
// of its own. One is enough to fail the check: an answer (or a tool) must
// wait for what it starts. Safe for runs at once.
type LeftBehind struct {
	mu sync.Mutex
	// Processes is how many processes were left, over every run; Runs how
	// many runs left any; Left how many of them still ran after the sweep's
	// bound (a chain that starts processes as fast as they are killed).
	Processes, Runs, Left int
	// names counts the command names of the processes killed, to say what
	// was left.
	names map[string]int
}

// Add counts what one run left.
func (l *LeftBehind) Add(res runner.Result) {
	if res.Orphans == 0 && res.Left == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.Processes += res.Orphans + res.Left
	l.Runs++
	l.Left += res.Left
	for _, n := range res.OrphanNames {
		if l.names == nil {
			l.names = map[string]int{}
		}
		if n == "" {
			n = "?"
		}
		l.names[n]++
	}
}

// what names the commands left, the most frequent first: "sleep ×15, sh".
func (l *LeftBehind) what() string {
	type named struct {
		name string
		n    int
	}
	var all []named
	for name, n := range l.names {
		all = append(all, named{name, n})
	}
	slices.SortFunc(all, func(a, b named) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.name, b.name))
	})
	var parts []string
	for i, x := range all {
		if i == 5 {
			parts = append(parts, "…")
			break
		}
		if x.n > 1 {
			parts = append(parts, fmt.Sprintf("%s ×%d", x.name, x.n))
		} else {
			parts = append(parts, x.name)
		}
	}
	return strings.Join(parts, ", ")
}

// Summary is the report's sentence: how many, in how many runs, and
// whether lab could kill them all.
func (l *LeftBehind) Summary(who string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	runs := msg.T("left.runs_one")
	if l.Runs > 1 {
		runs = msg.T("left.runs", l.Runs)
	}
	if !runner.SweepSupported {
		return msg.T("left.group_only", who, runs)
	}
	what := ""
	if w := l.what(); w != "" {
		what = msg.T("left.what", w)
	}
	s := msg.T("left.left", who, l.Processes, what, runs)
	if l.Left == 0 {
		return s + msg.T("left.killed_all")
	}
	return s + msg.T("left.killed_some", l.Processes-l.Left, l.Left, runner.SweepBound)
}

// Package cli implements the lab command. Main is shared by lab/main.go and
// by the testscript suite, which registers it as the `lab` command so scripts
// need no build step.
package cli

import (
	"fmt"
	"io"
	"sort"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/grade/mutation"
	"quoteflowlab.dev/lab/internal/runner"
)

// A command is one lab subcommand. run returns the process exit code:
// 0 success, 1 failure, 2 usage error.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is the table of contents of the lab command.
var commands = map[string]command{
	"provider": {"run the provider lab (suppliers, partner, blackhole)", runProvider},
	"list":     {"list lessons and exercises with your progress", runList},
	"check":    {"check an exercise answer against its checkpoint, mutants and wheats", runCheck},
	"clean":    {"remove lab check's build cache (progress is kept)", runClean},
	"hint":     {"print an exercise's hint", runHint},
	"diff":     {"show what a lesson changed between two checkpoints", runDiff},
	"show":     {"show one mutant's, wheat's or broken variant's edit as a diff", runShow},
	"verify":   {"instructor: run the whole course suite", runVerify},
	"stats":    {"print a running provider lab's counters", runStats},
	"reset":    {"reset a running provider lab's counters", runReset},
	"redis":    {"serve an embedded Redis stand-in on 127.0.0.1:6379 (lesson 17)", runRedis},
	"watch":    {"check an exercise again on every save (file events, or --poll)", runWatch},

	"load": {"send QuoteFlow quotes or baskets at a rate or concurrency; latency and the provider's counts", runLoad},
	"demo": {"run a lesson's experiment end to end and print its table (lab demo --help lists them)", runDemo},

	"waterfall": {"draw one request's attempts, as a running provider lab saw them, as an SVG", runWaterfall},
}

// Main runs the lab command with args (without the program name) and
// returns the exit code. The process ends with the program that started
// it (runner.EndWithParent): under go run, lab is go run's child, and go
// run passes no signal on.
func Main(args []string, stdout, stderr io.Writer) int {
	runner.EndWithParent()
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "lab: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	return cmd.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: lab <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run `lab <command> -h` for a command's flags.")
	fmt.Fprintln(w, "Exit codes: 0 success (for check: the answer passed), 1 failure, 2 usage error,")
	fmt.Fprintln(w, "3 (check, verify) inconclusive: the machine was too busy to judge a timed check or a")
	fmt.Fprintln(w, "page's figures.")
	fmt.Fprintln(w, "`go run ./lab` prints \"exit status N\" and itself exits 1 for any failure; for the")
	fmt.Fprintln(w, "exact code, run the installed command: `go install ./lab`, then `lab <command>`.")
}

// Lesson returns the manifest's lesson of an exercise name ("E14"), for the
// testscripts, which cannot import the manifest's package.
func Lesson(exercise string) (course.Lesson, error) { return course.ParseExercise(exercise) }

// GeneratedRequired is how many generated mutants lab check requires of an
// answer to exercise l (for the testscripts, which derive their counts).
func GeneratedRequired(root string, l course.Lesson) (int, error) {
	vs, err := mutation.Generated(root, l)
	return len(vs), err
}

// GeneratedWheats is how many generated wheats lab check requires an
// answer to exercise l to pass (for the testscripts).
func GeneratedWheats(root string, l course.Lesson) (int, error) {
	vs, err := mutation.GeneratedWheats(root, l)
	return len(vs), err
}

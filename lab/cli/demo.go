package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"quoteflowlab.dev/kit/machine"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/lab/internal/demo"
)

// runDemo runs a lesson page's experiments end to end.
func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("demo", "NN [NAME]", stderr)
	help, lesson := demoHelpAsked(args)
	fs.Usage = func() {
		w := stderr // a usage error's; asked for, the help is the answer: stdout
		if help {
			w = stdout
		}
		fmt.Fprintln(w, "usage: lab demo NN [NAME]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Runs an experiment a lesson page shows, end to end: it builds the checkpoint (and the mutant")
		fmt.Fprintln(w, "it compares with), starts the provider lab, the QuoteFlow processes and a redis-server (the")
		fmt.Fprintln(w, "embedded stand-in when there is none) on free loopback ports, prints the page's table, and")
		fmt.Fprintln(w, "stops everything it started, on Ctrl-C, a hangup or a closed output too (on Linux, even when")
		fmt.Fprintln(w, "lab is killed outright). Without NAME, every demo of the lesson, in page order.")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "demos:")
		for _, d := range demo.All {
			if lesson == 0 || d.Lesson == lesson {
				fmt.Fprintf(w, "  lab demo %d %-16s %s\n", d.Lesson, d.Name, d.Summary)
			}
		}
	}
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		return usageError(fs, stderr, "want a lesson number and, optionally, a demo name")
	}
	lesson, err := strconv.Atoi(pos[0])
	name := ""
	if len(pos) == 2 {
		name = pos[1]
	}
	demos := demo.Find(lesson, name)
	if err != nil || len(demos) == 0 {
		return usageError(fs, stderr, "no demo %q", fmt.Sprint(pos))
	}
	root, ok := findRoot("demo", stderr)
	if !ok {
		return 1
	}
	ctx, stop := stopContext()
	defer stop()
	stdout, stderr = stopOnClosedOutput(stop, stdout, stderr)
	for i, d := range demos {
		if ctx.Err() != nil {
			return 1
		}
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		if len(demos) > 1 {
			fmt.Fprintf(stdout, "$ lab demo %d %s\n", d.Lesson, d.Name)
		}
		if _, err := Demo(ctx, root, d, stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "lab demo %d %s: %v\n", d.Lesson, d.Name, err)
			return 1
		}
	}
	return 0
}

// demoHelpAsked reports whether args ask for the help (-h, --help), and the
// lesson of `lab demo NN --help` when NN has demos (0: every lesson's).
func demoHelpAsked(args []string) (help bool, lesson int) {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--h", "--help":
			help = true
		default:
			if n, err := strconv.Atoi(a); err == nil && lesson == 0 && len(demo.Find(n, "")) > 0 {
				lesson = n
			}
		}
	}
	return help, lesson
}

// Demo runs one demo in a fresh environment that it stops afterwards. It
// returns how busy the machine was while the experiment ran (after the
// builds), and says on log when the machine held it back: its timings are
// then the machine's, not the code's.
func Demo(ctx context.Context, root string, d demo.Demo, stdout, log io.Writer) (report.Machine, error) {
	env, err := demo.NewEnv(root, log)
	if err != nil {
		return report.Machine{}, err
	}
	defer env.Close()
	err = d.Run(ctx, env, stdout)
	m := env.Machine()
	if err != nil {
		if ctx.Err() != nil {
			return m, fmt.Errorf("interrupted; everything it started is stopped")
		}
		return m, err
	}
	if m.Busy {
		fmt.Fprintf(log, "lab demo %d %s: the machine was busy while it ran: %s;\n"+
			"its timings are the machine's, not the code's, and may be off the page's: run it again when it is quieter\n", d.Lesson, d.Name, describeDemo(m))
	}
	return m, nil
}

// describeDemo says how busy the machine was, and how much it held lab back.
func describeDemo(m report.Machine) string {
	return fmt.Sprintf("%s; lab's threads waited for a CPU %.0f%% of the run", machine.Describe(m), 100*m.MaxStarved)
}

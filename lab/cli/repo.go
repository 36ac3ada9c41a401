package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"quoteflowlab.dev/lab/internal/course"
)

// findRoot returns the repository root above the working directory, or
// prints why there is none.
func findRoot(cmd string, stderr io.Writer) (string, bool) {
	wd, err := os.Getwd()
	if err == nil {
		var root string
		if root, err = course.FindRoot(wd); err == nil {
			return root, true
		}
	}
	fmt.Fprintf(stderr, "lab %s: %v\n", cmd, err)
	return "", false
}

// newFlags returns a flag set for a subcommand whose errors go to stderr.
func newFlags(cmd, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lab "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: lab %s %s\n", cmd, args)
		fs.PrintDefaults()
	}
	return fs
}

// noteState adds to a command's usage where progress is kept.
func noteState(fs *flag.FlagSet) {
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprintf(fs.Output(), "Progress is kept in .lab/state.json at the repository root (%s=DIR keeps it in DIR).\n", course.StateDirEnv)
	}
}

// parseArgs parses flags placed before, between or after the positional
// arguments (`lab check E14 --json` and `lab check --json E14` both work)
// and returns the positional ones. The code is the exit code to return when
// ok is false: 0 after -h, 2 for a bad flag.
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0, false
			}
			return nil, 2, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// usageError prints a usage problem and the command's usage; exit code 2.
func usageError(fs *flag.FlagSet, stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	fs.Usage()
	return 2
}

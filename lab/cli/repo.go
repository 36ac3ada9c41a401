package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
)

// findRoot returns the repository root above the working directory, or
// prints why there is none.
func findRoot(cmd string, stderr io.Writer) (string, bool) {
	root, err := course.FindRoot(".")
	if err != nil {
		fmt.Fprintf(stderr, "lab %s: %v\n", cmd, err)
		return "", false
	}
	return root, true
}

// A form is what a command takes, declared once: its usage after "lab
// NAME", whether it says where progress is kept, how many positional
// arguments it wants (wrong: what to say otherwise), whether the first names
// an exercise.
type form struct {
	name, usage string
	state       bool
	min, max    int
	wrong       string
	exercise    bool
}

// A call is a command's arguments as its form parsed them.
type call struct {
	pos    []string
	root   string        // the repository root
	lesson course.Lesson // with form.exercise: the lesson of pos[0]
}

// flags is the command's flag set (its own flags go on it before parse).
func (f form) flags(stderr io.Writer) *flag.FlagSet {
	fs := newFlags(f.name, f.usage, stderr)
	if f.state {
		noteState(fs)
	}
	return fs
}

// parse parses args with fs, checks the number of positional arguments,
// finds the repository root and the exercise's lesson; else the exit code,
// after saying why.
func (f form) parse(fs *flag.FlagSet, args []string, stderr io.Writer) (c call, code int, ok bool) {
	if c.pos, code, ok = parseArgs(fs, args); !ok {
		return c, code, false
	}
	if len(c.pos) < f.min || len(c.pos) > f.max {
		return c, usageError(fs, stderr, "%s", msg.T(f.wrong)), false
	}
	if c.root, ok = findRoot(f.name, stderr); !ok {
		return c, 1, false
	}
	if f.exercise {
		c.lesson, code, ok = findLesson(fs, c.root, c.pos[0], stderr)
	}
	return c, code, ok
}

// findLesson returns the lesson of an exercise name in the course under
// root: an unknown exercise is a usage error (exit 2), a lesson.toml lab
// cannot read exit 1.
func findLesson(fs *flag.FlagSet, root, name string, stderr io.Writer) (course.Lesson, int, bool) {
	l, err := course.Find(root, name)
	switch {
	case errors.Is(err, course.ErrUnknownExercise):
		return l, usageError(fs, stderr, "%v", err), false
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return l, 1, false
	}
	return l, 0, true
}

// loadLessons returns the course's lessons under root, or says why not.
func loadLessons(cmd, root string, stderr io.Writer) ([]course.Lesson, bool) {
	ls, err := course.Load(root)
	if err != nil {
		fmt.Fprintf(stderr, "lab %s: %v\n", cmd, err)
		return nil, false
	}
	return ls, true
}

// newFlags returns a flag set for a subcommand whose errors go to stderr.
func newFlags(cmd, args string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("lab "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, msg.T("flags.usage", cmd, args))
		printDefaults(fs, stderr)
	}
	return fs
}

// printDefaults is fs.PrintDefaults in the language of lab's messages:
// the flags' own texts are messages already; flag's "(default X)" is
// said in that language too.
func printDefaults(fs *flag.FlagSet, w io.Writer) {
	if msg.Current() == msg.English {
		fs.PrintDefaults()
		return
	}
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	fmt.Fprint(w, defaultRE.ReplaceAllString(b.String(), msg.T("flags.default")))
}

var defaultRE = regexp.MustCompile(`(?m) \(default (.*)\)$`)

// noteState adds to a command's usage where progress is kept.
func noteState(fs *flag.FlagSet) {
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(fs.Output(), msg.T("flags.state", course.StateDirEnv))
	}
}

// parseArgs parses flags placed before, between or after the positional
// arguments (`lab check E14 --json` and `lab check --json E14` both work)
// and returns the positional ones. The code is the exit code to return when
// ok is false: 0 after -h, 2 for a bad flag.
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, code int, ok bool) {
	for {
		if err := parse(fs, args); err != nil {
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

// parse is fs.Parse, with flag's complaint said in the language of lab's
// messages: in English, flag's own line; otherwise lab finds what is wrong
// with the first bad argument itself (flag's errors carry no type).
func parse(fs *flag.FlagSet, args []string) error {
	if msg.Current() == msg.English {
		return fs.Parse(args)
	}
	out := fs.Output()
	fs.SetOutput(io.Discard)
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	if err == nil {
		return nil
	}
	if !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(out, "%s\n", flagProblem(fs, args))
	}
	fs.Usage()
	return err
}

// flagProblem says, as a message, what is wrong with the first flag of
// args that fs rejects.
func flagProblem(fs *flag.FlagSet, args []string) string {
	for i, a := range args {
		if a == "--" || len(a) < 2 || a[0] != '-' {
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if name == "" || strings.HasPrefix(name, "=") || strings.HasPrefix(a, "---") {
			return msg.T("flags.bad_syntax", a)
		}
		f := fs.Lookup(name)
		if f == nil {
			return msg.T("flags.unknown", name)
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			if hasValue {
				if _, err := strconv.ParseBool(value); err != nil {
					return msg.T("flags.bad_value", value, name)
				}
			}
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return msg.T("flags.needs_value", name)
			}
			value = args[i+1]
		}
		if err := probe(f, value); err != nil {
			return msg.T("flags.bad_value", value, name)
		}
	}
	return msg.T("flags.bad_args", strings.Join(args, " "))
}

// probe sets f to v, to learn whether v is valid (the command stops on a
// bad flag, so the value set is never used), and puts back what it was.
func probe(f *flag.Flag, v string) error {
	saved := f.Value.String()
	err := f.Value.Set(v)
	_ = f.Value.Set(saved)
	return err
}

// failed says err as command cmd's ("lab show: ...") on stderr; exit code 1.
func failed(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", cmd, err)
	return 1
}

// usageError prints a usage problem and the command's usage; exit code 2.
func usageError(fs *flag.FlagSet, stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	fs.Usage()
	return 2
}

// Package cli is the lab command: its subcommands, their flags, usage errors
// and output. Main is shared by lab/main.go and by the testscript suite,
// which registers it as the `lab` command so scripts need no build step.
package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/lab/internal/mutation"
)

// A command is one lab subcommand. run returns the process exit code:
// 0 success, 1 failure, 2 usage error.
type command struct {
	summary string // a message ID
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands is the table of contents of the lab command.
var commands = map[string]command{
	"provider": {"cmd.provider", runProvider},
	"list":     {"cmd.list", runList},
	"check":    {"cmd.check", runCheck},
	"clean":    {"cmd.clean", runClean},
	"hint":     {"cmd.hint", runHint},
	"diff":     {"cmd.diff", runDiff},
	"show":     {"cmd.show", runShow},
	"verify":   {"cmd.verify", runVerify},
	"stats":    {"cmd.stats", runStats},
	"reset":    {"cmd.reset", runReset},
	"redis":    {"cmd.redis", runRedis},
	"watch":    {"cmd.watch", runWatch},

	"load": {"cmd.load", runLoad},
	"demo": {"cmd.demo", runDemo},

	"waterfall": {"cmd.waterfall", runWaterfall},
}

// Main runs the lab command with args (without the program name) and
// returns the exit code. The process ends with the program that started
// it (runner.EndWithParent): under go run, lab is go run's child, and go
// run passes no signal on.
func Main(args []string, stdout, stderr io.Writer) int {
	runner.EndWithParent()
	args, code, ok := chooseLang(args, stderr)
	if !ok {
		return code
	}
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
		fmt.Fprint(stderr, msg.T("lab.unknown_command", name))
		usage(stderr)
		return 2
	}
	return cmd.run(args[1:], stdout, stderr)
}

// chooseLang sets the language of lab's messages, once: --lang (anywhere
// on the command line, before a lone --; it is taken out of args), else
// the environment (msg.FromEnv). A --lang lab does not speak is a usage
// error.
func chooseLang(args []string, stderr io.Writer) (rest []string, code int, ok bool) {
	msg.Set(msg.FromEnv(os.Getenv))
	value, found := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "lang" {
			rest = append(rest, a)
			continue
		}
		found = true
		switch {
		case hasValue:
			value = v
		case i+1 < len(args):
			i++
			value = args[i]
		default:
			value = ""
		}
	}
	if !found {
		return rest, 0, true
	}
	l, err := msg.Parse(value)
	if err != nil {
		fmt.Fprint(stderr, msg.T("lab.bad_lang", value))
		return nil, 2, false
	}
	msg.Set(l)
	return rest, 0, true
}

func usage(w io.Writer) {
	fmt.Fprint(w, msg.T("lab.usage_head"))
	for _, n := range slices.Sorted(maps.Keys(commands)) {
		fmt.Fprintf(w, "  %-9s %s\n", n, msg.T(commands[n].summary))
	}
	fmt.Fprint(w, msg.T("lab.usage_tail"))
}

// GeneratedCounts is how many generated mutants lab check requires an
// answer to exercise l to catch, and generated wheats to pass (for the
// testscripts, which derive their counts).
func GeneratedCounts(root string, l course.Lesson) (mutants, wheats int, err error) {
	ms, err := mutation.Generated(root, l)
	if err != nil {
		return 0, 0, err
	}
	ws, err := mutation.GeneratedWheats(root, l)
	return len(ms), len(ws), err
}

package cli

import (
	"fmt"
	"io"
)

// Placeholders for subcommands still being built. Each helper deletes its
// stub here when it adds the real implementation in its own file.

func notYet(name string) func([]string, io.Writer, io.Writer) int {
	return func(_ []string, _, stderr io.Writer) int {
		fmt.Fprintf(stderr, "lab %s: not implemented yet\n", name)
		return 1
	}
}

var (
	runProvider = notYet("provider")
	runList     = notYet("list")
	runCheck    = notYet("check")
	runHint     = notYet("hint")
	runDiff     = notYet("diff")
	runVerify   = notYet("verify")
	runStats    = notYet("stats")
	runReset    = notYet("reset")
)

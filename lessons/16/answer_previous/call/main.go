// Command call makes one GET with separate connect and read limits and says
// in which phase it ended.
//
//	call --url http://127.0.0.1:9101/call?ms=2000 --connect 0.5 --read 1
//
// Output: {"ok","status","phase":"done"|"connect"|"read","elapsed_ms","error"}.
// A refused connection is phase connect (the partner was never reached); a
// received 4xx/5xx is phase done with ok false (the partner did answer).
// A --url that is not an absolute http URL is a usage error (exit 2): no
// call is made, so there is no phase to report.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"quoteflowlab.dev/lessons/16/answer_previous/internal/budget"
)

type result struct {
	OK        bool         `json:"ok"`
	Status    *int         `json:"status"`
	Phase     budget.Phase `json:"phase"`
	ElapsedMS float64      `json:"elapsed_ms"`
	Error     *string      `json:"error"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "URL to GET (required)")
	connect := fs.Float64("connect", 1, "connect limit in seconds")
	read := fs.Float64("read", 5, "read limit in seconds (response header and body)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" || *connect <= 0 || *read <= 0 {
		fmt.Fprintln(stderr, "call: --url is required; --connect and --read must be positive")
		return 2
	}
	if err := budget.CheckURL(*url); err != nil {
		fmt.Fprintf(stderr, "call: --url %q: %v\n", *url, err)
		return 2
	}

	client := budget.NewClient(budget.Seconds(*connect))
	o := client.Get(context.Background(), *url, budget.Seconds(*read), nil)
	res := result{OK: o.OK, Phase: o.Phase, ElapsedMS: budget.Millis(o.Elapsed), Error: budget.ErrText(o.Err)}
	if o.Status != 0 {
		res.Status = &o.Status
	}
	if err := budget.Print(stdout, res); err != nil {
		fmt.Fprintln(stderr, "call:", err)
		return 1
	}
	return 0
}

// Command probe measures the three ways a call fails, so their costs can be
// compared: a refused connection (a closed loopback port), a connect timeout
// (the provider lab's blackhole) and a read timeout (a slow partner call).
//
//	probe --base http://127.0.0.1:9101 --blackhole 127.0.0.1:9102 [--connect 0.5] [--read 0.5]
//
// Output: a JSON array of three rows {"kind","target","elapsed_ms","error","phase"}.
// A --base that is not an absolute http URL, or a --blackhole that is not
// host:port, is a usage error (exit 2).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"quoteflowlab.dev/lessons/16/answer_previous/internal/budget"
)

type row struct {
	Kind      string       `json:"kind"`
	Target    string       `json:"target"`
	ElapsedMS float64      `json:"elapsed_ms"`
	Error     *string      `json:"error"`
	Phase     budget.Phase `json:"phase"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "", "partner base URL, e.g. http://127.0.0.1:9101 (required)")
	blackhole := fs.String("blackhole", "", "blackhole address, e.g. 127.0.0.1:9102 (required)")
	connect := fs.Float64("connect", 0.5, "connect limit in seconds")
	read := fs.Float64("read", 0.5, "read limit in seconds")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *base == "" || *blackhole == "" || *connect <= 0 || *read <= 0 {
		fmt.Fprintln(stderr, "probe: --base and --blackhole are required")
		return 2
	}
	if err := budget.CheckURL(*base); err != nil {
		fmt.Fprintf(stderr, "probe: --base %q: %v\n", *base, err)
		return 2
	}
	if err := budget.CheckHostPort(*blackhole); err != nil {
		fmt.Fprintf(stderr, "probe: --blackhole %q: %v\n", *blackhole, err)
		return 2
	}
	closed, err := closedPort()
	if err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return 1
	}

	client := budget.NewClient(budget.Seconds(*connect))
	readLimit := budget.Seconds(*read)
	slowMS := 4 * readLimit.Milliseconds() // the partner answers long after the read limit
	targets := []struct{ kind, url string }{
		{"refused", "http://" + closed + "/"},
		{"connect_timeout", "http://" + *blackhole + "/"},
		{"read_timeout", fmt.Sprintf("%s/call?ms=%d", strings.TrimRight(*base, "/"), slowMS)},
	}
	rows := make([]row, 0, len(targets))
	for _, t := range targets {
		o := client.Get(context.Background(), t.url, readLimit, nil)
		rows = append(rows, row{Kind: t.kind, Target: t.url, ElapsedMS: budget.Millis(o.Elapsed), Error: budget.ErrText(o.Err), Phase: o.Phase})
	}
	if err := budget.Print(stdout, rows); err != nil {
		fmt.Fprintln(stderr, "probe:", err)
		return 1
	}
	return 0
}

// closedPort returns a loopback address nobody listens on: it listens on a
// free port and closes it again.
func closedPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

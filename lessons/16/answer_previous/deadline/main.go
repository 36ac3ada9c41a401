// Command deadline makes several calls under one time budget. Each call's
// read limit is the budget left when it starts; below --min-ms a call is not
// made at all and is reported as no_budget.
//
//	deadline --budget-ms 1000 --url U1 --url U2 --url U3 [--connect 0.3] [--min-ms 150]
//
// Output: {"budget_ms","calls":[{url,ok,phase,elapsed_ms,read_timeout_ms}],
// "skipped","total_ms","exceeded"}.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"quoteflowlab.dev/lessons/16/answer_previous/internal/budget"
)

type call struct {
	URL           string       `json:"url"`
	OK            bool         `json:"ok"`
	Phase         budget.Phase `json:"phase"`
	ElapsedMS     float64      `json:"elapsed_ms"`
	ReadTimeoutMS int64        `json:"read_timeout_ms"`
	Status        *int         `json:"status"`
	Error         *string      `json:"error"`
}

type report struct {
	BudgetMS int     `json:"budget_ms"`
	Calls    []call  `json:"calls"`
	Skipped  int     `json:"skipped"`
	TotalMS  float64 `json:"total_ms"`
	Exceeded bool    `json:"exceeded"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("deadline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	budgetMS := fs.Int("budget-ms", 0, "total budget in ms (required)")
	var urls budget.URLs
	fs.Var(&urls, "url", "URL to GET, in order (repeat)")
	connect := fs.Float64("connect", 1, "connect limit in seconds")
	minMS := fs.Int("min-ms", 0, "floor: do not start a call with less than this many ms left")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *budgetMS <= 0 || len(urls) == 0 || *connect <= 0 || *minMS < 0 {
		fmt.Fprintln(stderr, "deadline: --budget-ms (positive) and at least one --url are required")
		return 2
	}

	client := budget.NewClient(budget.Seconds(*connect))
	b := budget.Start(budget.MS(*budgetMS))
	ctx, cancel := b.Context(context.Background())
	defer cancel()

	out := report{BudgetMS: *budgetMS, Calls: []call{}}
	for _, u := range urls {
		left := b.Left()
		c := call{URL: u, ReadTimeoutMS: left.Milliseconds()}
		// A call that cannot finish in what is left only postpones the failure.
		if left <= 0 || left < budget.MS(*minMS) {
			c.Phase = budget.PhaseNoBudget
			out.Skipped++
			out.Calls = append(out.Calls, c)
			continue
		}
		o := client.Get(ctx, u, left, nil)
		c.OK, c.Phase, c.ElapsedMS, c.Error = o.OK, o.Phase, budget.Millis(o.Elapsed), budget.ErrText(o.Err)
		if o.Status != 0 {
			c.Status = &o.Status
		}
		// The read limit was the budget left, so a cut read means the budget ran out.
		out.Exceeded = out.Exceeded || o.Cut()
		out.Calls = append(out.Calls, c)
	}
	out.Exceeded = out.Exceeded || out.Skipped > 0
	out.TotalMS = budget.Millis(b.Used())
	if err := budget.Print(stdout, out); err != nil {
		fmt.Fprintln(stderr, "deadline:", err)
		return 1
	}
	return 0
}

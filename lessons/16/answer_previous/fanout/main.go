// Command fanout calls BASE/budget?ms=200 --n times in a row under one
// budget, sending the budget left with each call as X-Budget-Ms, so the
// partner can stop work nobody will wait for. The partner echoes the header
// back as "received".
//
//	fanout --base http://127.0.0.1:9101 --budget-ms 1000 --n 4 [--connect 0.3]
//
// Output: {"budget_ms","calls":[{"sent_budget_ms","received","elapsed_ms",...}],"skipped","total_ms"}.
// A --base that is not an absolute http URL is a usage error (exit 2).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"quoteflowlab.dev/lessons/16/answer_previous/internal/budget"
)

// workMS is how long each /budget call asks the partner to work.
const workMS = 200

type call struct {
	SentBudgetMS int64        `json:"sent_budget_ms"`
	Received     *float64     `json:"received"`
	ElapsedMS    float64      `json:"elapsed_ms"`
	OK           bool         `json:"ok"`
	Phase        budget.Phase `json:"phase"`
	Status       *int         `json:"status"`
	Error        *string      `json:"error"`
}

type report struct {
	BudgetMS int     `json:"budget_ms"`
	Calls    []call  `json:"calls"`
	Skipped  int     `json:"skipped"`
	TotalMS  float64 `json:"total_ms"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fanout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "", "partner base URL, e.g. http://127.0.0.1:9101 (required)")
	budgetMS := fs.Int("budget-ms", 0, "total budget in ms (required)")
	n := fs.Int("n", 3, "number of calls")
	connect := fs.Float64("connect", 1, "connect limit in seconds")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *base == "" || *budgetMS <= 0 || *n < 1 || *connect <= 0 {
		fmt.Fprintln(stderr, "fanout: --base, --budget-ms (positive) and --n (≥ 1) are required")
		return 2
	}
	if err := budget.CheckURL(*base); err != nil {
		fmt.Fprintf(stderr, "fanout: --base %q: %v\n", *base, err)
		return 2
	}

	client := budget.NewClient(budget.Seconds(*connect))
	b := budget.Start(budget.MS(*budgetMS))
	ctx, cancel := b.Context(context.Background())
	defer cancel()
	url := fmt.Sprintf("%s/budget?ms=%d", strings.TrimRight(*base, "/"), workMS)

	out := report{BudgetMS: *budgetMS, Calls: []call{}}
	for range *n {
		left := b.Left()
		c := call{SentBudgetMS: left.Milliseconds()}
		if c.SentBudgetMS <= 0 {
			c.Phase = budget.PhaseNoBudget
			out.Skipped++
			out.Calls = append(out.Calls, c)
			continue
		}
		header := http.Header{"X-Budget-Ms": {strconv.FormatInt(c.SentBudgetMS, 10)}}
		o := client.Get(ctx, url, left, header)
		c.OK, c.Phase, c.ElapsedMS, c.Error = o.OK, o.Phase, budget.Millis(o.Elapsed), budget.ErrText(o.Err)
		if o.Status != 0 {
			c.Status = &o.Status
		}
		c.Received = received(o)
		out.Calls = append(out.Calls, c)
	}
	out.TotalMS = budget.Millis(b.Used())
	if err := budget.Print(stdout, out); err != nil {
		fmt.Fprintln(stderr, "fanout:", err)
		return 1
	}
	return 0
}

// received is the budget the partner says it got, or nil.
func received(o budget.Outcome) *float64 {
	if !o.OK {
		return nil
	}
	var echo struct {
		Received *float64 `json:"received"`
	}
	if json.Unmarshal(o.Body, &echo) != nil {
		return nil
	}
	return echo.Received
}

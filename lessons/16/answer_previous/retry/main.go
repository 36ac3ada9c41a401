// Command retry calls one URL until it succeeds, runs out of attempts, or
// runs out of budget. Waits between attempts use full jitter (uniform in
// [0, base·2^(k-1)] before attempt k+1) and are paid from the same budget:
// before sleeping it checks that an attempt would still fit afterwards.
//
//	retry --url U --budget-ms 1500 --attempts 4 [--base-ms 100] [--connect 0.3] [--min-ms 100] [--seed 1]
//
// Output: {"ok","attempts","elapsed_ms","waits_ms":[...],"stopped_reason":"ok"|"attempts"|"budget"}.
// A --url that is not an absolute http URL is a usage error (exit 2).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"quoteflowlab.dev/lessons/16/answer_previous/internal/budget"
)

// Why the retry loop stopped.
const (
	stoppedOK       = "ok"
	stoppedAttempts = "attempts"
	stoppedBudget   = "budget"
)

type report struct {
	OK            bool      `json:"ok"`
	Attempts      int       `json:"attempts"`
	ElapsedMS     float64   `json:"elapsed_ms"`
	WaitsMS       []float64 `json:"waits_ms"`
	StoppedReason string    `json:"stopped_reason"`
	LastStatus    *int      `json:"last_status"`
	LastPhase     string    `json:"last_phase,omitempty"`
	LastError     *string   `json:"last_error"`
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("retry", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "URL to GET (required)")
	budgetMS := fs.Int("budget-ms", 0, "total budget in ms, waits included (required)")
	attempts := fs.Int("attempts", 3, "maximum number of attempts")
	baseMS := fs.Int("base-ms", 100, "wait cap before attempt 2; doubles for each later attempt")
	connect := fs.Float64("connect", 1, "connect limit in seconds")
	minMS := fs.Int("min-ms", 0, "floor: do not start an attempt with less than this many ms left")
	seed := fs.Uint64("seed", 0, "random seed for the waits (0: from the clock)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *url == "" || *budgetMS <= 0 || *attempts < 1 || *baseMS < 0 || *connect <= 0 || *minMS < 0 {
		fmt.Fprintln(stderr, "retry: --url, --budget-ms (positive) and --attempts (≥ 1) are required")
		return 2
	}
	if err := budget.CheckURL(*url); err != nil {
		fmt.Fprintf(stderr, "retry: --url %q: %v\n", *url, err)
		return 2
	}

	client := budget.NewClient(budget.Seconds(*connect))
	rng := budget.NewRand(*seed)
	b := budget.Start(budget.MS(*budgetMS))
	ctx, cancel := b.Context(context.Background())
	defer cancel()
	floor := max(budget.MS(*minMS), time.Millisecond) // at least something must be left to start a call

	out := report{WaitsMS: []float64{}}
	for {
		if b.Left() < floor {
			out.StoppedReason = stoppedBudget
			break
		}
		o := client.Get(ctx, *url, b.Left(), nil)
		out.Attempts++
		out.LastPhase, out.LastError, out.LastStatus = string(o.Phase), budget.ErrText(o.Err), nil
		if o.Status != 0 {
			out.LastStatus = &o.Status
		}
		if o.OK {
			out.OK, out.StoppedReason = true, stoppedOK
			break
		}
		if out.Attempts >= *attempts {
			out.StoppedReason = stoppedAttempts
			break
		}
		wait := budget.FullJitter(rng, budget.MS(*baseMS)<<(out.Attempts-1))
		// The wait is paid from the budget: if waking up would leave less
		// than the floor, sleeping only postpones the same failure.
		if b.Left()-wait < floor {
			out.StoppedReason = stoppedBudget
			break
		}
		if !budget.Sleep(ctx, wait) {
			out.StoppedReason = stoppedBudget
			break
		}
		out.WaitsMS = append(out.WaitsMS, budget.Millis(wait))
	}
	out.ElapsedMS = budget.Millis(b.Used())
	if err := budget.Print(stdout, out); err != nil {
		fmt.Fprintln(stderr, "retry:", err)
		return 1
	}
	return 0
}

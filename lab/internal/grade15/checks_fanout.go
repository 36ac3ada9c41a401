package grade15

import (
	"context"
	"fmt"
	"math"
	"strings"
)

type fanoutCall struct {
	SentBudgetMS float64  `json:"sent_budget_ms"`
	Received     *float64 `json:"received"`
	ElapsedMS    float64  `json:"elapsed_ms"`
}

type fanoutOut struct {
	Calls []fanoutCall `json:"calls"`
}

var fanoutCallKeys = []string{"sent_budget_ms", "received", "elapsed_ms"}

// checkFanout runs four /budget?ms=200 calls under 1100 ms: all fit, and
// each should carry about 200 ms less than the one before.
func (g *grader) checkFanout(ctx context.Context) {
	const budget, n = 1100.0, 4
	all := []string{"fanout_json", "fanout_header", "fanout_shrinking"}
	r := g.exec(ctx, "fanout", "--base", g.lab.base, "--budget-ms", fmt.Sprint(budget), "--n", fmt.Sprint(n), "--connect", "1")
	if r.problem != "" {
		g.failAllOf(r.problem, all...)
		return
	}
	var o fanoutOut
	err := r.decode(&o, "calls")
	if err == nil {
		err = nestedKeys(firstValue(r.stdout), "calls", fanoutCallKeys...)
	}
	if err == nil && len(o.Calls) != n {
		err = fmt.Errorf("%d calls for --n %d", len(o.Calls), n)
	}
	if err != nil {
		g.failAllOf("fanout: "+err.Error(), all...)
		return
	}
	g.set("fanout_json", true, "")

	var sent, received []string
	header := true
	for i, c := range o.Calls {
		sent = append(sent, fmt.Sprintf("%.0f", c.SentBudgetMS))
		if c.Received == nil {
			received = append(received, "null")
			// Only the last call may lose its answer to the budget.
			header = header && i == n-1 && c.SentBudgetMS < 300
			continue
		}
		received = append(received, fmt.Sprintf("%.0f", *c.Received))
		header = header && math.Abs(*c.Received-c.SentBudgetMS) <= 1
	}
	g.set("fanout_header", header, "sent_budget_ms %s, the partner received %s",
		strings.Join(sent, ", "), strings.Join(received, ", "))

	shrinking := o.Calls[0].SentBudgetMS <= budget && o.Calls[0].SentBudgetMS >= budget-150 && r.wallMS() <= budget+slack
	for i := 1; i < n; i++ {
		prev, cur := o.Calls[i-1].SentBudgetMS, o.Calls[i].SentBudgetMS
		shrinking = shrinking && cur <= prev-190 && cur >= prev-200-slack
	}
	g.set("fanout_shrinking", shrinking, "budget 1100 ms, four calls of 200 ms: sent_budget_ms %s (want about 1100, 900, 700, 500); the run took %.0f ms",
		strings.Join(sent, ", "), r.wallMS())
}

// joinOr joins problems, or returns fine when there are none.
func joinOr(problems []string, fine string) string {
	if len(problems) == 0 {
		return fine
	}
	return strings.Join(problems, "; ")
}

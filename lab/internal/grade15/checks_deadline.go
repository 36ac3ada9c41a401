package grade15

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

type deadlineCall struct {
	URL           string  `json:"url"`
	OK            bool    `json:"ok"`
	Phase         string  `json:"phase"`
	ElapsedMS     float64 `json:"elapsed_ms"`
	ReadTimeoutMS float64 `json:"read_timeout_ms"`
}

type deadlineOut struct {
	BudgetMS float64        `json:"budget_ms"`
	Calls    []deadlineCall `json:"calls"`
	Skipped  int            `json:"skipped"`
	TotalMS  float64        `json:"total_ms"`
	Exceeded bool           `json:"exceeded"`
}

var (
	deadlineKeys     = []string{"budget_ms", "calls", "skipped", "total_ms", "exceeded"}
	deadlineCallKeys = []string{"url", "ok", "phase", "elapsed_ms", "read_timeout_ms"}
)

// checkDeadline runs two budgets: "left" (two 600 ms calls, then a slow one
// the budget must cut; with the full budget as its read limit it would run
// 1200 ms longer) and "floor" (two calls leave less than --min-ms).
func (g *grader) checkDeadline(ctx context.Context) {
	call := func(ms int) string { return fmt.Sprintf("%s/call?ms=%d", g.lab.base, ms) }
	jobs := map[string][]string{
		"left":  {"--budget-ms", "1600", "--min-ms", "100", "--connect", "1", "--url", call(600), "--url", call(600), "--url", call(5000)},
		"floor": {"--budget-ms", "1000", "--min-ms", "300", "--connect", "1", "--url", call(400), "--url", call(400), "--url", call(50)},
	}
	all := []string{"deadline_json", "deadline_read_limit", "deadline_budget_cut", "deadline_floor"}
	runs := g.runAll(ctx, "deadline", runTimeout, jobs)
	outs := map[string]deadlineOut{}
	for _, key := range []string{"left", "floor"} {
		r := runs[key]
		if r.problem != "" {
			g.failAllOf(r.problem, all...)
			return
		}
		var o deadlineOut
		err := r.decode(&o, deadlineKeys...)
		if err == nil {
			err = nestedKeys(firstValue(r.stdout), "calls", deadlineCallKeys...)
		}
		if err == nil && len(o.Calls) != 3 {
			err = fmt.Errorf("%d calls for 3 --url", len(o.Calls))
		}
		if err != nil {
			g.failAllOf("deadline "+key+": "+err.Error(), all...)
			return
		}
		outs[key] = o
	}
	g.set("deadline_json", true, "")
	g.checkReadLimits(outs["left"], runs["left"])
	g.checkFloor(outs["floor"])
}

// checkReadLimits compares each call's read_timeout_ms with the budget left:
// the budget minus the elapsed time of the calls before it.
func (g *grader) checkReadLimits(o deadlineOut, r run) {
	const budget = 1600.0
	ok := true
	spent := 0.0
	var got, want []string
	for _, c := range o.Calls {
		if c.Phase == "no_budget" {
			continue
		}
		left := budget - spent
		got = append(got, fmt.Sprintf("%.0f", c.ReadTimeoutMS))
		want = append(want, fmt.Sprintf("%.0f", left))
		if c.ReadTimeoutMS > left+15 || c.ReadTimeoutMS < left-250 {
			ok = false
		}
		spent += c.ElapsedMS
	}
	ok = ok && len(got) >= 2
	g.set("deadline_read_limit", ok, "budget 1600 ms, calls of 600, 600, 5000 ms: read_timeout_ms %s where the budget left was about %s",
		strings.Join(got, ", "), strings.Join(want, ", "))

	last := o.Calls[2]
	cut := last.Phase == "read" && o.Exceeded && r.wallMS() <= budget+slack
	g.set("deadline_budget_cut", cut, "third call (5000 ms) ended in phase %q, exceeded %v, the run took %.0f ms (want read, true, at most %.0f ms)",
		last.Phase, o.Exceeded, r.wallMS(), budget+slack)
}

// checkFloor checks that no call starts with less than --min-ms left.
func (g *grader) checkFloor(o deadlineOut) {
	const minMS = 300.0
	var bad []string
	skipped := 0
	for i, c := range o.Calls {
		switch {
		case c.Phase == "no_budget":
			skipped++
			if c.ElapsedMS != 0 {
				bad = append(bad, fmt.Sprintf("call %d is no_budget but took %.0f ms", i+1, c.ElapsedMS))
			}
		case c.ReadTimeoutMS < minMS:
			bad = append(bad, fmt.Sprintf("call %d started with %.0f ms left, below --min-ms 300 (phase %q)", i+1, c.ReadTimeoutMS, c.Phase))
		}
	}
	if o.Calls[2].Phase != "no_budget" {
		bad = append(bad, fmt.Sprintf("call 3 has phase %q after two 400 ms calls of a 1000 ms budget", o.Calls[2].Phase))
	}
	if o.Skipped != skipped {
		bad = append(bad, fmt.Sprintf("skipped is %d for %d no_budget calls", o.Skipped, skipped))
	}
	if skipped > 0 && !o.Exceeded {
		bad = append(bad, "exceeded is false although a call was skipped")
	}
	detail := "budget 1000 ms, --min-ms 300, calls of 400, 400, 50 ms: " + strings.Join(bad, "; ")
	if len(bad) == 0 {
		detail = fmt.Sprintf("budget 1000 ms, --min-ms 300: call 3 skipped with %.0f ms left", o.Calls[2].ReadTimeoutMS)
	}
	g.set("deadline_floor", len(bad) == 0, "%s", detail)
}

// nestedKeys checks that every object in the array raw[field] has keys.
func nestedKeys(raw []byte, field string, keys ...string) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(top[field], &items); err != nil {
		return fmt.Errorf("%s: want an array: %v", field, err)
	}
	for i, item := range items {
		if err := missingKeys(item, keys...); err != nil {
			return fmt.Errorf("%s[%d]: %v", field, i, err)
		}
	}
	return nil
}

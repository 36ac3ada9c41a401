// Exercise E18 (lesson 18): hedge the tail, pay from one budget.
//
// Write a program, here, that proves this about checkpoint 18's hedged
// supplier calls, in this process: a quoteflow.Service (quoteflow.New) whose
// suppliers are a fake of yours, an http.RoundTripper given as
// quoteflow.Config{Transport: ...}. The fake is your witness: it sees every
// supplier call, its X-Request-ID and X-Attempt headers, when it arrived,
// how many were in flight at once, and when its context was cancelled; it
// decides how long each call takes (a straggler is a call that waits, and
// still stops when its context is cancelled). Settings keep a run short and
// the numbers yours: Config.Hedge (a hedge.DelayConfig: the quantile, Floor
// and Ceiling of the delay), Config.ExtraConfig (a hedge.BudgetConfig: Ratio,
// Cap) or a Config.Extra of your own, Config.OutboundLimit and Config.Budget.
// Then show that:
//
//  1. a straggler is hedged and the loser is cancelled: with one supplier
//     slow on a call's first copy, the quote answers with the hedge's price
//     well before the straggler would have, and the other copy's context is
//     cancelled within 50 ms of the winner's answer;
//  2. extra calls stay within the budget: when every call of a supplier is
//     slow (100 quotes), the copies with X-Attempt: 2 are no more than the
//     budget's Ratio of the first calls plus its Cap — not one per call;
//  3. never more calls in flight at the suppliers than the outbound limit,
//     hedges included: quotes that fill every slot with slow calls get no
//     hedge that would take a seventh;
//  4. no hedge before the supplier's recent p95: once the service has seen
//     a few dozen answers of 20-60 ms, a hedge arrives no earlier than the
//     fast calls take, and few calls are hedged at all.
//
// Bonus: the first answer wins (a copy that answers later does not replace
// it); retries and hedges are paid from one budget (a budget spent on
// retries leaves nothing for hedges); the hedge carries the same
// X-Request-ID as its first copy, with X-Attempt: 2.
//
// A check that only says "the quote answered" proves nothing: every broken
// build answers. Count what the fake saw, and time it with your own clock.
// Bound every wait, and leave a busy machine room: the broken builds miss
// by far (a loser never cancelled, twice the calls, a seventh call in
// flight, hedges 5 ms after every first call).
//
// Print one line "E18 passed: <what you showed>" and exit 0 when all of this
// holds; otherwise say what failed and exit 1.
//
// Run it:    go run ./lessons/18/exercise
// Check it:  go run ./lab check E18
// Stuck?     go run ./lab hint E18
package main

import (
	"fmt"
	"os"

	"quoteflowlab.dev/checkpoints/18/hedge"
	"quoteflowlab.dev/checkpoints/18/quoteflow"
)

func main() {
	// The settings the checks turn, and what a quote asks for.
	_, _, _ = hedge.DelayConfig{}, hedge.BudgetConfig{}, quoteflow.QuoteRequest{}

	fmt.Fprintln(os.Stderr, "E18 TODO: NOT STARTED. Prove a straggler hedged and its loser cancelled, extra calls within the budget, hedges inside the outbound limit, and no hedge before the p95 (see the comment in lessons/18/exercise/main.go).")
	os.Exit(1)
}

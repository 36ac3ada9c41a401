// Exercise E20 (lesson 20): too much at once — find the limit, shed the
// rest.
//
// Write a program, here, that proves this about checkpoint 20's adaptive
// limits and its line of waiters, in this process. Package adaptive is
// usable alone: feed an adaptive.Limit (adaptive.New with a Config of your
// numbers: Initial, Min, Max, Window) the samples of a latency series of
// yours (Limit.Sample: a call's latency, the calls in flight, its outcome)
// and read Limit.Current; hold an adaptive.Limiter's slots yourself
// (TryAcquire, Acquire with a priority and a context, Token.Done) with an
// adaptive.Queue of your numbers (Max, Target, Reserve). Where the service
// decides (which answers are failures, whose limit a call takes) run a
// quoteflow.Service (quoteflow.New with Config.Adaptive) whose suppliers
// are a fake of yours, an http.RoundTripper given as Config.Transport, and
// read its limits (Service.LimitStats, what GET /api/limits shows). Then
// show that:
//
//  1. the limit follows latency: it grows while every call answers at its
//     baseline with the limit busy, and shrinks when the same calls take
//     several times as long with none failing (a queue inside the
//     supplier);
//  2. failures (a 503, a timeout) shrink it, down to its minimum and never
//     below: at the minimum its Limiter still lets that many calls through;
//  3. it never passes its maximum, however long latency stays at its
//     baseline, and its Limiter lets no more than that through at once;
//  4. a 404 and invalid data are answers, not failures: a supplier that
//     answers them at its baseline keeps its limit, while one that answers
//     503 or 500, breaks the connection or hangs past the quote's deadline
//     (a timeout) has its limit shrunk;
//  5. the line serves the more important call first: a single quote's call
//     (adaptive.High) gets a freed slot before a basket line's
//     (adaptive.Low) that waited longer; a full line takes a High newcomer
//     in the place of its newest Low waiter, shed at once, and refuses a
//     Low newcomer at once;
//  6. nothing waits too long: a waiter is shed (adaptive.ErrShed) at its
//     target, never waits past its deadline less the Reserve a call
//     needs, and a newcomer to a full line of calls as important is shed
//     at once; a shed waiter leaves the line (the slot it waited for goes
//     to the next call), and one whose context ends leaves at once with
//     the context's error.
//
// Bonus: each supplier's limit is its own (boreal's 503s shrink boreal's
// limit, not atlas's).
//
// A check that only says "a call went through" proves nothing: every broken
// build lets calls through. Compare the limit with its start and its
// bounds, and time each shed with your own clock. Bound every wait (a line
// that never sheds must fail your program, not hang it), and leave a busy
// machine room: the contract promises that the limit moves with latency
// and failures, not by how much a step or after how many calls; the broken
// builds miss by far (a limit that never shrinks, reaches 0 or passes its
// maximum, a basket line served before a quote, a waiter kept for ever).
//
// Print one line "E20 passed: <what you showed>" and exit 0 when all of this
// holds; otherwise say what failed and exit 1.
//
// Run it:    go run ./lessons/20/exercise
// Check it:  go run ./lab check E20
// Stuck?     go run ./lab hint E20
package main

import (
	"fmt"
	"os"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/quoteflow"
)

func main() {
	// The limit, its line, and the service whose limits you read.
	_, _, _ = adaptive.Config{}, adaptive.Queue{}, quoteflow.Config{}

	fmt.Fprintln(os.Stderr, "E20 TODO: NOT STARTED. Prove the limit follows latency and failures within [Min, Max], a 404 is no failure, the line serves single quotes first and sheds at its target and before the deadline (see the comment in lessons/20/exercise/main.go).")
	os.Exit(1)
}

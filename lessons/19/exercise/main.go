// Exercise E19 (lesson 19): a supplier is down — stop asking, answer from
// what you know.
//
// Write a program, here, that proves this about checkpoint 19's circuit
// breakers and stale answers, in this process: a quoteflow.Service
// (quoteflow.New) whose suppliers are a fake of yours, an http.RoundTripper
// given as quoteflow.Config{Transport: ...}. The fake is your witness: it
// sees every supplier call and when it arrived and ended, counts the calls
// of each supplier in flight at once, and decides what each call does (a
// 503, a 404, a body with no price, an answer after a delay, a hang until
// its context ends). A fanout.Limiter of yours (Config.Limiter) counts the
// outbound slots taken. Set the breaker's numbers yourself, so that a run
// is short and the counts are yours: Config.Breaker (a breaker.Config:
// Window, MinCalls, FailureRate, CoolDown, Jitter or NoJitter, Probes),
// Config.MaxStale, Config.NoHedge (or Config.Hedge: when a hedge goes).
// A quote's context is yours too: one with too little time left for a
// call makes none. Then show that:
//
//  1. a breaker opens only past its minimum of calls: a supplier that
//     failed fewer times than MinCalls is still asked, and quoted when it
//     answers again; it opens once the failures among its last Window
//     outcomes reach FailureRate of them, and a failure pushed out of the
//     window counts no more;
//  2. an open breaker refuses at once: circuit_open with no call to the
//     supplier, no outbound slot and no retry sent into it, and only for
//     its own supplier: the others are asked and quoted as before;
//  3. only outages count: 404s and invalid data never open the breaker,
//     however many, nor answer from the last good quote; a 500 is an
//     outage as much as a 503;
//  4. after its cool-down the breaker lets a probe through, never more
//     than Probes calls at once (a probe is never hedged), and closes when
//     they succeed: Probes good probes, at once or one at a time, close it
//     with an empty window, where no call from before counts; a failed
//     probe opens it again, a probe never sent is given back, and every
//     opening probes afresh;
//  5. while a supplier is down, a quote answers with its last good quote,
//     marked stale with its age_ms, and never one older than MaxStale.
//
// Bonus: a timeout counts as a failure (a supplier that hangs opens its
// breaker too); breakers opened together come back at different times
// (the cool-down is stretched by a random jitter).
//
// A check that only says "the quote answered" proves nothing: every broken
// build answers. Count what the fake saw, and time it with your own clock.
// Bound every wait (a service that hangs on a lock never given back must
// fail your program, not hang it), and leave a busy machine room: the
// contract promises no probe before the cool-down, not how soon after it,
// and a default window of anywhere from 10 to 100 outcomes; the broken
// builds miss by far (opened by one failure, a retry sent into an open
// breaker, every call let through half-open, a stale price an hour old).
//
// Print one line "E19 passed: <what you showed>" and exit 0 when all of this
// holds; otherwise say what failed and exit 1.
//
// Run it:    go run ./lessons/19/exercise
// Check it:  go run ./lab check E19
// Stuck?     go run ./lab hint E19
package main

import (
	"fmt"
	"os"

	"quoteflowlab.dev/checkpoints/19/breaker"
	"quoteflowlab.dev/checkpoints/19/fanout"
	"quoteflowlab.dev/checkpoints/19/quoteflow"
)

func main() {
	// The settings the checks turn, the witness of the slots, and what a
	// quote asks for.
	_, _, _ = breaker.Config{}, fanout.NewLocal(6), quoteflow.QuoteRequest{}

	fmt.Fprintln(os.Stderr, "E19 TODO: NOT STARTED. Prove a breaker opens past its minimum on outages only, refuses at once without a call, a slot or a retry, probes and closes, and a stale answer marked and never past MaxStale (see the comment in lessons/19/exercise/main.go).")
	os.Exit(1)
}

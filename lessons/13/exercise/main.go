// Exercise E13 (lesson 13): a rejected request must not steal a slot, and
// QuoteFlow's own 503 is not a supplier's 503.
//
// Write a program, here, that proves this about checkpoint 13:
//
//  1. With quoteflow.Config{InboundLimit: 1, Transport: yourFake}, start a first
//     Quote in a goroutine. Your fake RoundTripper tells you (a channel) when the
//     call has arrived, and holds it until you release it: the only inbound slot
//     is now known to be taken — no sleeps.
//  2. A second Quote must fail with quoteflow.ErrBusy (check with errors.Is), and
//     promptly: bound how long you wait for it, so a service that queues the
//     request fails your program instead of hanging it.
//  3. Release the first call and wait for its result; then svc.ActiveRequests()
//     must be 0, and a third Quote must succeed.
//  4. Through HTTP (svc.Handler() with net/http/httptest): while you hold the
//     only slot with svc.Admit(), POST /api/quotes answers 503 with
//     Retry-After: 1; after release(), with every supplier answering 503, it
//     answers 200 with "best": null and three http_503 failures.
//
// Quote takes the request as it is, with no defaults (only the JSON decoder
// fills those in): give SKU, Quantity and Scenario, e.g.
// quoteflow.QuoteRequest{SKU: "KB-001", Quantity: 2, Scenario: "normal"};
// a request with an empty Scenario fails validation before any supplier call.
//
// Print one line "E13 passed: <what you showed>" and exit 0 when all of this
// holds; otherwise say what failed and exit 1. Every wait must be bounded.
//
// Run it:    go run ./lessons/13/exercise
// Check it:  go run ./lab check E13
// Stuck?     go run ./lab hint E13
package main

import (
	"fmt"
	"os"

	"quoteflowlab.dev/checkpoints/13/quoteflow"
)

func main() {
	// The busy error your second Quote must return: errors.Is(err, quoteflow.ErrBusy).
	_ = quoteflow.ErrBusy

	fmt.Fprintln(os.Stderr, "E13 TODO: not written yet. Prove that a rejected request steals no slot and that our 503 is not a supplier's 503 (see the comment in lessons/13/exercise/main.go).")
	os.Exit(1)
}

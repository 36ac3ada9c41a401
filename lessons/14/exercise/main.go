// Exercise E14 (lesson 14): a flaky supplier recovers after exactly one
// retry with the same request ID, and invalid data is never retried.
//
// Write a program, here, that proves this about checkpoint 14, with a
// controllable fake supplier: an http.RoundTripper given to the service as
// quoteflow.Config{Transport: ...} that answers
//
//   - atlas and cedar normally, always (a 200 with the five fields
//     supplier, sku, unit_cents, shipping_cents, stock);
//   - boreal with 503 to the first request of each X-Request-ID and normally
//     after that, when the scenario is "flaky";
//   - boreal with 200 and "unit_cents" as a JSON string, when it is "malformed";
//
// and that remembers how many times each supplier was called, with which
// X-Request-ID. Then show that:
//
//  1. scenario flaky: boreal is in the quotes, and it was called exactly twice,
//     with one X-Request-ID;
//  2. scenario malformed: boreal fails with invalid_data, it was called exactly
//     once, and the healthy suppliers' quotes are still there.
//
// Asserting only that best is not null is not enough: atlas answers normally,
// so best is set even when nothing is retried at all.
//
// Quote takes the request as it is, with no defaults (only the JSON decoder
// fills those in): give SKU, Quantity and Scenario, e.g.
// quoteflow.QuoteRequest{SKU: "KB-001", Quantity: 2, Scenario: "normal"};
// a request with an empty Scenario fails validation before any supplier call.
//
// Print one line "E14 passed: <what you showed>" and exit 0 when all of this
// holds; otherwise say what failed and exit 1. Every wait must be bounded.
//
// Run it:    go run ./lessons/14/exercise
// Check it:  go run ./lab check E14
// Stuck?     go run ./lab hint E14
package main

import (
	"fmt"
	"os"

	"quoteflowlab.dev/checkpoints/14/quoteflow"
)

func main() {
	// The failure code boreal must end with in the malformed case.
	_ = quoteflow.CodeInvalidData

	fmt.Fprintln(os.Stderr, "E14 TODO: not written yet. Prove that flaky boreal is quoted after exactly 2 attempts with one X-Request-ID, and that malformed data is not retried (see the comment in lessons/14/exercise/main.go).")
	os.Exit(1)
}

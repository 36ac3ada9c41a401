// Exercise E12 (lesson 12): an invalid quantity costs no supplier call.
//
// Write a program, here, that proves this about checkpoint 12:
//
//   - POST /api/quotes with {"quantity": 0}, sent through the service's real
//     HTTP handler (svc.Handler(), driven in-process with net/http/httptest),
//     is answered with 422;
//   - and the suppliers were called zero times. Build the service with a fake
//     http.RoundTripper (quoteflow.Config{Transport: ...}) that counts every
//     call it receives; the count, not the status (nor how fast the 422
//     comes back: a call can be over at once), is what catches a service
//     that validates after asking the suppliers.
//
// Print one line "E12 passed: <what you showed>" and exit 0 when both hold;
// otherwise say what failed and exit 1. Every wait must be bounded.
//
// Run it:    go run ./lessons/12/exercise
// Check it:  go run ./lab check E12
// Stuck?     go run ./lab hint E12
package main

import (
	"fmt"
	"os"

	"quoteflowlab.dev/checkpoints/12/quoteflow"
)

func main() {
	// The service under test: quoteflow.New(quoteflow.Config{ProviderURL: ..., Transport: ...}).
	_ = quoteflow.New

	fmt.Fprintln(os.Stderr, "E12 TODO: not written yet. Prove that quantity 0 is answered with 422 and zero supplier calls (see the comment in lessons/12/exercise/main.go).")
	os.Exit(1)
}

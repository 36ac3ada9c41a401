// Command demo runs lesson 18's experiments, each end to end, and prints
// the table the page shows: go run ./lessons/18/demo NAME, or lab demo 18
// NAME (see quoteflowlab.dev/kit/demo).
package main

import "quoteflowlab.dev/kit/demo"

func main() {
	demo.Main(18,
		demo.Demo{Name: "hedge", Summary: "300 quotes at tail and 100 at slow, eleven ways: no hedge, the checkpoint's, failsafe-go's, the knobs set wrong", Run: hedgeCompare},
		demo.Demo{Name: "tail", Summary: "300 quotes at tail then 100 at slow through QuoteFlow: --no-hedge, checkpoint 18, its no_budget mutant", Run: tailDemo},
	)
}

// Command demo runs lesson 19's experiments, each end to end, and prints
// the table the page shows: go run ./lessons/19/demo NAME, or lab demo 19
// NAME (see quoteflowlab.dev/kit/demo).
package main

import "quoteflowlab.dev/kit/demo"

func main() {
	demo.Main(19,
		demo.Demo{Name: "brownout", Summary: "2 quotes at a time for 20 s, boreal down (503) for 8 s: as 18, stale only, checkpoint 19's breakers", Run: brownout503},
		demo.Demo{Name: "brownout-hang", Summary: "the same with boreal hanging past the quote's budget: as 18, stale only, checkpoint 19's breakers", Run: brownoutHang},
	)
}

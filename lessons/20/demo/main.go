// Command demo runs lesson 20's experiments, each end to end, and prints
// the table the page shows: go run ./lessons/20/demo NAME, or lab demo 20
// NAME (see quoteflowlab.dev/kit/demo).
package main

import "quoteflowlab.dev/kit/demo"

func main() {
	demo.Main(20,
		demo.Demo{Name: "capacity", Summary: "60 quotes a second for 90 s while each supplier serves 12, then 4, then 12 calls at once: fixed 6, fixed 24, adaptive", Run: capacityDemo},
		demo.Demo{Name: "failsafe", Summary: "20 high and 40 low calls a second to boreal over the capacity schedule: checkpoint 20's adaptive limiter and failsafe-go's adaptivelimiter + priority", Run: failsafeDemo},
		demo.Demo{Name: "priority", Summary: "40 single quotes and 8 ten-line baskets a second at C 12: lesson 19's limits vs checkpoint 20 (quotes first, basket lines shed)", Run: priorityDemo},
	)
}

// Command demo runs lesson 16's experiments, each end to end, and prints
// the table the page shows: go run ./lessons/16/demo NAME, or lab demo 16
// NAME (see quoteflowlab.dev/kit/demo).
package main

import "quoteflowlab.dev/kit/demo"

func main() {
	demo.Main(16,
		demo.Demo{Name: "basket-50", Summary: "one 50-line basket at normal: 150 calls through one limit of 6", Run: basket50},
		demo.Demo{Name: "shared-limit", Summary: "two 50-line baskets and 24 single quotes together: the checkpoint vs limiter_per_run (max_active)", Run: sharedLimit},
		demo.Demo{Name: "slow-basket", Summary: "3 lines at slow, cut at the 2 s deadline: the checkpoint vs deadline_without_cancel", Run: slowBasket},
		demo.Demo{Name: "jitter", Summary: "six 2-line baskets at outage: the waits before boreal's retries, the checkpoint vs no_jitter", Run: jitter},
		demo.Demo{Name: "ratelimited", Summary: "20 lines at ratelimited: the checkpoint vs ignores_retry_after (early_retries)", Run: rateLimited16},
		demo.Demo{Name: "outage", Summary: "4 lines at outage: answered partial, then completed by the compensation queue", Run: outageDemo},
	)
}

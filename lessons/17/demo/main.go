// Command demo runs lesson 17's experiments, each end to end, and prints
// the table the page shows: go run ./lessons/17/demo NAME, or lab demo 17
// NAME (see quoteflowlab.dev/kit/demo).
package main

import "quoteflowlab.dev/kit/demo"

func main() {
	demo.Main(17,
		demo.Demo{Name: "three-processes", Summary: "36 slow quotes over three processes: local limits vs one Redis quota (max_active)", Run: threeProcesses},
		demo.Demo{Name: "kill-9", Summary: "three processes on one Redis quota, one killed with kill -9: its leases come back", Run: kill9},
		demo.Demo{Name: "ratelimited", Summary: "bursts of 12 quotes at ratelimited over three processes: local vs --rate 5/250ms", Run: rateLimited17},
		demo.Demo{Name: "cost-quota", Summary: "quotes of quantity 2 and 40 at costlimited over three processes: a quota of calls vs of cost", Run: costQuota},
		demo.Demo{Name: "streams-claim", Summary: "a process killed holding queued jobs; another claims them after the visibility timeout", Run: streamsClaim},
		demo.Demo{Name: "redis-outage", Summary: "one process on Redis, Redis killed and started again empty: fail closed, then recover", Run: redisOutage},
	)
}

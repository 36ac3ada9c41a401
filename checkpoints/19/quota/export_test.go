package quota

import "github.com/redis/go-redis/v9"

// RateScript is the rate quota's script for one call, for
// BenchmarkRateQuota: the same arguments as the scripts it is compared with
// (N, the window in µs, an id, not used, and the cost), one answer.
var RateScript = redis.NewScript(rateLua + `
return admit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4]))
`)

// RateBuckets is how many buckets a rate window is cut into.
const RateBuckets = rateBuckets

// The scripts' hashes, for the benchmarks' count of round trips.
var (
	LeaseHash = leaseScript.Hash()
	RateHash  = rateScript.Hash()
)

// QueuedTries is how many tries of Acquire wait for this process's next
// round trip to Redis.
func (q *Redis) QueuedTries() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.tries)
}

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

// The lease scripts' hashes, for BenchmarkContended's count of round trips.
var (
	AcquireHash = acquireScript.Hash()
	ReleaseHash = releaseScript.Hash()
	RateHash    = rateScript.Hash()
)

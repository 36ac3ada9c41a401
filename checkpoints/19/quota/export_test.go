package quota

// RateScript is the rate quota's script, for BenchmarkRateQuota.
var RateScript = rateScript

// RateBuckets is how many buckets a rate window is cut into.
const RateBuckets = rateBuckets

// The lease scripts' hashes, for BenchmarkContended's count of round trips.
var (
	AcquireHash = acquireScript.Hash()
	ReleaseHash = releaseScript.Hash()
)

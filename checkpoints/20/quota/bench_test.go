package quota_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"quoteflowlab.dev/checkpoints/20/quota"
)

// What the quota costs each supplier call: one Acquire and its release, on
// the local semaphore and on a real redis-server over loopback (two round
// trips: the acquire script and ZREM). Reported as p50 and p99 in µs.
//
//	go test -run '^$' -bench AcquireRelease ./quota/
func BenchmarkAcquireRelease(b *testing.B) {
	b.Run("local", func(b *testing.B) {
		l, err := quota.NewLocal(6, quota.Rate{})
		if err != nil {
			b.Fatal(err)
		}
		benchAcquireRelease(b, l)
	})
	b.Run("redis", func(b *testing.B) {
		s := startRedis(b)
		benchAcquireRelease(b, processes(b, s.URL(), 1, quota.RedisConfig{Limit: 6})[0])
	})
}

func benchAcquireRelease(b *testing.B, q quota.Quota) {
	ctx := context.Background()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := q.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		q.Release()
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds())/1e3, "p99-µs")
}

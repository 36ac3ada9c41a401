package quota_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	"quoteflowlab.dev/checkpoints/20/quota"
)

// What the quota costs each supplier call: one Acquire and its Release, on
// the local semaphore and on a real redis-server over loopback (the acquire
// script, and the release script in the background). Reported as p50 and
// p99 in µs.
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

// The wait under contention: 1, 8 and 32 goroutines share a limit of 6,
// each taking a slot and giving it back at once, over and over; each
// Acquire+Release is timed. The peer is golang.org/x/sync/semaphore in one
// process; redis is one quota on a real redis-server, where a waiter
// sleeps until a release wakes it. Reported: p50, p99 and the longest
// (max) in µs; a waiter starved would show as a max far above the p50.
//
//	go test -run '^$' -bench Contended -benchtime 20000x ./quota/
func BenchmarkContended(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("semaphore/goroutines=%d", n), func(b *testing.B) {
			sem := semaphore.NewWeighted(6)
			benchContended(b, n, func(ctx context.Context) error { return sem.Acquire(ctx, 1) }, func() { sem.Release(1) })
		})
		b.Run(fmt.Sprintf("redis/goroutines=%d", n), func(b *testing.B) {
			s := startRedis(b)
			q := processes(b, s.URL(), 1, quota.RedisConfig{Limit: 6})[0]
			benchContended(b, n, q.Acquire, q.Release)
		})
	}
}

func benchContended(b *testing.B, goroutines int, acquire func(context.Context) error, release func()) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // every wait capped
	defer cancel()
	took := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range goroutines {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(b.N); i = next.Add(1) - 1 {
				start := time.Now()
				if err := acquire(ctx); err != nil {
					b.Error(err)
					return
				}
				release()
				took[i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(took)
	us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
	b.ReportMetric(us(took[len(took)/2]), "p50-µs")
	b.ReportMetric(us(took[len(took)*99/100]), "p99-µs")
	b.ReportMetric(us(took[len(took)-1]), "max-µs")
}

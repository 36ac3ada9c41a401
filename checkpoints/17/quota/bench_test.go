package quota_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/semaphore"

	"quoteflowlab.dev/checkpoints/17/quota"
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
// floor is the semaphore again, each slot held for one round trip to
// the same redis-server (a PING before the Release): what any quota whose
// slot comes back only when Redis hears of it pays at least, on this machine
// now. For redis also the round trips: tries/op, the acquire script's runs per
// Acquire (1: every waiter was woken, none tried again because its timer,
// the Poll or the first lease's expiry, fired first), and trips/op, every
// script run (the tries and the releases); for floor and redis the CPU
// each op cost this process and redis-server, which a busy machine changes
// far less than the waits (see BenchmarkRateThroughput).
//
//	go test -run '^$' -bench Contended -benchtime 20000x ./quota/
func BenchmarkContended(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("semaphore/goroutines=%d", n), func(b *testing.B) {
			sem := semaphore.NewWeighted(6)
			benchContended(b, n, func(ctx context.Context) error { return sem.Acquire(ctx, 1) }, func() { sem.Release(1) })
		})
		b.Run(fmt.Sprintf("floor/goroutines=%d", n), func(b *testing.B) {
			rdb := client(b, startRedis(b).URL())
			sem := semaphore.NewWeighted(6)
			c0, ok0 := processCPU()
			r0 := redisCPU(b, rdb)
			benchContended(b, n, func(ctx context.Context) error { return sem.Acquire(ctx, 1) }, func() {
				if err := rdb.Ping(context.Background()).Err(); err != nil {
					b.Error(err)
				}
				sem.Release(1)
			})
			if c, ok := processCPU(); ok && ok0 {
				b.ReportMetric(float64((c-c0).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
			}
			b.ReportMetric(float64((redisCPU(b, rdb)-r0).Nanoseconds())/1e3/float64(b.N), "redis-cpu-µs/op")
		})
		b.Run(fmt.Sprintf("redis/goroutines=%d", n), func(b *testing.B) {
			s := startRedis(b)
			rdb := &countingClient{Client: client(b, s.URL())}
			q, err := quota.NewRedis(rdb, quota.RedisConfig{Limit: 6, OpTimeout: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(q.Close) // before the client's Close
			if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
				b.Fatal(err)
			}
			c0 := costsNow(b, rdb)
			benchContended(b, n, q.Acquire, q.Release)
			q.Close() // every release has run
			b.ReportMetric(float64(rdb.runs(quota.AcquireHash))/float64(b.N), "tries/op")
			costsSince(b, rdb, c0, "op")
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

// countingClient counts the scripts a quota runs, by hash.
type countingClient struct {
	*redis.Client
	mu     sync.Mutex
	bySHA  map[string]int64
	allRun int64
}

func (c *countingClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	c.mu.Lock()
	if c.bySHA == nil {
		c.bySHA = map[string]int64{}
	}
	c.bySHA[sha]++
	c.allRun++
	c.mu.Unlock()
	return c.Client.EvalSha(ctx, sha, keys, args...)
}

// runs is how many times the script of hash sha ran ("": every script).
func (c *countingClient) runs(sha string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sha == "" {
		return c.allRun
	}
	return c.bySHA[sha]
}

// redisBusy is the µs redis-server spent in commands so far (INFO
// commandstats: the scripts, the publishes, everything).
func redisBusy(b *testing.B, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		if name != "cmdstat_evalsha" && name != "cmdstat_eval" {
			continue // run inside a script: counted in it already
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					b.Fatal(err)
				}
				total += n
			}
		}
	}
	return total
}

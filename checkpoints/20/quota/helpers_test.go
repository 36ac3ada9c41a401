package quota_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/20/internal/redistest"
	"quoteflowlab.dev/checkpoints/20/quota"
)

// processes returns n Redis quotas on url, each with its own client: n
// processes sharing one quota. Cleanup closes each quota, then its client.
// Unless cfg says, a round trip may take a second: on a machine busy
// compiling, 250 ms is not always enough, and these tests are about the
// quota's counting, not about how fast a slow Redis is declared gone.
func processes(t testing.TB, url string, n int, cfg quota.RedisConfig) []*quota.Redis {
	t.Helper()
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = time.Second
	}
	qs := make([]*quota.Redis, n)
	for i := range qs {
		rdb := client(t, url)
		q, err := quota.NewRedis(rdb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(q.Close) // runs before the client's Close (cleanups run last-in first-out)
		qs[i] = q
	}
	return qs
}

func client(t testing.TB, url string) *redis.Client {
	t.Helper()
	rdb, err := quota.NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func startRedis(t testing.TB) *redistest.Server { return redistest.Start(t) }

// gauge counts calls in flight and remembers the most at once.
type gauge struct{ now, peak atomic.Int64 }

func (g *gauge) enter() {
	n := g.now.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

// hammer runs workers goroutines on each quota until ctx ends, each taking a
// slot, holding it for hold, and giving it back; g sees every slot held.
// It returns how many acquisitions succeeded, how many failed closed
// (ErrUnavailable, then tried again) and the first other error.
func hammer(ctx context.Context, qs []quota.Quota, workers int, hold time.Duration, g *gauge) (admitted, unavailable int64, err error) {
	var wg sync.WaitGroup
	var nAdmitted, nUnavailable atomic.Int64
	var firstErr error
	var once sync.Once
	for _, q := range qs {
		for range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					err := q.Acquire(ctx)
					if errors.Is(err, quota.ErrUnavailable) {
						nUnavailable.Add(1) // failed closed; try again, as a caller would
						time.Sleep(10 * time.Millisecond)
						continue
					}
					if err != nil {
						if ctx.Err() == nil {
							once.Do(func() { firstErr = err })
						}
						return
					}
					g.enter()
					nAdmitted.Add(1)
					t := time.NewTimer(hold)
					select {
					case <-t.C:
					case <-ctx.Done():
						t.Stop()
					}
					g.leave()
					q.Release()
				}
			})
		}
	}
	wg.Wait()
	return nAdmitted.Load(), nUnavailable.Load(), firstErr
}

func asQuotas[Q quota.Quota](qs []Q) []quota.Quota {
	out := make([]quota.Quota, len(qs))
	for i, q := range qs {
		out[i] = q
	}
	return out
}

// holdN takes n slots of q (capped wait) and returns a function releasing them all.
func holdN(t *testing.T, q quota.Quota, n int) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for range n {
		if err := q.Acquire(ctx); err != nil {
			t.Fatalf("holding %d slots: %v", n, err)
		}
	}
	return func() {
		for range n {
			q.Release()
		}
	}
}

// tryAcquire tries once, briefly: true if a slot was free (it is given back).
func tryAcquire(t *testing.T, q quota.Quota, wait time.Duration) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := q.Acquire(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	q.Release()
	return true
}

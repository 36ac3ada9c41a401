package quota_test

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"quoteflowlab.dev/checkpoints/20/quota"
)

// A unit test of the lease scripts on an embedded stand-in whose clock the
// test sets: leases expire by Redis's clock, not by the processes' own. The
// stand-in's clock jumps a TTL ahead while no real time passes, and the dead
// process's slots are free at once.
func TestLeasesExpireByRedisClock(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	base := time.Now().Add(time.Hour) // an hour ahead of every process here
	m.SetTime(base)
	const ttl = 10 * time.Second // far longer than the test: real time cannot expire the leases
	qs := processes(t, "redis://"+m.Addr(), 2, quota.RedisConfig{Limit: 6, TTL: ttl})
	holdN(t, qs[0], 6)
	qs[0].Close() // killed
	if tryAcquire(t, qs[1], 30*time.Millisecond) {
		t.Fatal("a slot was free while the dead process's leases were live on Redis's clock")
	}
	m.SetTime(base.Add(ttl + time.Millisecond))
	// A generous bound: the stand-in's clock stands still unless the test
	// moves it, so waiting cannot expire a lease; six acquires took over
	// 500 ms on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 6 {
		if err := qs[1].Acquire(ctx); err != nil {
			t.Fatalf("after Redis's clock passed the TTL only %d slots came free: %v", i, err)
		}
	}
	qs[1].Close()
}

// Renewals too push expiries on Redis's clock. The stand-in's clock stands
// an hour ahead of this machine's: a renewal stamped with the process's own
// clock would write a lease already an hour expired, and the other process
// would take the slots of running calls.
func TestRenewalsUseRedisClock(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	m.SetTime(time.Now().Add(time.Hour))
	const ttl = 150 * time.Millisecond // renewed every 50 ms
	qs := processes(t, "redis://"+m.Addr(), 2, quota.RedisConfig{Limit: 6, TTL: ttl})
	release := holdN(t, qs[0], 6)
	defer release()
	until := time.Now().Add(4 * ttl)
	for time.Now().Before(until) {
		if tryAcquire(t, qs[1], 20*time.Millisecond) {
			t.Fatal("another process took a slot of a running call: a renewal wrote an expiry from the local clock")
		}
	}
}

package quota_test

import (
	"testing"
	"time"

	"quoteflowlab.dev/checkpoints/19/quota"
)

// TryAcquire (what a hedge asks) takes a slot only when one is free now:
// with the limit held across processes it says no at once, holding nothing;
// once a slot is given back it takes it, and that slot counts like any other.
func TestTryAcquireNeverWaitsAndCountsLikeAcquire(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	qs := processes(t, s.URL(), 2, quota.RedisConfig{Limit: 3})
	local, err := quota.NewLocal(3, quota.Rate{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		holder, asks quota.Quota
	}{{"redis, another process holding the limit", qs[0], qs[1]}, {"local", local, local}} {
		t.Run(c.name, func(t *testing.T) {
			holdN(t, c.holder, 3) // given back one by one below
			start := time.Now()
			ok, err := c.asks.TryAcquire(t.Context())
			if err != nil || ok {
				t.Fatalf("TryAcquire with the limit held = %v, %v; want false, nil", ok, err)
			}
			if took := time.Since(start); took > 500*time.Millisecond {
				t.Errorf("a full quota took %v to say no; TryAcquire must not wait", took)
			}
			c.holder.Release() // Redis: the lease is removed in the background, at once but not before Release returns
			for deadline := time.Now().Add(2 * time.Second); ; {
				ok, err = c.asks.TryAcquire(t.Context())
				if err != nil || ok || time.Now().After(deadline) {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err != nil || !ok {
				t.Fatalf("TryAcquire with a slot given back = %v, %v; want true within 2 s", ok, err)
			}
			if tryAcquire(t, c.holder, 100*time.Millisecond) {
				t.Error("a slot taken by TryAcquire was not counted: the limit admitted a fourth")
			}
			c.asks.Release()
			if !tryAcquire(t, c.holder, time.Second) {
				t.Error("the slot TryAcquire took did not come back with Release")
			}
			for range 2 {
				c.holder.Release()
			}
		})
	}
}

package quota_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/20/quota"
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

// triesSeen is a Redis client that says when each script run has returned:
// a test then knows a caller of Acquire has tried once and is waiting.
type triesSeen struct {
	*redis.Client
	tries chan struct{}
}

func (c triesSeen) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	cmd := c.Client.EvalSha(ctx, sha, keys, args...)
	select {
	case c.tries <- struct{}{}:
	default:
	}
	return cmd
}

// A caller of Acquire waiting in line in one process gets the slot that
// comes free: TryAcquire (a hedge) in another process, asking every
// millisecond while the waiter sleeps between its tries, never takes it.
func TestTryAcquireNeverPassesACallerWaitingInLine(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	cfg := quota.RedisConfig{Limit: 2, Poll: 100 * time.Millisecond} // the waiter tries every 50-150 ms
	qs := processes(t, s.URL(), 2, cfg)
	holder, hedger := qs[0], qs[1]
	holdN(t, holder, 2) // one given back below, the other at the end

	watch := triesSeen{Client: client(t, s.URL()), tries: make(chan struct{}, 1)}
	cfg.OpTimeout = time.Second
	waiter, err := quota.NewRedis(watch, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(waiter.Close)
	got := make(chan error, 1)
	go func() { got <- waiter.Acquire(testCtx(t)) }()
	select { // its first try found the quota full: it is in line now
	case <-watch.tries:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter made no try within 5 s")
	}

	holder.Release() // one slot comes free (removed in the background)
	passed := 0
	var waited error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		select {
		case waited = <-got:
		default:
			if time.Now().After(deadline) {
				t.Fatal("the waiter got no slot within 5 s")
			}
			ok, err := hedger.TryAcquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				passed++
				hedger.Release()
			}
			continue
		}
		break
	}
	if waited != nil {
		t.Fatalf("the waiter's Acquire: %v", waited)
	}
	waiter.Release()
	holder.Release()
	if passed != 0 {
		t.Errorf("TryAcquire took the freed slot %d times while a caller of Acquire was waiting for it; want 0: a hedge never passes a waiter", passed)
	}
}

// A caller of Acquire that gives up (its deadline passed) leaves the line:
// TryAcquire takes the next free slot at once, not a TTL later.
func TestACallerThatStopsWaitingLeavesTheLine(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	qs := processes(t, s.URL(), 2, quota.RedisConfig{Limit: 1, TTL: 10 * time.Second})
	holder, hedger := qs[0], qs[1]
	release := holdN(t, holder, 1)
	if tryAcquire(t, hedger, 150*time.Millisecond) { // in line 150 ms, then gives up
		t.Fatal("Acquire got a slot of a full quota")
	}
	release()
	start := time.Now()
	for !func() bool { ok, err := hedger.TryAcquire(t.Context()); return err == nil && ok }() {
		if time.Since(start) > 5*time.Second {
			t.Fatal("TryAcquire found no free slot within 5 s of a release: the caller that gave up still holds its place in line (it would for the TTL, 10 s)")
		}
		time.Sleep(5 * time.Millisecond)
	}
	hedger.Release()
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

package quota_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/17/quota"
)

// gatedClient holds the lease script's first run at a gate until the test
// opens it, and counts the lease script's runs.
type gatedClient struct {
	*redis.Client
	held   atomic.Bool
	gate   chan struct{} // closed by the test: the first run goes on
	at     chan struct{} // closed when the first run reached the gate
	leases atomic.Int64
}

func (c *gatedClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if sha == quota.LeaseHash {
		c.leases.Add(1)
		if c.held.CompareAndSwap(false, true) {
			close(c.at)
			<-c.gate
		}
	}
	return c.Client.EvalSha(ctx, sha, keys, args...)
}

// The tries of a process that come while its round trip to Redis is under
// way go together in the next: with the first caller's try held up, ten
// more callers of Acquire cost one round trip more, not ten, and each gets
// the answer a try of its own would have had: five slots of the limit of 6,
// five places in line.
func TestTriesThatComeTogetherShareARoundTrip(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	c := &gatedClient{Client: client(t, s.URL()), gate: make(chan struct{}), at: make(chan struct{})}
	q, err := quota.NewRedis(c, quota.RedisConfig{Limit: 6, OpTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	ctx, cancel := context.WithCancel(capped(t))
	defer cancel()
	got := make(chan error, 11)
	go func() { got <- q.Acquire(ctx) }()
	select {
	case <-c.at:
	case <-time.After(5 * time.Second):
		t.Fatal("the first try made no round trip within 5 s")
	}
	for range 10 {
		go func() { got <- q.Acquire(ctx) }()
	}
	for deadline := time.Now().Add(5 * time.Second); q.QueuedTries() < 10; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 10 tries queued within 5 s", q.QueuedTries())
		}
		time.Sleep(time.Millisecond)
	}
	close(c.gate)
	for i := range 6 {
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("admission %d: %v", i+1, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of 11 callers admitted within 5 s, want 6 (the limit)", i)
		}
	}
	if n := c.leases.Load(); n != 2 {
		t.Errorf("11 tries, 10 of them queued behind the first, took %d round trips; want 2", n)
	}
	select {
	case err := <-got:
		t.Fatalf("a seventh caller returned with a limit of 6: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if n := q.Held(); n != 6 {
		t.Errorf("the process holds %d leases, want 6", n)
	}
	cancel() // the five in line give up and leave it
	for range 5 {
		if err := <-got; !errors.Is(err, context.Canceled) {
			t.Errorf("a caller in line, cancelled: %v, want context.Canceled", err)
		}
	}
	for range 6 {
		q.Release()
	}
}

// A slot given back in a process whose own caller waits for it wakes that
// caller from the release's answer, with no message through Redis; a
// waiter in another process is woken by one message.
func TestAWaiterOfTheSameProcessIsWokenWithoutAMessage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		processes int
		want      int64
	}{{"same process", 1, 0}, {"another process", 2, 1}} {
		t.Run(c.name, func(t *testing.T) {
			s := startRedis(t)
			cfg := quota.RedisConfig{Limit: 1, Poll: noPoll}
			qs := processes(t, s.URL(), c.processes, cfg)
			holder, waiter := qs[0], qs[len(qs)-1]
			release := holdN(t, holder, 1)
			rdb := client(t, s.URL())
			if err := rdb.ConfigResetStat(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
			got := make(chan error, 1)
			go func() { got <- waiter.Acquire(capped(t)) }()
			for deadline := time.Now().Add(5 * time.Second); lineLength(t, rdb) == 0; {
				if time.Now().After(deadline) {
					t.Fatal("the waiter took no place in line within 5 s")
				}
				time.Sleep(time.Millisecond)
			}
			release()
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(4 * time.Second):
				t.Fatal("the waiter got no slot within 4 s of the release")
			}
			waiter.Release()
			if n := publishes(t, rdb); n != c.want {
				t.Errorf("waking a waiter in %s took %d messages, want %d", c.name, n, c.want)
			}
		})
	}
}

// lineLength is how many callers wait in the line of the default prefix.
func lineLength(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	n, err := rdb.ZCard(t.Context(), "{"+quota.DefaultPrefix+"}:line").Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// publishes is how many PUBLISH commands Redis ran since its stats were
// reset (INFO commandstats counts those a script runs too).
func publishes(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		stats, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_publish:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}
	}
	return 0
}

// A try waiting for a round trip of its process's other tries and releases
// to end (they go together) waits no longer than its caller's deadline: on
// a Redis that answers nothing, one caller holds the round trip for its
// OpTimeout, and a second with 30 ms left gets context.DeadlineExceeded at
// about 30 ms, the first ErrUnavailable.
func TestTryQueuedBehindAStalledTripKeepsItsDeadline(t *testing.T) {
	t.Parallel()
	addr := blackHole(t)
	q := processes(t, "redis://"+addr, 1, quota.RedisConfig{OpTimeout: time.Second})[0]
	first := make(chan error, 1)
	go func() { first <- q.Acquire(capped(t)) }()
	time.Sleep(50 * time.Millisecond) // the first try's round trip is under way
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := q.Acquire(ctx)
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 700*time.Millisecond {
		t.Errorf("a caller with 30 ms left, behind a stalled round trip: %v after %s, want context.DeadlineExceeded at its deadline", err, took.Round(time.Millisecond))
	}
	if err := <-first; !errors.Is(err, quota.ErrUnavailable) {
		t.Errorf("the caller holding the stalled round trip: %v, want ErrUnavailable after OpTimeout", err)
	}
}

package quota_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"quoteflowlab.dev/checkpoints/19/quota"
)

// A caller whose deadline runs out while its round trip to Redis is under
// way gets its own context's error, not ErrUnavailable: the store did not
// fail, the caller ran out of time. go-redis gives the socket ctx's
// deadline, so the network reports "i/o timeout" at that instant, and ctx's
// own timer may not have fired yet (ctx.Err() still nil). lateCtx holds that
// moment open: its deadline has passed and its Err is nil. The Redis here
// reads every command and answers none.
func TestDeadlineDuringRoundTripIsTheCallers(t *testing.T) {
	t.Parallel()
	addr := blackHole(t)
	q := processes(t, "redis://"+addr, 1, quota.RedisConfig{
		Rate:      quota.Rate{N: 5, Per: time.Second},
		OpTimeout: time.Second, // the caller's deadline (30 ms) runs out long before
	})[0]
	calls := map[string]func(context.Context) error{
		"Acquire": q.Acquire,
		"TryAcquire": func(ctx context.Context) error {
			_, err := q.TryAcquire(ctx)
			return err
		},
		"WaitN": func(ctx context.Context) error { return q.WaitN(ctx, "boreal", 2) },
		"Allow": func(ctx context.Context) error {
			_, _, err := q.Allow(ctx, "boreal")
			return err
		},
	}
	for name, call := range calls {
		ctx := lateCtx{context.Background(), time.Now().Add(30 * time.Millisecond)}
		start := time.Now()
		err := call(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, quota.ErrUnavailable) {
			t.Errorf("%s with the deadline running out during its round trip = %v, want context.DeadlineExceeded (the caller's), not ErrUnavailable", name, err)
		}
		// go-redis tries twice more (5-50 ms apart), each failing at once:
		// well under the OpTimeout that bounds the round trip otherwise.
		if took := time.Since(start); took > 700*time.Millisecond {
			t.Errorf("%s took %s: the caller's deadline (30ms) did not bound the round trip, OpTimeout (1s) did", name, took)
		}
	}
}

// A rate call waiting for a round trip of its process's other calls to end
// (they go together) waits no longer than its own deadline: on a Redis that
// answers nothing, one call holds the round trip for its OpTimeout, and a
// second with 30 ms left gets context.DeadlineExceeded at about 30 ms.
func TestRateCallQueuedBehindAStalledTripKeepsItsDeadline(t *testing.T) {
	t.Parallel()
	addr := blackHole(t)
	q := processes(t, "redis://"+addr, 1, quota.RedisConfig{
		Rate:      quota.Rate{N: 5, Per: time.Second},
		OpTimeout: time.Second,
	})[0]
	first := make(chan error, 1)
	go func() { first <- q.Wait(context.Background(), "boreal") }()
	time.Sleep(50 * time.Millisecond) // the first call's round trip is under way
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := q.Wait(ctx, "boreal")
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > 700*time.Millisecond {
		t.Errorf("a call with 30 ms left, behind a stalled round trip: %v after %s, want context.DeadlineExceeded at its deadline", err, took.Round(time.Millisecond))
	}
	if err := <-first; !errors.Is(err, quota.ErrUnavailable) {
		t.Errorf("the call holding the stalled round trip: %v, want ErrUnavailable after OpTimeout", err)
	}
}

// lateCtx is a context whose deadline may have passed while it is not done.
type lateCtx struct {
	context.Context
	deadline time.Time
}

func (c lateCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// blackHole listens on 127.0.0.1 and reads every connection without ever
// answering: a Redis that stalls for good. Cleanup closes everything.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { io.Copy(io.Discard, c) })
		}
	})
	t.Cleanup(func() { // after the quota's and its client's cleanups
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

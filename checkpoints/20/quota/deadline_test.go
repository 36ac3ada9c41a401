package quota_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"quoteflowlab.dev/checkpoints/20/quota"
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
		OpTimeout: 300 * time.Millisecond, // the caller's deadline (30 ms) runs out first
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
		if took := time.Since(start); took > 250*time.Millisecond {
			t.Errorf("%s took %s: the caller's deadline (30ms) did not bound the round trip", name, took)
		}
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

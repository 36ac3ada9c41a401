package quota_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"quoteflowlab.dev/checkpoints/19/quota"
)

// admission is one call the rate quota let through, bracketed by the local
// clock: Redis admitted it at some moment between from and to.
type admission struct{ from, to time.Time }

// crowded returns a set of more than n admissions that certainly fell in one
// window of length per (the latest end minus the earliest start is shorter
// than per), or nil. Admissions that merely might share a window are not
// counted: the check can miss a violation, never invent one.
func crowded(adm []admission, n int, per time.Duration) []admission {
	for _, first := range adm {
		var later []admission
		for _, a := range adm {
			if !a.from.Before(first.from) {
				later = append(later, a)
			}
		}
		if len(later) <= n {
			continue
		}
		slices.SortFunc(later, func(a, b admission) int { return a.to.Compare(b.to) })
		if set := later[:n+1]; set[n].to.Sub(first.from) < per {
			return set
		}
	}
	return nil
}

// Three processes share boreal's rate of 5 per 200 ms: twelve goroutines
// asking as fast as they can get no window of 200 ms with more than 5
// admissions, and the quota still admits at about its rate.
func TestRedisRateHoldsAcrossProcesses(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	rate := quota.Rate{N: 5, Per: 200 * time.Millisecond}
	qs := processes(t, s.URL(), 3, quota.RedisConfig{Rate: rate})
	const run = 1200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var mu sync.Mutex
	var adm []admission
	var wg sync.WaitGroup
	for _, q := range qs {
		for range 4 {
			wg.Go(func() {
				for ctx.Err() == nil {
					from := time.Now()
					ok, wait, err := q.Allow(ctx, "boreal")
					to := time.Now()
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("Allow: %v", err)
						}
						return
					}
					if ok {
						mu.Lock()
						adm = append(adm, admission{from, to})
						mu.Unlock()
						continue
					}
					// The window is counted in buckets: a call may wait one more.
					if most := rate.Per + rate.Per/quota.RateBuckets; wait <= 0 || wait > most {
						t.Errorf("Allow refused with retry-after %s, want in (0, %s]: a window and one bucket at most", wait, most)
						return
					}
					time.Sleep(wait / 2)
				}
			})
		}
	}
	wg.Wait()
	// Redis stamps each admission with its clock, this test with its own
	// monotonic one: over a window they may differ by a hair, never by 5 ms.
	const clocks = 5 * time.Millisecond
	if set := crowded(adm, rate.N, rate.Per-clocks); set != nil {
		t.Errorf("%d admissions within %s of each other across 3 processes, want at most %d in any %s",
			len(set), set[len(set)-1].to.Sub(set[0].from), rate.N, rate.Per)
	}
	// 1.2 s is 6 windows of 5: the quota must not starve its callers either.
	if len(adm) < 20 || len(adm) > 35 {
		t.Errorf("%d admissions in %s at 5 per 200 ms, want about 30", len(adm), run)
	}
}

// Wait returns as soon as the rate has room, and says ErrRateLimited at
// once when the room comes after the deadline. The window is long (2 s) so
// that a busy machine cannot use it up before the checks: every bound below
// holds however slow the calls are.
func TestRedisWaitHonoursTheDeadline(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	const per = 2 * time.Second
	rate := quota.Rate{N: 5, Per: per}
	qs := processes(t, s.URL(), 2, quota.RedisConfig{Rate: rate})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := time.Now() // before the first admission: the window's room comes back per after it at the earliest
	for i := range 5 {
		if err := qs[i%2].Wait(ctx, "boreal"); err != nil {
			t.Fatal(err)
		}
	}
	// A deadline the room cannot come before: it comes back a window after
	// the first admission, which was after first.
	deadline := first.Add(per * 3 / 4)
	if left := time.Until(deadline); left > per/4 { // the 5 calls took under half a window, as they always should
		short, cancelShort := context.WithDeadline(ctx, deadline)
		start := time.Now()
		if err := qs[0].Wait(short, "boreal"); !errors.Is(err, quota.ErrRateLimited) {
			t.Errorf("Wait with a full window and %v left = %v, want ErrRateLimited", left.Round(time.Millisecond), err)
		}
		// Waiting out the deadline would take left; saying so at once,
		// a round trip.
		if took := time.Since(start); took > per/8 {
			t.Errorf("ErrRateLimited came after %s, want at once (not after waiting for the deadline)", took)
		}
		cancelShort()
	} else {
		t.Errorf("five calls took %s of a %s window: the machine is too slow for this test", time.Since(first), per)
	}
	if err := qs[1].Wait(ctx, "atlas"); err != nil {
		t.Errorf("another supplier's rate was used up too: %v", err)
	}
	if err := qs[1].Wait(ctx, "boreal"); err != nil {
		t.Fatal(err)
	}
	// A little slack: Redis stamps the admissions with its own clock.
	if since := time.Since(first); since < per-5*time.Millisecond {
		t.Errorf("the 6th call to boreal came %s after the first 5 began, want a window (%s): the rate let it in early", since, per)
	}
}

// A weighted rate bounds the cost admitted per window, over every process:
// two orders of 60 units do not fit in 100 where two calls would, a 40 still
// does, and an order larger than the whole window never gets in.
func TestRedisWeightedRateBoundsTheCostAcrossProcesses(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	qs := processes(t, s.URL(), 3, quota.RedisConfig{Rate: quota.Rate{N: 100, Per: time.Minute}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	if err := qs[0].WaitN(ctx, "boreal", 60); err != nil {
		t.Fatalf("process 0, cost 60 of an empty window of 100: %v", err)
	}
	if err := qs[1].WaitN(short(), "boreal", 60); !errors.Is(err, quota.ErrRateLimited) {
		t.Errorf("process 1, cost 60 after 60 of 100: %v, want ErrRateLimited (the window frees in a minute)", err)
	}
	if err := qs[2].WaitN(ctx, "boreal", 40); err != nil {
		t.Errorf("process 2, cost 40 after 60 of 100: %v, want admitted", err)
	}
	if err := qs[1].Wait(short(), "boreal"); !errors.Is(err, quota.ErrRateLimited) {
		t.Errorf("process 1, one call with 100 of 100 used: %v, want ErrRateLimited", err)
	}
	if err := qs[1].WaitN(ctx, "atlas", 101); !errors.Is(err, quota.ErrRateLimited) {
		t.Errorf("cost 101 in a window of 100: %v, want ErrRateLimited at once", err)
	}
}

// A call that does not fit waits until enough cost has left the window.
func TestRedisWeightedWaitEndsWhenTheCostLeaves(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	const per = 300 * time.Millisecond
	qs := processes(t, s.URL(), 2, quota.RedisConfig{Rate: quota.Rate{N: 100, Per: per}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := qs[0].WaitN(ctx, "boreal", 60); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := qs[1].WaitN(ctx, "boreal", 60); err != nil {
		t.Fatalf("the second 60 should get in once the first leaves the window: %v", err)
	}
	// Redis admitted the first before start: the second cannot be admitted
	// until per after that, less the moment between the two (a lower bound).
	if waited := time.Since(start); waited < per-50*time.Millisecond {
		t.Errorf("the second 60 got in after %v, before the first had left the %v window", waited, per)
	}
}

// The rate quota's memory does not grow with the rate: after a thousand
// calls admitted within one window, the key holds a counter per bucket of
// the window (at most RateBuckets + 1 of them) and their sum and oldest
// bucket, not a member per call.
func TestRedisRateMemoryIsBoundedWhateverTheRate(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	qs := processes(t, s.URL(), 1, quota.RedisConfig{Rate: quota.Rate{N: 1_000_000, Per: 100 * time.Millisecond}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 1000 {
		ok, _, err := qs[0].Allow(ctx, "boreal")
		if err != nil || !ok {
			t.Fatalf("call %d of a million per 100 ms: %v, %v; want admitted", i, ok, err)
		}
	}
	fields, err := client(t, s.URL()).HKeys(ctx, "{quoteflow}:rate:boreal").Result()
	if err != nil {
		t.Fatalf("the rate key is not a hash of counters: %v", err)
	}
	counters := 0
	for _, f := range fields {
		if _, err := strconv.ParseInt(f, 10, 64); err == nil {
			counters++
		} else if f != "t" && f != "lo" {
			t.Errorf("the rate key holds a field %q: neither a bucket, nor the sum (t), nor the oldest bucket (lo)", f)
		}
	}
	if counters < 1 || counters > quota.RateBuckets+1 || len(fields) > quota.RateBuckets+3 {
		t.Errorf("after 1000 admissions the rate key holds %d counters in %d fields, want 1 to %d counters", counters, len(fields), quota.RateBuckets+1)
	}
}

// A steady flow under the rate is never refused: the counters drop what
// leaves the window from their sum (a sum that only grew would refuse the
// flow once N calls had passed, until the key expired).
func TestRedisRateAdmitsASteadyFlowUnderTheRate(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	q := processes(t, s.URL(), 1, quota.RedisConfig{Rate: quota.Rate{N: 6, Per: 200 * time.Millisecond}})[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond) // 4 a window: room for 2 more if a busy machine bunches them
	defer tick.Stop()
	for i := range 20 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		ok, retry, err := q.Allow(ctx, "boreal")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("call %d of one every 50 ms at 6 per 200 ms: refused, room in %v", i+1, retry)
		}
	}
}

// Calls of one process that come while a round trip is under way go
// together in the next, and each is counted as if alone: 32 goroutines
// asking 10 times each, on two keys at 100 per minute, get exactly 100 of
// each key's 160 calls, in fewer round trips than calls.
func TestRedisRateCallsShareRoundTrips(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	rdb := &countingClient{Client: client(t, s.URL())}
	q, err := quota.NewRedis(rdb, quota.RedisConfig{Rate: quota.Rate{N: 100, Per: time.Minute}, OpTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close) // before the client's Close
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	keys := []string{"boreal", "atlas"}
	var mu sync.Mutex
	admitted := map[string]int{}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 10 {
				key := keys[(g+i)%2]
				ok, wait, err := q.Allow(ctx, key)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok && wait <= 0 {
					t.Errorf("refused with no time to wait (%v)", wait)
				}
				if ok {
					mu.Lock()
					admitted[key]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for _, key := range keys {
		if admitted[key] != 100 {
			t.Errorf("%s: %d of 160 calls admitted at 100 per minute, want exactly 100", key, admitted[key])
		}
	}
	trips := rdb.runs(quota.RateHash)
	if trips >= 320 {
		t.Errorf("320 calls from 32 goroutines took %d round trips: none went together", trips)
	}
	t.Logf("320 calls in %d round trips", trips)
}

// Close while rate calls are queued behind a round trip: every call
// returns (admitted, refused or ErrUnavailable), and Close returns having
// waited for the round trips it let start, none after (goleak and -race
// see the rest).
func TestRedisCloseWhileRateCallsAreQueued(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	for range 10 {
		q := processes(t, s.URL(), 1, quota.RedisConfig{Rate: quota.Rate{N: 1_000_000, Per: time.Second}})[0]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				for ctx.Err() == nil {
					if _, _, err := q.Allow(ctx, "boreal"); err != nil {
						if !errors.Is(err, quota.ErrUnavailable) && ctx.Err() == nil {
							t.Errorf("Allow during Close: %v, want nil or ErrUnavailable", err)
						}
						return
					}
				}
			})
		}
		time.Sleep(5 * time.Millisecond)
		q.Close()
		cancel()
		wg.Wait()
	}
}

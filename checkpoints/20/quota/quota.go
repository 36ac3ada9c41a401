// Package quota limits supplier calls in two ways: how many run at once (the
// concurrency quota) and how many start in a window for each supplier (the
// rate quota).
//
// Local keeps both limits in this process, like the semaphore of lesson 13.
// Redis keeps them in a Redis server that every process shares, so three
// processes with a limit of 6 put 6 calls on the suppliers, not 18.
package quota

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Quota is what a service asks before each supplier call: Acquire a slot,
// Wait for the supplier's rate, make the call, Release the slot. Its
// Acquire and Release are those of a fanout.Limiter.
type Quota interface {
	// Acquire takes one concurrency slot, waiting for one to be free or for
	// ctx to end (then ctx's error, and nothing is held).
	Acquire(ctx context.Context) error
	// TryAcquire takes a slot only if one is free now, without waiting, and
	// reports whether it did (false, nil: the quota is full). A hedge asks
	// this way: it never waits in line.
	TryAcquire(ctx context.Context) (bool, error)
	// Release gives back a slot taken by Acquire or TryAcquire; every
	// successful one is paired with one Release.
	Release()
	// Wait returns nil when one more call to key fits in key's rate. When
	// the first free moment is past ctx's deadline it returns ErrRateLimited
	// at once; when ctx ends first, ctx's error. It is WaitN with cost 1.
	Wait(ctx context.Context, key string) error
	// WaitN is Wait for a call that weighs cost (≥ 1) in key's rate: the
	// rate then bounds the cost admitted per window, not the calls. A cost
	// larger than the whole rate never fits: ErrRateLimited at once.
	WaitN(ctx context.Context, key string, cost int) error
}

var (
	// ErrUnavailable means the shared store could not be asked. Nothing was
	// taken: the quota fails closed, never admitting a call it cannot count.
	ErrUnavailable = errors.New("quota: the shared quota store is unavailable")
	// ErrRateLimited means the rate quota has no room before the deadline.
	ErrRateLimited = errors.New("quota: no room in the rate quota before the deadline")
)

// Rate is a rate quota: at most N units of cost start in any window of
// length Per; a call costs 1 (Wait) or what WaitN says, so N counts calls or,
// say, the units ordered. The zero Rate is no rate quota at all.
type Rate struct {
	N   int
	Per time.Duration
}

// Unlimited reports whether r is the zero Rate.
func (r Rate) Unlimited() bool { return r.N == 0 }

// String formats r as ParseRate reads it ("5/250ms"); the zero Rate is "none".
func (r Rate) String() string {
	if r.Unlimited() {
		return "none"
	}
	return fmt.Sprintf("%d/%s", r.N, r.Per)
}

// ParseRate reads "N/duration" ("5/250ms") or "none".
func ParseRate(s string) (Rate, error) {
	if s == "none" || s == "" {
		return Rate{}, nil
	}
	n, per, ok := strings.Cut(s, "/")
	count, err1 := strconv.Atoi(n)
	d, err2 := time.ParseDuration(per)
	if !ok || err1 != nil || err2 != nil || count < 1 || d < time.Millisecond {
		return Rate{}, fmt.Errorf("quota: rate %q is not N/duration with N ≥ 1 and a duration ≥ 1ms (like 5/250ms), or none", s)
	}
	return Rate{N: count, Per: d}, nil
}

func (r Rate) validate() error {
	if r.N < 0 || (r.N > 0 && r.Per < time.Millisecond) {
		return fmt.Errorf("quota: rate %d per %s: N must not be negative and the window must be at least 1ms", r.N, r.Per)
	}
	return nil
}

// sleep waits d or until ctx ends, whichever is first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// jitter spreads waiters out: uniform in [d/2, 3d/2).
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d)
}

// fits reports whether waiting d still leaves ctx's deadline ahead.
func fits(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d
}

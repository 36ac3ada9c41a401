// Package fanout runs many jobs at once under one shared limit, each call
// with its own timeout, failed calls retried selectively with full jitter
// and the server's Retry-After honoured, the whole run under one deadline
// that cancels whatever is still running. It returns one result per job, in
// job order: a value, or the reason there is none.
package fanout

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"quoteflowlab.dev/checkpoints/20/quota"
)

// Defaults for the zero fields of Options.
const (
	DefaultCallTimeout = time.Second
	DefaultMaxAttempts = 3
	DefaultBackoffBase = 50 * time.Millisecond
	DefaultBackoffCap  = time.Second
)

// A Job makes one call; attempt counts from 1. It must honour ctx: when ctx
// ends (its call timeout, or the run's deadline), it stops and returns.
type Job[T any] func(ctx context.Context, attempt int) (T, error)

// Options configure Run; a zero field takes its default.
type Options struct {
	// Limiter is shared by every Run in the process, and every other caller
	// of the same suppliers (required). Each call holds one slot; waits
	// between attempts hold none.
	Limiter Limiter
	// Deadline ends the run, counted from the start of Run; 0: only ctx's
	// own deadline. When it passes, every call still running is cancelled.
	Deadline    time.Duration
	CallTimeout time.Duration // one call's limit (CodeTimeout when it passes)
	// Floor is the least time a call may start with before the deadline:
	// a first call that would start with less is not made (CodeNoBudget),
	// a retry that would is not made either (the job keeps its last code),
	// and a wait before a retry is taken only if Floor is still left after
	// it. 0: any time left will do.
	Floor       time.Duration
	MaxAttempts int // calls per job at most, first included
	// The wait before retry k is uniform in [0, min(BackoffCap, BackoffBase·2^(k-1))]
	// ("full jitter"), plus whatever a Retry-After asked for.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	Classify    Classifier // nil: Classify
	// Jitter returns a duration in [0, limit]; nil draws it uniformly from
	// math/rand/v2. Tests pass their own. It must be safe for concurrent use.
	Jitter func(limit time.Duration) time.Duration
	// Budget, when set, pays for every retry: a retry is made only if
	// TrySpend takes a token, else the job keeps its last code (package
	// hedge's Budget, shared with the hedges). nil: retries are not paid for.
	Budget interface{ TrySpend() bool }
	// Gate, when set, is asked before each call of job i, before the call
	// takes a slot or a budget token (a circuit breaker). A call it refuses
	// (err != nil) is not made: a first call ends the job at once with
	// CodeCircuitOpen, a retry ends it with its last code; neither is
	// retried. A call it lets through is reported with done, exactly once:
	// the call's error (nil for a success), or ErrNotMade when it was not
	// made after all (no slot, time or token).
	Gate func(job int) (done func(err error), err error)
}

// ErrNotMade is what Gate's done hears of a call it let through that was
// not made after all.
var ErrNotMade = errors.New("fanout: call not made")

// Result is one job's outcome.
type Result[T any] struct {
	Value    T             // the job's answer when Code is ""
	Code     Code          // why there is no value; "" on success
	Err      error         // the last error behind Code, if any
	Attempts int           // calls made; 0 when the job never got a slot
	Elapsed  time.Duration // from the start of Run to this job's final result
}

// OK reports whether the job produced a value.
func (r Result[T]) OK() bool { return r.Code == "" }

// Run runs every job at once, each call holding a slot of opts.Limiter, and
// returns one Result per job, in job order.
//
// A call that fails is retried when opts.Classify says so and attempts are
// left, after the backoff and at least the server's Retry-After; a wait that
// would not leave opts.Floor before the deadline is not taken: the job stops
// with its last code (for a 429, CodeRateLimited). No call starts with less
// than opts.Floor left: a job whose first call would is CodeNoBudget.
//
// When the deadline passes or ctx ends, the calls still running are
// cancelled through their contexts, jobs without a final result report
// CodeDeadline, and Run returns as soon as those calls have returned: no
// goroutine it started outlives it. A panic in a job is re-raised here.
func Run[T any](ctx context.Context, jobs []Job[T], opts Options) []Result[T] {
	o := opts.withDefaults()
	start := time.Now()
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if o.Deadline > 0 {
		runCtx, cancel = context.WithDeadline(ctx, start.Add(o.Deadline))
	}
	defer cancel()
	results := make([]Result[T], len(jobs))
	panics := make([]any, len(jobs))
	var wg sync.WaitGroup
	for i, job := range jobs {
		wg.Go(func() {
			defer catchPanic(&panics[i])
			results[i] = runJob(runCtx, start, i, job, &o)
		})
	}
	wg.Wait() // the deadline cancelled every call still running; all have returned
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	return results
}

// runJob calls job until it succeeds, fails for good, runs out of attempts,
// or the run ends.
func runJob[T any](ctx context.Context, start time.Time, index int, job Job[T], o *Options) Result[T] {
	var res Result[T]
	finish := func(code Code, err error) Result[T] {
		res.Code, res.Err, res.Elapsed = code, err, time.Since(start)
		return res
	}
	var last Verdict // the judgement of the last call made
	for {
		done := func(error) {}
		if o.Gate != nil {
			d, err := o.Gate(index)
			if err != nil && res.Attempts > 0 {
				return finish(last.Code, res.Err) // the supplier was asked: report what it said
			}
			if err != nil {
				return finish(CodeCircuitOpen, err) // refused: no slot, no token, no call
			}
			done = d
		}
		if err := o.Limiter.Acquire(ctx); err != nil {
			done(ErrNotMade)
			if ctx.Err() == nil && errors.Is(err, quota.ErrUnavailable) {
				return finish(CodeQuotaUnavailable, err) // a shared limit out of reach: closed, no call
			}
			return finish(CodeDeadline, err) // the run ended while waiting in line
		}
		if !fits(ctx, 0, o.Floor) { // a call that cannot finish only postpones the failure
			o.Limiter.Release()
			done(ErrNotMade)
			if res.Attempts > 0 {
				return finish(last.Code, res.Err) // the supplier was asked: report what it said
			}
			return finish(CodeNoBudget, nil)
		}
		if res.Attempts > 0 && o.Budget != nil && !o.Budget.TrySpend() {
			o.Limiter.Release()
			done(ErrNotMade)
			return finish(last.Code, res.Err) // no token for a retry: the last failure stands
		}
		res.Attempts++
		v, verdict, err := callOnce(ctx, job, res.Attempts, o)
		o.Limiter.Release()
		done(err)
		if err == nil {
			res.Value = v
			return finish("", nil)
		}
		if ctx.Err() != nil {
			return finish(CodeDeadline, err) // cut by the deadline, not by its own timeout
		}
		if !verdict.Retry || res.Attempts >= o.MaxAttempts {
			return finish(verdict.Code, err)
		}
		last, res.Err = verdict, err
		wait := verdict.RetryAfter + o.Jitter(backoffLimit(res.Attempts, o))
		if !fits(ctx, wait, o.Floor) {
			return finish(verdict.Code, err) // a wait after which no call fits helps nobody
		}
		if err := sleep(ctx, wait); err != nil {
			return finish(CodeDeadline, err)
		}
	}
}

// callOnce makes one call under its own timeout and judges a failure.
func callOnce[T any](ctx context.Context, job Job[T], attempt int, o *Options) (T, Verdict, error) {
	callCtx, cancel := context.WithTimeout(ctx, o.CallTimeout)
	defer cancel()
	v, err := job(callCtx, attempt)
	switch {
	case err == nil:
		return v, Verdict{}, nil
	case callCtx.Err() != nil && ctx.Err() == nil:
		return v, Verdict{Code: CodeTimeout, Retry: true}, err // its own limit, not the run's
	}
	return v, o.Classify(err), err
}

// backoffLimit is min(cap, base·2^(k-1)): the most retry k waits.
func backoffLimit(k int, o *Options) time.Duration {
	d := o.BackoffBase
	for i := 1; i < k && d < o.BackoffCap; i++ {
		d *= 2
	}
	return min(d, o.BackoffCap)
}

// fits reports whether a wait of d ends before ctx's deadline with at least
// floor left after it.
func fits(ctx context.Context, d, floor time.Duration) bool {
	deadline, ok := ctx.Deadline()
	if !ok {
		return true
	}
	left := time.Until(deadline) - d
	return left > 0 && left >= floor
}

// sleep waits for d, or returns ctx's error if ctx ends first.
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

func fullJitter(limit time.Duration) time.Duration {
	if limit <= 0 {
		return 0
	}
	return rand.N(limit + 1)
}

func (opts Options) withDefaults() Options {
	if opts.Limiter == nil {
		panic("fanout: Options.Limiter is required (one per process, shared by every Run)")
	}
	o := opts
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.BackoffBase <= 0 {
		o.BackoffBase = DefaultBackoffBase
	}
	if o.BackoffCap <= 0 {
		o.BackoffCap = DefaultBackoffCap
	}
	if o.Classify == nil {
		o.Classify = Classify
	}
	if o.Jitter == nil {
		o.Jitter = fullJitter
	}
	return o
}

func catchPanic(dst *any) {
	if p := recover(); p != nil {
		*dst = fmt.Sprintf("fanout: panic in a job: %v\n%s", p, debug.Stack())
	}
}

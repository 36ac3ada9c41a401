package fanout

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// recorder wraps jobs: it counts calls in flight (and the peak), and keeps
// when each attempt of each job started and ended, on the bubble's clock.
type recorder struct {
	mu       sync.Mutex
	start    time.Time
	inFlight int
	peak     int
	starts   map[int][]time.Duration // by job
	ends     map[int][]time.Duration
	cut      int // calls that saw their context end
}

func newRecorder() *recorder {
	return &recorder{start: time.Now(), starts: map[int][]time.Duration{}, ends: map[int][]time.Duration{}}
}

// job returns job i: each attempt takes d (honouring ctx), then answers with answer(attempt).
func (r *recorder) job(i int, d time.Duration, answer func(attempt int) (string, error)) Job[string] {
	return func(ctx context.Context, attempt int) (string, error) {
		r.mu.Lock()
		r.inFlight++
		r.peak = max(r.peak, r.inFlight)
		r.starts[i] = append(r.starts[i], time.Since(r.start))
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.inFlight--
			r.ends[i] = append(r.ends[i], time.Since(r.start))
			r.mu.Unlock()
		}()
		if err := sleep(ctx, d); err != nil {
			r.mu.Lock()
			r.cut++
			r.mu.Unlock()
			return "", err
		}
		return answer(attempt)
	}
}

func ok(attempt int) (string, error) { return fmt.Sprintf("ok after %d", attempt), nil }

func always(err error) func(int) (string, error) {
	return func(int) (string, error) { return "", err }
}

func noJitter(time.Duration) time.Duration    { return 0 }
func maxJitter(l time.Duration) time.Duration { return l }

func TestOneResultPerJobInJobOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		jobs := []Job[string]{
			rec.job(0, 30*time.Millisecond, ok),
			rec.job(1, 10*time.Millisecond, always(&StatusError{Status: 404})),
			rec.job(2, 20*time.Millisecond, always(fmt.Errorf("bad body: %w", ErrInvalidData))),
		}
		res := Run(t.Context(), jobs, Options{Limiter: NewLocal(6), Jitter: noJitter})
		if len(res) != 3 {
			t.Fatalf("%d results for 3 jobs", len(res))
		}
		want := []struct {
			code    Code
			elapsed time.Duration
		}{{"", 30 * time.Millisecond}, {HTTPCode(404), 10 * time.Millisecond}, {CodeInvalidData, 20 * time.Millisecond}}
		for i, w := range want {
			if res[i].Code != w.code || res[i].Attempts != 1 || res[i].Elapsed != w.elapsed {
				t.Errorf("job %d: code %q, %d attempts, elapsed %v; want %q, 1 attempt, %v",
					i, res[i].Code, res[i].Attempts, res[i].Elapsed, w.code, w.elapsed)
			}
		}
		if res[0].Value != "ok after 1" || !res[0].OK() || res[1].OK() {
			t.Errorf("job 0 = %+v, want its value", res[0])
		}
		if res[1].Err == nil {
			t.Error("job 1 has no error behind its code")
		}
	})
}

func TestOneLimiterBoundsEveryRunTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim := NewLocal(6)
		rec := newRecorder()
		var jobs [2][]Job[string]
		for r := range jobs {
			for i := range 50 {
				jobs[r] = append(jobs[r], rec.job(r*100+i, 20*time.Millisecond, ok))
			}
		}
		var wg sync.WaitGroup
		for r := range jobs {
			wg.Go(func() {
				for _, res := range Run(t.Context(), jobs[r], Options{Limiter: lim}) {
					if !res.OK() {
						t.Errorf("a job failed: %+v", res)
					}
				}
			})
		}
		wg.Wait()
		if rec.peak != 6 {
			t.Errorf("peak calls in flight = %d, want exactly 6 (the shared limit, reached)", rec.peak)
		}
		// 100 calls of 20 ms through 6 slots: 17 rounds.
		if got := time.Since(rec.start); got != 17*20*time.Millisecond {
			t.Errorf("both runs took %v, want 340ms", got)
		}
		if lim.InUse() != 0 {
			t.Errorf("%d slots still taken after both runs", lim.InUse())
		}
	})
}

// gaps are the waits between the end of each attempt and the start of the next.
func (r *recorder) gaps(i int) []time.Duration {
	var g []time.Duration
	for k := 1; k < len(r.starts[i]); k++ {
		g = append(g, r.starts[i][k]-r.ends[i][k-1])
	}
	return g
}

func TestBackoffCapsDoubleUpToTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		jobs := []Job[string]{rec.job(0, 5*time.Millisecond, always(&StatusError{Status: 503}))}
		res := Run(t.Context(), jobs, Options{Limiter: NewLocal(1), MaxAttempts: 5,
			BackoffBase: 10 * time.Millisecond, BackoffCap: 40 * time.Millisecond, Jitter: maxJitter})
		if res[0].Code != HTTPCode(503) || res[0].Attempts != 5 {
			t.Fatalf("got %q after %d attempts, want http_503 after 5", res[0].Code, res[0].Attempts)
		}
		want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond}
		if got := rec.gaps(0); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("waits at the top of each range = %v, want %v (base·2^(k-1), capped)", got, want)
		}
	})
}

// With the default random source, every wait falls in [0, its cap], and the
// waits of jobs that failed together are spread, not bunched at one instant.
func TestFullJitterSpreadsRetriesWithinTheirBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		var jobs []Job[string]
		for i := range 40 {
			jobs = append(jobs, rec.job(i, time.Millisecond, always(&StatusError{Status: 503})))
		}
		Run(t.Context(), jobs, Options{Limiter: NewLocal(40), MaxAttempts: 3,
			BackoffBase: 100 * time.Millisecond, BackoffCap: time.Second})
		caps := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}
		distinct := map[time.Duration]bool{}
		for i := range jobs {
			g := rec.gaps(i)
			if len(g) != 2 {
				t.Fatalf("job %d waited %d times, want 2", i, len(g))
			}
			for k, d := range g {
				if d < 0 || d > caps[k] {
					t.Errorf("job %d: wait before retry %d = %v, outside [0, %v]", i, k+1, d, caps[k])
				}
			}
			distinct[g[0]] = true
		}
		// 40 draws from 100,001 values: all alike would mean no jitter at all.
		if len(distinct) < 30 {
			t.Errorf("40 first waits took only %d distinct values: retries bunch together", len(distinct))
		}
	})
}

func TestRetryAfterIsWaitedAtLeast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		answer := func(attempt int) (string, error) {
			if attempt == 1 {
				return "", &StatusError{Status: 429, RetryAfter: 300 * time.Millisecond}
			}
			return ok(attempt)
		}
		res := Run(t.Context(), []Job[string]{rec.job(0, 10*time.Millisecond, answer)},
			Options{Limiter: NewLocal(1), Deadline: 2 * time.Second, Jitter: noJitter})
		if !res[0].OK() || res[0].Attempts != 2 {
			t.Fatalf("got %+v, want a value after 2 attempts", res[0])
		}
		if g := rec.gaps(0); len(g) != 1 || g[0] != 300*time.Millisecond {
			t.Errorf("wait before the retry = %v, want exactly the 300ms the server asked", g)
		}
	})
}

func TestRetryAfterBeyondTheDeadlineStopsWithRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		jobs := []Job[string]{rec.job(0, 10*time.Millisecond, always(&StatusError{Status: 429, RetryAfter: time.Second}))}
		res := Run(t.Context(), jobs, Options{Limiter: NewLocal(1), Deadline: 500 * time.Millisecond, Jitter: noJitter})
		if res[0].Code != CodeRateLimited || res[0].Attempts != 1 {
			t.Errorf("got %q after %d attempts, want rate_limited after 1: the asked wait does not fit", res[0].Code, res[0].Attempts)
		}
		if res[0].Elapsed != 10*time.Millisecond {
			t.Errorf("elapsed %v, want 10ms: no sleeping into the deadline", res[0].Elapsed)
		}
	})
}

func TestTheDeadlineCancelsRunningCallsAndReportsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		var jobs []Job[string]
		for i := range 10 {
			jobs = append(jobs, rec.job(i, time.Hour, ok)) // would never answer by itself
		}
		start := time.Now()
		res := Run(t.Context(), jobs, Options{Limiter: NewLocal(6), Deadline: 2 * time.Second, CallTimeout: time.Hour})
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("Run returned after %v, want exactly the 2s deadline", got)
		}
		if rec.cut != 6 || rec.inFlight != 0 {
			t.Errorf("%d calls saw their context cancelled and %d still run; want the 6 running cut and none left", rec.cut, rec.inFlight)
		}
		attempts := map[int]int{}
		for i, r := range res {
			if r.Code != CodeDeadline || r.Elapsed != 2*time.Second {
				t.Errorf("job %d: %q at %v, want deadline at 2s", i, r.Code, r.Elapsed)
			}
			attempts[r.Attempts]++
		}
		// Six ran and were cut; four never got a slot: the deadline ended their wait in line.
		if attempts[1] != 6 || attempts[0] != 4 {
			t.Errorf("jobs by attempts = %v, want 6 with 1 and 4 with 0", attempts)
		}
	})
}

func TestACallTimeoutIsTimeoutAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		res := Run(t.Context(), []Job[string]{rec.job(0, 1500*time.Millisecond, ok)},
			Options{Limiter: NewLocal(1), Deadline: 5 * time.Second, CallTimeout: time.Second, MaxAttempts: 2, Jitter: noJitter})
		if res[0].Code != CodeTimeout || res[0].Attempts != 2 || res[0].Elapsed != 2*time.Second {
			t.Errorf("got %q after %d attempts at %v, want timeout after 2 at 2s", res[0].Code, res[0].Attempts, res[0].Elapsed)
		}
	})
}

func TestOnlyFailuresWorthIt(t *testing.T) {
	for _, c := range []struct {
		name     string
		err      error
		code     Code
		attempts int
	}{
		{"503", &StatusError{Status: 503}, HTTPCode(503), 3},
		{"500", &StatusError{Status: 500}, HTTPCode(500), 3},
		{"429", &StatusError{Status: 429}, CodeRateLimited, 3},
		{"reset", &netErr{syscall.ECONNRESET}, CodeTransportError, 3},
		{"refused", &netErr{syscall.ECONNREFUSED}, CodeTransportError, 3},
		{"eof", io.ErrUnexpectedEOF, CodeTransportError, 3},
		{"supplier stopped at the budget", fmt.Errorf("504 budget_exhausted: %w", context.DeadlineExceeded), CodeTimeout, 3},
		{"404", &StatusError{Status: 404}, HTTPCode(404), 1},
		{"400", &StatusError{Status: 400}, HTTPCode(400), 1},
		{"invalid data", fmt.Errorf("unit_cents: %w", ErrInvalidData), CodeInvalidData, 1},
		{"unknown error", errors.New("program error"), CodeError, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := newRecorder()
				res := Run(t.Context(), []Job[string]{rec.job(0, time.Millisecond, always(c.err))},
					Options{Limiter: NewLocal(1), MaxAttempts: 3})
				if res[0].Code != c.code || res[0].Attempts != c.attempts || len(rec.starts[0]) != c.attempts {
					t.Errorf("got %q after %d attempts (%d calls), want %q after %d",
						res[0].Code, res[0].Attempts, len(rec.starts[0]), c.code, c.attempts)
				}
				if !errors.Is(res[0].Err, c.err) {
					t.Errorf("Err = %v, want the job's own error", res[0].Err)
				}
			})
		})
	}
}

// netErr is an *net.OpError-like transport error carrying an errno.
type netErr struct{ errno syscall.Errno }

func (e *netErr) Error() string   { return "read tcp: " + e.errno.Error() }
func (e *netErr) Unwrap() error   { return e.errno }
func (e *netErr) Timeout() bool   { return false }
func (e *netErr) Temporary() bool { return false }

func TestRunNeedsALimiterPassedIn(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Run without a Limiter did not panic: it must never make one of its own")
		}
	}()
	Run(t.Context(), []Job[string]{}, Options{})
}

func TestRetryableCodesAreTheQueuesCodes(t *testing.T) {
	for code, want := range map[Code]bool{
		CodeTimeout: true, CodeDeadline: true, CodeNoBudget: true, CodeRateLimited: true, CodeTransportError: true,
		"http_500": true, "http_503": true, "http_599": true,
		"http_404": false, "http_429": false, CodeInvalidData: false, CodeError: false, "http_": false, "": false,
	} {
		if Retryable(code) != want {
			t.Errorf("Retryable(%q) = %v, want %v", code, !want, want)
		}
	}
}

// The floor: the one slot is taken for 80 ms of a 100 ms deadline, which
// would leave a waiting job 20 ms, under the 30 ms floor: it makes no call.
// A job that fails at 60 ms, where a 20 ms wait would leave 20 ms, is not
// retried: its 503 stands.
func TestNoCallStartsBelowTheFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newRecorder()
		lim := NewLocal(1)
		if err := lim.Acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(80*time.Millisecond, lim.Release)
		first := Run(t.Context(), []Job[string]{rec.job(0, time.Millisecond, ok)},
			Options{Limiter: lim, Deadline: 100 * time.Millisecond, Floor: 30 * time.Millisecond, Jitter: noJitter})
		if r := first[0]; r.Code != CodeNoBudget || r.Attempts != 0 || r.Elapsed != 80*time.Millisecond || len(rec.starts[0]) != 0 {
			t.Errorf("a job whose slot comes with 20ms left: %+v, %d calls; want no_budget after 0 attempts at 80ms, never called", r, len(rec.starts[0]))
		}
		fixed := func(time.Duration) time.Duration { return 20 * time.Millisecond }
		second := Run(t.Context(), []Job[string]{rec.job(1, 60*time.Millisecond, always(&StatusError{Status: 503}))},
			Options{Limiter: lim, Deadline: 100 * time.Millisecond, Floor: 30 * time.Millisecond, Jitter: fixed})
		if r := second[0]; r.Code != HTTPCode(503) || r.Attempts != 1 || r.Elapsed != 60*time.Millisecond {
			t.Errorf("a retry that would start with 20ms left: %+v; want http_503 after 1 attempt at 60ms", r)
		}
		if lim.InUse() != 0 {
			t.Errorf("%d slots still taken, want 0: a call not made gives its slot back", lim.InUse())
		}
	})
}

package quoteflow

import (
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// failFirst fails the first attempt with first, then answers normally.
func failFirst(first reply) reply {
	return func(r *http.Request, attempt int) (*http.Response, error) {
		if attempt == 1 {
			return first(r, attempt)
		}
		return normal(r, attempt)
	}
}

// quoteWithBoreal runs one quote of KB-001 x1 with boreal playing b.
func quoteWithBoreal(t *testing.T, b reply) (QuoteResult, *fakeProvider) {
	t.Helper()
	fake := newFake(map[string]reply{"boreal": b})
	s := newService(t, Config{Transport: fake})
	res, err := s.Quote(testCtx(t), kb(1))
	if err != nil {
		t.Fatalf("Quote: %v", err)
	}
	if n := fake.Calls("atlas") + fake.Calls("cedar"); n != 2 {
		t.Errorf("atlas and cedar were called %d times, want once each", n)
	}
	return res, fake
}

// wantAttempts checks boreal's attempt count and that all carried the quote's ID.
func wantAttempts(t *testing.T, fake *fakeProvider, res QuoteResult, want int) {
	t.Helper()
	ids := fake.IDs("boreal")
	if len(ids) != want {
		t.Errorf("boreal was called %d times, want exactly %d", len(ids), want)
	}
	for _, id := range ids {
		if id != res.RequestID {
			t.Errorf("boreal saw X-Request-IDs %v, want %s on every attempt", ids, res.RequestID)
			return
		}
	}
}

func TestFlakyRecoversOnTheSecondAttemptWithTheSameID(t *testing.T) {
	res, fake := quoteWithBoreal(t, failFirst(status(503)))
	wantAttempts(t, fake, res, 2)
	if !slices.Contains(quoted(res), "boreal") {
		t.Errorf("quoted %v, want boreal quoted after the retry", quoted(res))
	}
}

func TestBrokenIsAskedExactlyTwice(t *testing.T) {
	res, fake := quoteWithBoreal(t, status(503))
	wantAttempts(t, fake, res, 2)
	if got := codes(res)["boreal"]; got != HTTPCode(503) {
		t.Errorf("boreal = %q, want http_503", got)
	}
}

func TestFinalFailuresAreNotRetried(t *testing.T) {
	cases := []struct {
		name  string
		reply reply
		want  Code
	}{
		{"malformed", body(`{"supplier":"boreal","sku":"KB-001","unit_cents":"1100","shipping_cents":400,"stock":10}`), CodeInvalidData},
		{"mismatch", body(quoteBody("boreal", "KB-999")), CodeInvalidData},
		{"bad gzip", badGzip, CodeInvalidData},
		{"404", status(404), HTTPCode(404)},
		{"500", status(500), HTTPCode(500)},
		{"429", status(429), HTTPCode(429)},
		{"a network error not on the list", fail(&net.DNSError{Err: "no such host", Name: "x"}), CodeTransportError},
		{"a malformed status line", fail(errMalformed), CodeTransportError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, fake := quoteWithBoreal(t, c.reply)
			wantAttempts(t, fake, res, 1)
			if got := codes(res)["boreal"]; got != c.want {
				t.Errorf("boreal = %q, want %q", got, c.want)
			}
			if len(res.Quotes) != 2 {
				t.Errorf("quoted %v, want atlas and cedar kept", quoted(res))
			}
		})
	}
}

func TestTransientTransportErrorsAreRetriedOnce(t *testing.T) {
	transient := map[string]error{
		"connection refused":   errRefused,
		"read timeout":         errReadTimeout,
		"connection reset":     errReset,
		"closed mid-answer":    io.ErrUnexpectedEOF,
		"closed before answer": io.EOF,
	}
	for name, err := range transient {
		t.Run(name+" then recovery", func(t *testing.T) {
			res, fake := quoteWithBoreal(t, failFirst(fail(err)))
			wantAttempts(t, fake, res, 2)
			if len(res.Quotes) != 3 {
				t.Errorf("quoted %v; want boreal recovered, atlas and cedar kept", quoted(res))
			}
		})
		t.Run(name+" twice", func(t *testing.T) {
			res, fake := quoteWithBoreal(t, fail(err))
			wantAttempts(t, fake, res, 2)
			if got := codes(res)["boreal"]; got != CodeTransportError || len(res.Quotes) != 2 {
				t.Errorf("boreal = %q, quoted %v; want transport_error, atlas and cedar kept", got, quoted(res))
			}
		})
	}
}

func TestTheSecondAttemptStartsTwentyToThirtyMillisecondsAfterTheFirstEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var ended, started time.Time
		b := func(r *http.Request, attempt int) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			if attempt == 1 {
				time.Sleep(40 * time.Millisecond)
				ended = time.Now()
				return status(503)(r, attempt)
			}
			started = time.Now()
			return normal(r, attempt)
		}
		s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": b})})
		if _, err := s.Quote(t.Context(), kb(1)); err != nil {
			t.Fatal(err)
		}
		if gap := started.Sub(ended); gap < QuoteRetry.BackoffBase || gap > QuoteRetry.BackoffCap {
			t.Errorf("second attempt started %v after the first ended, want 20ms to 30ms", gap)
		}
	})
}

func TestBackoffHoldsNoOutboundSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		firstFailed := make(chan struct{})
		b := func(r *http.Request, attempt int) (*http.Response, error) {
			if attempt == 1 {
				defer close(firstFailed)
				return status(503)(r, attempt)
			}
			return normal(r, attempt)
		}
		fake := newFake(map[string]reply{"boreal": b})
		fake.latency = 5 * time.Millisecond
		s := newService(t, Config{Transport: fake, OutboundLimit: 1})
		done := make(chan QuoteResult)
		go func() {
			res, _ := s.Quote(t.Context(), kb(1))
			done <- res
		}()
		<-firstFailed
		synctest.Wait() // boreal is pausing; atlas or cedar calling, waiting, or done
		// With one slot, a slot taken with no call in flight is a slot kept
		// for nothing: boreal would be holding it through its backoff while
		// atlas or cedar waits in line.
		if inUse, calling := s.OutboundInUse(), fake.InFlight(); inUse != calling {
			t.Errorf("during boreal's backoff %d outbound slot(s) taken but %d call(s) in flight", inUse, calling)
		}
		if res := <-done; len(res.Quotes) != 3 {
			t.Errorf("quoted %v, want all three", quoted(res))
		}
	})
}

func TestAnotherSupplierCallsDuringTheBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var failedAt, retriedAt, atlasAt time.Time
		b := func(r *http.Request, attempt int) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			if attempt == 1 {
				failedAt = time.Now()
				return status(503)(r, attempt)
			}
			retriedAt = time.Now()
			return normal(r, attempt)
		}
		atlas := func(r *http.Request, attempt int) (*http.Response, error) {
			mu.Lock()
			atlasAt = time.Now()
			mu.Unlock()
			return normal(r, attempt)
		}
		fake := newFake(map[string]reply{"boreal": b, "atlas": atlas})
		fake.latency = 5 * time.Millisecond
		s := newService(t, Config{Transport: fake, OutboundLimit: 1})
		// Line up boreal, then atlas, behind the one slot (the line is FIFO).
		hold, err := s.acquireOutbound(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { s.withRetry(t.Context(), "boreal", kb(1), newRequestID()) })
		synctest.Wait()
		wg.Go(func() { s.withRetry(t.Context(), "atlas", kb(1), newRequestID()) })
		synctest.Wait()
		hold()
		wg.Wait()
		if atlasAt.Before(failedAt) || !atlasAt.Before(retriedAt) {
			t.Errorf("atlas called at +%v, boreal retried at +%v: want atlas inside boreal's backoff",
				atlasAt.Sub(failedAt), retriedAt.Sub(failedAt))
		}
	})
}

// Lesson 15: the backoff is paid from the budget. With 10 ms left, a 20–30 ms
// pause would end after the deadline, so it is not taken at all: the quote
// answers at once with boreal's 503 instead of sleeping into a timeout.
func TestABackoffThatWouldOutliveTheBudgetIsNotTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": after(790*time.Millisecond, status(503))})
		s := newService(t, Config{NoHedge: true, Transport: fake})
		start := time.Now()
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != 790*time.Millisecond {
			t.Errorf("Quote returned after %v, want exactly 790ms: no pause once the budget cannot pay for it", elapsed)
		}
		if got := codes(res)["boreal"]; got != HTTPCode(503) {
			t.Errorf("boreal = %q, want http_503 (the last failure)", got)
		}
		if n := fake.Calls("boreal"); n != 1 {
			t.Errorf("boreal was called %d times, want 1", n)
		}
	})
}

func TestASecondAttemptCutByTheDeadlineIsATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": after(500*time.Millisecond, status(503))})
		s := newService(t, Config{NoHedge: true, Transport: fake})
		start := time.Now()
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != DefaultBudget {
			t.Errorf("Quote returned after %v, want exactly %v", elapsed, DefaultBudget)
		}
		if got, n := codes(res)["boreal"], fake.Calls("boreal"); got != CodeTimeout || n != 2 {
			t.Errorf("boreal = %q after %d calls, want timeout after 2", got, n)
		}
	})
}

func TestTheRetryListIsExplicit(t *testing.T) {
	if isTransient(errors.New("some other failure")) {
		t.Error("an unnamed error is transient")
	}
	if isTransient(&net.OpError{Op: "dial", Err: errors.New("no route")}) {
		t.Error("a non-timeout net.Error not on the list is transient")
	}
}

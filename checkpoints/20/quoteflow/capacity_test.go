package quoteflow

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/checkpoints/20/fanout"
)

func TestEightQuotesAtOnceShareSixOutboundSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		fake.latency = 10 * time.Millisecond
		s := newService(t, Config{Transport: fake})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if res, err := s.Quote(t.Context(), kb(2)); err != nil || len(res.Quotes) != 2 {
					t.Errorf("Quote = %v quotes, err %v; want 2 quotes", quoted(res), err)
				}
			})
		}
		wg.Wait()
		if peak := fake.Peak(); peak != DefaultOutbound {
			t.Errorf("the suppliers saw %d calls at once, want exactly %d", peak, DefaultOutbound)
		}
		if n := fake.TotalCalls(); n != 24 {
			t.Errorf("%d calls, want 24", n)
		}
	})
}

func TestWaitingForAnOutboundSlotIsPaidFromTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		fake.latency = 2 * time.Second
		s := newService(t, Config{Transport: fake, OutboundLimit: 1, Budget: 50 * time.Millisecond})
		start := time.Now()
		res, err := s.Quote(t.Context(), kb(2))
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != 50*time.Millisecond {
			t.Errorf("Quote returned after %v, want exactly 50ms", elapsed)
		}
		for _, name := range suppliers {
			if got := codes(res)[name]; got != CodeTimeout {
				t.Errorf("%s = %q, want timeout (queued or calling)", name, got)
			}
		}
		if a, o := s.ActiveRequests(), s.OutboundInUse(); a != 0 || o != 0 {
			t.Errorf("after Quote: %d active, %d outbound in use; want 0 and 0", a, o)
		}
	})
}

func TestQueuedCallsShareOneAbsoluteDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		fake.latency = 300 * time.Millisecond // one at a time: 300, 600, then cut at 800
		s := newService(t, Config{Transport: fake, OutboundLimit: 1})
		start := time.Now()
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != DefaultBudget {
			t.Errorf("Quote returned after %v, want exactly %v", elapsed, DefaultBudget)
		}
		if len(res.Quotes) != 2 || len(res.Failures) != 1 || res.Failures[0].Code != CodeTimeout {
			t.Errorf("quotes %v, failures %v; want two quotes and the third supplier timed out", quoted(res), res.Failures)
		}
	})
}

func TestCancellationMidCallReturnsEverySlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered := make(chan struct{})
		firstHangs := func(r *http.Request, attempt int) (*http.Response, error) {
			if attempt == 1 {
				close(entered)
				return hang(r, attempt)
			}
			return normal(r, attempt)
		}
		s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": firstHangs})})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := s.Quote(ctx, kb(2))
			done <- err
		}()
		<-entered
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if a, o := s.ActiveRequests(), s.OutboundInUse(); a != 0 || o != 0 {
			t.Errorf("after cancellation: %d active, %d outbound in use; want 0 and 0", a, o)
		}
		res, err := s.Quote(t.Context(), kb(2))
		if err != nil || res.Best == nil || res.Best.Supplier != "boreal" {
			t.Errorf("next quote: best %+v, err %v; want boreal", res.Best, err)
		}
	})
}

func TestARejectedRequestDoesNotStealASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		gated := func(r *http.Request, attempt int) (*http.Response, error) {
			once.Do(func() { close(entered) })
			<-release
			return normal(r, attempt)
		}
		s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": gated}), InboundLimit: 1})
		first := make(chan error)
		go func() {
			_, err := s.Quote(t.Context(), kb(2))
			first <- err
		}()
		<-entered
		// A quote that queued for the slot instead of being rejected would
		// wait here for ever, so the wait is capped (in the bubble's time).
		second := make(chan error, 1)
		go func() {
			_, err := s.Quote(t.Context(), kb(2))
			second <- err
		}()
		select {
		case err := <-second:
			second = nil // received
			if !errors.Is(err, ErrBusy) {
				t.Errorf("second quote: err = %v, want ErrBusy at once", err)
			}
			if n := s.ActiveRequests(); n != 1 {
				t.Errorf("after the rejection ActiveRequests = %d, want 1", n)
			}
		case <-time.After(time.Second):
			t.Errorf("second quote still waiting after 1s: want ErrBusy at once, not a place in line")
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatalf("first quote: %v", err)
		}
		if second != nil {
			<-second // the quote that queued takes the freed slot, ends, and leaves the bubble
			return
		}
		if n := s.ActiveRequests(); n != 0 {
			t.Errorf("after the first quote ActiveRequests = %d, want 0", n)
		}
		if _, err := s.Quote(t.Context(), kb(2)); err != nil {
			t.Errorf("third quote: %v, want the slot reusable", err)
		}
	})
}

func TestAdmitIsNonBlockingAndReleaseIsIdempotent(t *testing.T) {
	s := newService(t, Config{Transport: newFake(nil), InboundLimit: 1})
	release, err := s.Admit()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit(); !errors.Is(err, ErrBusy) {
		t.Errorf("second Admit: err = %v, want ErrBusy", err)
	}
	if n := s.ActiveRequests(); n != 1 {
		t.Errorf("ActiveRequests = %d after a rejection, want 1", n)
	}
	release()
	release()
	if n := s.ActiveRequests(); n != 0 {
		t.Errorf("ActiveRequests = %d after releasing twice, want 0", n)
	}
}

func TestAdmissionIsAtomicAcrossGoroutines(t *testing.T) {
	s := newService(t, Config{Transport: newFake(nil)})
	var mu sync.Mutex
	var releases []func()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if release, err := s.Admit(); err == nil {
				mu.Lock()
				releases = append(releases, release)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(releases) != DefaultInbound {
		t.Errorf("%d of 64 concurrent Admit calls succeeded, want exactly %d", len(releases), DefaultInbound)
	}
	for _, release := range releases {
		release()
	}
}

func TestAfterBadGzipEveryOutboundSlotCanBeTakenAgain(t *testing.T) {
	fake := newFake(map[string]reply{"boreal": badGzip})
	lim := fanout.NewLocal(DefaultOutbound)
	s := newService(t, Config{Transport: fake, Limiter: lim})
	res, err := s.Quote(testCtx(t), kb(1))
	if err != nil || codes(res)["boreal"] != CodeInvalidData || len(res.Quotes) != 2 {
		t.Fatalf("Quote = %v / %v, err %v; want boreal invalid_data, atlas and cedar kept", quoted(res), res.Failures, err)
	}
	if n := fake.OpenBodies(); n != 0 {
		t.Errorf("%d response bodies left open", n)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 100*time.Millisecond)
	defer cancel()
	for n := range DefaultOutbound {
		if err := lim.Acquire(ctx); err != nil {
			t.Fatalf("could take only %d of the %d outbound slots after the bad-gzip path", n, DefaultOutbound)
		}
		defer lim.Release()
	}
}

func TestAPanicStillReturnsEverySlot(t *testing.T) {
	panicking := func(*http.Request, int) (*http.Response, error) { panic("fake: boom") }
	s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": panicking})})
	func() {
		defer func() { recover() }()
		s.Quote(testCtx(t), kb(2))
	}()
	if a, o := s.ActiveRequests(), s.OutboundInUse(); a != 0 || o != 0 {
		t.Errorf("after a panic: %d active, %d outbound in use; want 0 and 0", a, o)
	}
}

func TestTheOwnedPoolHasSixConnections(t *testing.T) {
	s := newService(t, Config{})
	tr, ok := s.client.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("owned transport is a %T, want *http.Transport", s.client.Transport)
	}
	if tr.MaxConnsPerHost != DefaultPoolSize || tr.MaxIdleConnsPerHost != DefaultPoolSize {
		t.Errorf("pool: %d connections, %d idle; want %d and %d", tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost, DefaultPoolSize, DefaultPoolSize)
	}
}

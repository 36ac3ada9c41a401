package quoteflow

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// budgetSpy wraps a transport and records, per supplier, the X-Budget-Ms
// each attempt carried and what it should have carried: the budget really
// left when it was sent, in whole milliseconds.
type budgetSpy struct {
	next     http.RoundTripper
	deadline time.Time

	mu   sync.Mutex
	sent map[string][]string
	want map[string][]string
}

func newBudgetSpy(next http.RoundTripper, deadline time.Time) *budgetSpy {
	return &budgetSpy{next: next, deadline: deadline, sent: map[string][]string{}, want: map[string][]string{}}
}

func (b *budgetSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	supplier := path.Base(r.URL.Path)
	b.mu.Lock()
	b.sent[supplier] = append(b.sent[supplier], r.Header.Get("X-Budget-Ms"))
	want := time.Until(b.deadline).Milliseconds()
	b.want[supplier] = append(b.want[supplier], strconv.FormatInt(want, 10))
	b.mu.Unlock()
	return b.next.RoundTrip(r)
}

func TestEveryAttemptCarriesTheBudgetLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": after(100*time.Millisecond, failFirst(status(503)))})
		spy := newBudgetSpy(fake, time.Now().Add(DefaultBudget))
		s := newService(t, Config{Transport: spy})
		if _, err := s.Quote(t.Context(), kb(1)); err != nil {
			t.Fatal(err)
		}
		for _, supplier := range suppliers {
			if sent, want := spy.sent[supplier], spy.want[supplier]; len(sent) == 0 || !slices.Equal(sent, want) {
				t.Errorf("%s: X-Budget-Ms %v, want %v (the budget left when sent)", supplier, sent, want)
			}
		}
		if got := spy.sent["atlas"]; len(got) != 1 || got[0] != "800" {
			t.Errorf("atlas got X-Budget-Ms %v, want [800]: the whole budget at the start", got)
		}
		sent := spy.sent["boreal"]
		if len(sent) != 2 {
			t.Fatalf("boreal got %d attempts, want 2", len(sent))
		}
		first, _ := strconv.Atoi(sent[0])
		second, _ := strconv.Atoi(sent[1])
		if first != 800 || second < 800-100-30 || second > 800-100-20 {
			t.Errorf("boreal's X-Budget-Ms = %d then %d, want 800 then 670–680: less the first attempt (100 ms) and the pause (20–30 ms)", first, second)
		}
	})
}

func TestBelowTheFloorNoSupplierIsAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		s := newService(t, Config{Transport: fake, Budget: 40 * time.Millisecond, MinAttempt: 50 * time.Millisecond})
		start := time.Now()
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if n := fake.TotalCalls(); n != 0 {
			t.Errorf("%d supplier calls, want 0: no call can finish in 40 ms with a 50 ms floor", n)
		}
		for _, supplier := range suppliers {
			if got := codes(res)[supplier]; got != CodeNoBudget {
				t.Errorf("%s = %q, want no_budget (not timeout: it was never asked)", supplier, got)
			}
		}
		if elapsed := time.Since(start); elapsed != 0 {
			t.Errorf("Quote took %v, want 0: failing at once leaves the budget to the caller", elapsed)
		}
	})
}

func TestASecondAttemptNeedsTheFloorAfterThePause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": after(600*time.Millisecond, status(503))})
		s := newService(t, Config{NoHedge: true, Transport: fake, MinAttempt: 200 * time.Millisecond})
		start := time.Now()
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		// After 600 ms, 200 ms are left; after a 20–30 ms pause, less than the 200 ms floor.
		if n := fake.Calls("boreal"); n != 1 {
			t.Errorf("boreal was called %d times, want 1", n)
		}
		if got := codes(res)["boreal"]; got != HTTPCode(503) {
			t.Errorf("boreal = %q, want http_503: the last failure, not no_budget or timeout", got)
		}
		if elapsed := time.Since(start); elapsed != 600*time.Millisecond {
			t.Errorf("Quote returned after %v, want exactly 600ms", elapsed)
		}
	})
}

func TestASecondAttemptThatWaitedInLineBelowTheFloorIsNotMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": status(503)})
		s := newService(t, Config{Transport: fake, OutboundLimit: 1})
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		defer cancel()
		done := make(chan outcome)
		go func() { done <- s.withRetry(ctx, "boreal", kb(1), newRequestID()) }()
		synctest.Wait() // boreal's first attempt got a 503; it is pausing, holding no slot
		hold, err := s.acquireOutbound(ctx)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(260 * time.Millisecond) // boreal waits in line until 40 ms are left
		hold()
		o := <-done
		if n := fake.Calls("boreal"); n != 1 {
			t.Errorf("boreal was called %d times, want 1: 40 ms left is below the 50 ms floor", n)
		}
		if o.code != HTTPCode(503) {
			t.Errorf("boreal = %q, want http_503: the failure it gave, not no_budget", o.code)
		}
	})
}

// Over a real connection, with the service's own transport, the header is on the wire.
func TestTheBudgetHeaderGoesOverTheWire(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Budget-Ms"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, quoteBody(path.Base(r.URL.Path), r.URL.Query().Get("sku")))
	}))
	t.Cleanup(srv.Close)
	s := newService(t, Config{ProviderURL: srv.URL})
	if _, err := s.Quote(testCtx(t), kb(1)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("the server saw %d calls, want 3", len(got))
	}
	for _, v := range got {
		ms, err := strconv.Atoi(v)
		if err != nil || ms > 800 || ms < 500 {
			t.Errorf("X-Budget-Ms %q, want whole milliseconds just under 800", v)
		}
	}
}

// A supplier that stops at our budget answers 504 budget_exhausted at our
// deadline; it is a timeout, whichever clock fired first. Any other 504 stays http_504.
func TestASupplierStoppedAtTheBudgetIsATimeout(t *testing.T) {
	cases := []struct {
		name  string
		reply reply
		want  Code
	}{
		{"budget_exhausted", statusBody(504, `{"error":"budget_exhausted","detail":"stopped at the budget"}`), CodeTimeout},
		{"another 504", statusBody(504, `{"error":"upstream","detail":"gateway"}`), HTTPCode(504)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, _ := quoteWithBoreal(t, c.reply)
			if got := codes(res)["boreal"]; got != c.want {
				t.Errorf("boreal = %q, want %q", got, c.want)
			}
		})
	}
}

// statusBody answers with a status code and a body.
func statusBody(code int, s string) reply {
	return func(r *http.Request, _ int) (*http.Response, error) { return respond(r, code, s), nil }
}

// An unreachable supplier costs the connect limit, not the whole budget.
func TestAnUnreachableSupplierFailsWithinTheConnectLimit(t *testing.T) {
	addr := listenBlackhole(t)
	const connect = 200 * time.Millisecond
	s := newService(t, Config{ProviderURL: "http://" + addr, Budget: 3 * time.Second, ConnectTimeout: connect})
	start := time.Now()
	res, err := s.Quote(testCtx(t), kb(1))
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	for _, supplier := range suppliers {
		if got := codes(res)[supplier]; got != CodeTransportError {
			t.Errorf("%s = %q, want transport_error: unreachable is not slow", supplier, got)
		}
	}
	// Two attempts (a connect timeout is transient) of 200 ms and a 20–30 ms pause;
	// far below the 3 s budget a single shared timeout would have spent.
	if elapsed < connect || elapsed > 1500*time.Millisecond {
		t.Errorf("Quote took %v, want about two connect limits (≈ 430 ms), well under the 3 s budget", elapsed)
	}
}

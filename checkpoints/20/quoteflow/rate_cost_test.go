package quoteflow

import (
	"net/http"
	"path"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/checkpoints/20/internal/redistest"
	"quoteflowlab.dev/checkpoints/20/quota"
)

// qtySpy records the qty each supplier was sent.
type qtySpy struct {
	mu   sync.Mutex
	sent map[string][]string
}

func (q *qtySpy) reply(r *http.Request, attempt int) (*http.Response, error) {
	q.mu.Lock()
	q.sent[path.Base(r.URL.Path)] = append(q.sent[path.Base(r.URL.Path)], r.URL.Query().Get("qty"))
	q.mu.Unlock()
	return normal(r, attempt)
}

// A rate quota of 10 per supplier and minute: two quotes of quantity 6 are
// two calls (within a quota of calls) but 12 units (beyond a quota of cost).
func TestARateByQuantityWeighsEachCallByItsOrder(t *testing.T) {
	for _, c := range []struct {
		name        string
		byQuantity  bool
		wantLimited int
	}{
		{"calls", false, 0},
		{"quantity", true, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			spy := &qtySpy{sent: map[string][]string{}}
			fake := newFake(map[string]reply{"atlas": spy.reply, "boreal": spy.reply, "cedar": spy.reply})
			q, err := quota.NewLocal(DefaultOutbound, quota.Rate{N: 10, Per: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			s := newService(t, Config{Transport: fake, Quota: q, RateByQuantity: c.byQuantity})
			if _, err := s.Quote(testCtx(t), kb(6)); err != nil {
				t.Fatal(err)
			}
			res, err := s.Quote(testCtx(t), kb(6))
			if err != nil {
				t.Fatal(err)
			}
			limited := 0
			for _, f := range res.Failures {
				if f.Code == CodeRateLimited {
					limited++
				}
			}
			if limited != c.wantLimited {
				t.Errorf("second quote of 6: failures %v, %d rate_limited; want %d", res.Failures, limited, c.wantLimited)
			}
			if n := fake.TotalCalls(); n != 3+3-c.wantLimited {
				t.Errorf("%d supplier calls, want %d: a call the quota refuses is never sent", n, 6-c.wantLimited)
			}
			for supplier, qtys := range spy.sent {
				for _, got := range qtys {
					if got != "6" {
						t.Errorf("%s was sent qty=%q, want 6: the order's quantity, what a cost-limited supplier counts", supplier, got)
					}
				}
			}
		})
	}
}

// The floor holds after a rate wait: room that comes 790 ms into a 800 ms
// budget would leave 10 ms, under the 50 ms floor, so no call is made.
func TestNoCallStartsBelowTheFloorAfterARateWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []string
		b := func(r *http.Request, attempt int) (*http.Response, error) {
			mu.Lock()
			sent = append(sent, r.Header.Get("X-Budget-Ms"))
			mu.Unlock()
			return normal(r, attempt)
		}
		fake := newFake(map[string]reply{"boreal": b})
		q, err := quota.NewLocal(DefaultOutbound, quota.Rate{N: 1, Per: 790 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s := newService(t, Config{Transport: fake, Quota: q, MinAttempt: 50 * time.Millisecond})
		if _, err := s.Quote(t.Context(), kb(1)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if got := codes(res)["boreal"]; got != CodeRateLimited || len(sent) != 1 || time.Since(start) != 0 {
			t.Errorf("boreal %q, sent X-Budget-Ms %v, answered after %v; want rate_limited at once, one call only (the first quote's)",
				got, sent, time.Since(start))
		}
	})
}

// A quota of cost holds across processes: three processes share 100 units of
// quantity per 600 ms, and boreal never sees more than 100 units arrive in
// any 300 ms (the other 300 ms are slack for a busy machine between an
// admission and its arrival), though each process sends orders of 40.
func TestTheCostQuotaHoldsAcrossProcesses(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	type arrival struct {
		at  time.Time
		qty int
	}
	var mu sync.Mutex
	var arrivals []arrival
	fake := newFake(map[string]reply{"boreal": func(r *http.Request, attempt int) (*http.Response, error) {
		qty, _ := strconv.Atoi(r.URL.Query().Get("qty"))
		mu.Lock()
		arrivals = append(arrivals, arrival{time.Now(), qty})
		mu.Unlock()
		return normal(r, attempt)
	}})
	qc := quota.RedisConfig{Limit: 6, Rate: quota.Rate{N: 100, Per: 600 * time.Millisecond}}
	var svcs []*Service
	for range 3 {
		// No hedges: a CI run saw 10 boreal calls for 9 quotes, and with every
		// answer a 200 (no retry) a second copy can only be a hedge, of a first
		// copy that waited for its rate tokens past the hedge delay. The cost
		// quota is what this test is about.
		svcs = append(svcs, redisProcess(t, s.URL(), fake, qc, Config{Budget: 2 * time.Second, RateByQuantity: true, NoHedge: true}).svc)
	}
	var wg sync.WaitGroup
	var limited atomic.Int64
	for _, svc := range svcs {
		for _, qty := range []int{40, 40, 10} { // 270 units of boreal in all: 2.7 windows
			wg.Go(func() {
				res, err := svc.Quote(testCtx(t), kb(qty))
				if err != nil {
					t.Errorf("Quote: %v", err)
					return
				}
				if codes(res)["boreal"] == CodeRateLimited {
					limited.Add(1)
				}
			})
		}
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals)+int(limited.Load()) != 9 {
		t.Errorf("boreal saw %d calls and %d were rate_limited; want 9 in all", len(arrivals), limited.Load())
	}
	if len(arrivals) < 3 {
		t.Errorf("boreal saw only %d of 9 calls in a 2 s budget at 100 units per 600 ms", len(arrivals))
	}
	for _, first := range arrivals {
		sum := 0
		for _, a := range arrivals {
			if d := a.at.Sub(first.at); d >= 0 && d < 300*time.Millisecond {
				sum += a.qty
			}
		}
		if sum > 100 {
			t.Fatalf("%d units of quantity reached boreal within 300 ms: a supplier limiting 100 would answer 429", sum)
		}
	}
}

package quoteflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	bolt "go.etcd.io/bbolt"

	"quoteflowlab.dev/checkpoints/20/fanout"
	"quoteflowlab.dev/checkpoints/20/queue"
)

// data is a bbolt file with a basket store and a queue, closed at cleanup.
type data struct {
	path  string
	db    *bolt.DB
	store *BoltStore
	queue *queue.Bolt
}

func openData(t *testing.T, path string) *data {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q, err := queue.NewBolt(db, queue.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewBoltStore(db, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &data{path: path, db: db, store: store, queue: q}
}

func newData(t *testing.T) *data { return openData(t, filepath.Join(t.TempDir(), "quoteflow.db")) }

// basketService is a Service on fake and d, with no jitter unless cfg says.
func basketService(t *testing.T, fake *fakeProvider, d *data, cfg Config) *Service {
	t.Helper()
	cfg.Transport, cfg.Store, cfg.Queue = fake, d.store, d.queue
	if cfg.Basket.Jitter == nil {
		cfg.Basket.Jitter = func(time.Duration) time.Duration { return 0 }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return newService(t, cfg)
}

func lines(n int) BasketRequest {
	req := BasketRequest{Scenario: "normal"}
	for range n {
		req.Items = append(req.Items, BasketItem{SKU: "KB-001", Quantity: 1})
	}
	return req
}

// failureOf returns supplier's failure on line l, if any.
func failureOf(l BasketLine, supplier string) (LineFailure, bool) {
	for _, f := range l.Failures {
		if f.Supplier == supplier {
			return f, true
		}
	}
	return LineFailure{}, false
}

// cancelCounter replies by waiting for the request's context to end, and counts how many did.
type cancelCounter struct {
	mu  sync.Mutex
	cut int
}

func (c *cancelCounter) hang(r *http.Request, _ int) (*http.Response, error) {
	<-r.Context().Done()
	c.mu.Lock()
	c.cut++
	c.mu.Unlock()
	return nil, r.Context().Err()
}

func TestAFiftyLineBasketAtNormalIsComplete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		fake.latency = 20 * time.Millisecond
		// Every call takes exactly 20 ms, so the supplier's p95 is 20 ms too,
		// and a hedge at the p95 would race each answer: counted without.
		s := basketService(t, fake, newData(t), Config{NoHedge: true})
		b, err := s.Basket(t.Context(), lines(50))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range b.Items {
			if l.Status != LineComplete || len(l.Quotes) != 3 || l.Best == nil || l.Best.Supplier != "cedar" {
				t.Fatalf("line %d = %+v, want complete with three quotes, cedar best", l.Index, l)
			}
		}
		if b.Pending != 0 || fake.TotalCalls() != 150 || fake.Peak() != DefaultOutbound {
			t.Errorf("pending %d, %d calls, peak %d; want 0, 150, %d", b.Pending, fake.TotalCalls(), fake.Peak(), DefaultOutbound)
		}
		// 150 calls of 20 ms through 6 slots: 25 rounds.
		if b.ElapsedMS != 500 {
			t.Errorf("elapsed %v ms, want exactly 500", b.ElapsedMS)
		}
	})
}

func TestTwoBasketsAndSingleQuotesShareTheSixSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		fake.latency = 20 * time.Millisecond
		s := basketService(t, fake, newData(t), Config{})
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				if _, err := s.Basket(t.Context(), lines(50)); err != nil {
					t.Error(err)
				}
			})
		}
		for range 6 {
			wg.Go(func() {
				for range 3 {
					if _, err := s.Quote(t.Context(), kb(1)); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		// Quotes wait in the same line as the baskets' calls (some run out of
		// their 0.8 s budget there, which is the price of one shared limit).
		if n := fake.TotalCalls(); n < 2*150+3 {
			t.Errorf("%d supplier calls, want the baskets' 300 and some quotes'", n)
		}
		if p := fake.Peak(); p != DefaultOutbound {
			t.Errorf("peak calls at the suppliers = %d, want %d: one limit for baskets and quotes together", p, DefaultOutbound)
		}
	})
}

func TestTheBasketDeadlineCancelsTheCallsStillRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cc cancelCounter
		fake := newFake(map[string]reply{"boreal": cc.hang})
		d := newData(t)
		s := basketService(t, fake, d, Config{NoHedge: true, Basket: BasketPolicy{CallTimeout: 5 * time.Second}})
		start := time.Now()
		b, err := s.Basket(t.Context(), lines(3))
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("the basket answered after %v, want exactly the 2s deadline", got)
		}
		if fake.InFlight() != 0 || cc.cut != 3 {
			t.Errorf("%d calls still at the supplier, %d saw their context end; want 0 and all 3 boreal calls cut",
				fake.InFlight(), cc.cut)
		}
		for _, l := range b.Items {
			f, ok := failureOf(l, "boreal")
			if l.Status != LinePartial || !ok || f.Code != Code(fanout.CodeDeadline) || !f.Queued || f.Attempts != 1 {
				t.Errorf("line %d: %s, boreal %+v; want partial, boreal deadline after 1 attempt, queued", l.Index, l.Status, f)
			}
		}
		if c, _ := d.queue.Counts(t.Context()); b.Pending != 3 || c.Pending != 3 {
			t.Errorf("pending %d in the basket, %+v in the queue; want 3 and 3", b.Pending, c)
		}
	})
}

func TestACallTimeoutInsideTheDeadlineIsTimeoutAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": after(1500*time.Millisecond, normal)})
		s := basketService(t, fake, newData(t), Config{Basket: BasketPolicy{CallTimeout: 400 * time.Millisecond}})
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil {
			t.Fatal(err)
		}
		if f, _ := failureOf(b.Items[0], "boreal"); f.Code != Code(fanout.CodeTimeout) || f.Attempts != 3 || f.ElapsedMS != 1200 || !f.Queued {
			t.Errorf("boreal = %+v, want timeout after 3 attempts of 400 ms at 1200 ms, queued", f)
		}
	})
}

func TestClientErrorsAreNeitherRetriedNorQueued(t *testing.T) {
	for _, c := range []struct {
		name  string
		reply reply
		code  Code
	}{
		{"404", status(404), HTTPCode(404)},
		{"invalid data", body(`{"supplier":"boreal","sku":"KB-001","unit_cents":"1100","shipping_cents":400,"stock":10}`), CodeInvalidData},
	} {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake(map[string]reply{"boreal": c.reply})
			d := newData(t)
			s := basketService(t, fake, d, Config{})
			b, err := s.Basket(testCtx(t), lines(2))
			if err != nil {
				t.Fatal(err)
			}
			f, _ := failureOf(b.Items[0], "boreal")
			if f.Code != c.code || f.Attempts != 1 || f.Queued || fake.Calls("boreal") != 2 {
				t.Errorf("boreal = %+v after %d calls for 2 lines; want %s after 1 attempt each, not queued", f, fake.Calls("boreal"), c.code)
			}
			if cnt, _ := d.queue.Counts(t.Context()); cnt != (queue.Counts{}) || b.Pending != 0 {
				t.Errorf("queue %+v, pending %d; want nothing queued", cnt, b.Pending)
			}
		})
	}
}

// rateLimited answers 429 with Retry-After-Ms: ms to the first request, then normally.
func rateLimited(ms int) reply {
	return func(r *http.Request, attempt int) (*http.Response, error) {
		if attempt > 1 {
			return normal(r, attempt)
		}
		resp := respond(r, http.StatusTooManyRequests, `{"error":"rate_limited"}`)
		resp.Header.Set("Retry-After", "1")
		resp.Header.Set("Retry-After-Ms", fmt.Sprint(ms))
		return resp, nil
	}
}

func TestRetryAfterMsIsWaitedBeforeTheRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var arrivals []time.Duration
		start := time.Now()
		b429 := rateLimited(300)
		fake := newFake(map[string]reply{"boreal": func(r *http.Request, attempt int) (*http.Response, error) {
			arrivals = append(arrivals, time.Since(start))
			return b429(r, attempt)
		}})
		s := basketService(t, fake, newData(t), Config{})
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil {
			t.Fatal(err)
		}
		if b.Items[0].Status != LineComplete || len(arrivals) != 2 || arrivals[1]-arrivals[0] != 300*time.Millisecond {
			t.Errorf("line %s, boreal arrivals %v; want complete, the retry exactly 300 ms after the 429", b.Items[0].Status, arrivals)
		}
	})
}

func TestARetryAfterBeyondTheDeadlineIsRateLimitedAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": rateLimited(5000)})
		s := basketService(t, fake, newData(t), Config{})
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil {
			t.Fatal(err)
		}
		f, _ := failureOf(b.Items[0], "boreal")
		if f.Code != Code(fanout.CodeRateLimited) || f.Attempts != 1 || !f.Queued || fake.Calls("boreal") != 1 || b.ElapsedMS != 0 {
			t.Errorf("boreal %+v, %d calls, basket at %v ms; want rate_limited after 1 call, queued, at once", f, fake.Calls("boreal"), b.ElapsedMS)
		}
	})
}

func TestTheQueueComesBackNoEarlierThanARetryAfterSaid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Boreal's first two answers are 429 "come back in 6 s": longer than the
		// basket deadline, and than one compensation pass (Visibility/2).
		var arrivals []time.Duration
		start := time.Now()
		fake := newFake(map[string]reply{"boreal": func(r *http.Request, attempt int) (*http.Response, error) {
			arrivals = append(arrivals, time.Since(start))
			if attempt > 2 {
				return normal(r, attempt)
			}
			return rateLimited(6000)(r, 1)
		}})
		s := basketService(t, fake, newData(t), Config{})
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil || b.Pending != 1 {
			t.Fatalf("basket %+v, %v; want boreal rate_limited and queued", b, err)
		}
		drainFor(t, s, 15*time.Second)
		got, _ := s.GetBasket(t.Context(), b.ID)
		poll := s.basket.PollEvery
		if len(arrivals) != 3 || got.Items[0].Status != LineComplete {
			t.Fatalf("boreal arrivals %v, line %s; want 3 calls, complete", arrivals, got.Items[0].Status)
		}
		// The queue's first call and its retry each wait the 6 s they were told
		// (to the worker's next poll), not the queue's own shorter delays.
		for k := 1; k < 3; k++ {
			if gap := arrivals[k] - arrivals[k-1]; gap < 6*time.Second || gap > 6*time.Second+poll {
				t.Errorf("boreal call %d came %v after the 429 before it; want 6 s (to the next %v poll)", k+1, gap, poll)
			}
		}
	})
}

func TestEveryLineIsValidatedBeforeAnyCall(t *testing.T) {
	fake := newFake(nil)
	s := basketService(t, fake, newData(t), Config{})
	fifty := strings.Repeat(`{"sku":"KB-001"},`, 51)
	for _, c := range []struct{ body, field string }{
		{`{"items":[{"sku":"KB-001","quantity":1},{"sku":"KB-001","quantity":0}]}`, "items[1].quantity"},
		{`{"items":[{"sku":"KB-001","quantity":1},{"sku":"KB-001","quantity":true}]}`, "items[1].quantity"},
		{`{"items":[{"sku":"KB-001","quantity":"2"}]}`, "items[0].quantity"},
		{`{"items":[{"sku":""}]}`, "items[0].sku"},
		{`{"items":[{"sku":"KB-001","colour":"red"}]}`, "items[0].colour"},
		{`{"items":[{"sku":"KB-001","sku":"KB-002"}]}`, "items[0].sku"},
		{`{"items":[{"sku":"KB-001"}, 7]}`, "items[1]"},
		{`{"items":[]}`, "items"},
		{`{"items":[` + fifty[:len(fifty)-1] + `]}`, "items"},
		{`{"items":{"sku":"KB-001"}}`, "items"},
		{`{"scenario":"normal"}`, "items"},
		{`{"items":[{"sku":"KB-001"}],"scenario":"chaos"}`, "scenario"},
		{`{"items":[{"sku":"KB-001"}],"extra":1}`, "extra"},
	} {
		req := httptest.NewRequest(http.MethodPost, "/api/baskets", strings.NewReader(c.body))
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		got := decodeJSON[map[string]string](t, rec)
		if rec.Code != http.StatusUnprocessableEntity || got["field"] != c.field {
			t.Errorf("%s: %d %v, want 422 naming %s", c.body, rec.Code, got, c.field)
		}
	}
	if n := fake.TotalCalls(); n != 0 {
		t.Errorf("%d supplier calls for invalid baskets, want 0", n)
	}
}

// outage answers 503 until the clock reaches end, then normally.
func outage(end time.Time) reply {
	return func(r *http.Request, attempt int) (*http.Response, error) {
		if time.Now().Before(end) {
			return status(503)(r, attempt)
		}
		return normal(r, attempt)
	}
}

// drainFor runs the worker in the bubble for d of fake time.
func drainFor(t *testing.T, s *Service, d time.Duration) {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	s.RunCompensation(ctx)
}

func TestTheQueueCompletesWhatAnOutageCutOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		fake := newFake(map[string]reply{"boreal": outage(time.Now().Add(1500 * time.Millisecond))})
		d := newData(t)
		// Lesson 16's queue alone: without lesson 19's breaker, which would
		// stop asking the failing supplier (breakers_test.go).
		s := basketService(t, fake, d, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil)), NoBreaker: true})
		b, err := s.Basket(t.Context(), lines(4))
		if err != nil {
			t.Fatal(err)
		}
		if b.Pending != 4 {
			t.Fatalf("pending %d, want boreal queued on all 4 lines", b.Pending)
		}
		drainFor(t, s, 5*time.Second)
		got, err := s.GetBasket(t.Context(), b.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range got.Items {
			if l.Status != LineComplete || len(l.Quotes) != 3 {
				t.Errorf("line %d after the outage: %s with %d quotes, want complete with 3", l.Index, l.Status, len(l.Quotes))
			}
		}
		if c, _ := d.queue.Counts(t.Context()); got.Pending != 0 || c.Done != 4 || c.Pending+c.Leased+c.Dead != 0 {
			t.Errorf("pending %d, queue %+v; want 0 and 4 done", got.Pending, c)
		}
		// One log line per finished call, the last of each job with reason=ok.
		if n := strings.Count(logs.String(), "reason=ok"); n != 4 {
			t.Errorf("%d log lines with reason=ok, want 4:\n%s", n, logs.String())
		}
		for _, want := range []string{"job=" + b.ID + "/0/boreal", "attempts=", "elapsed_ms=", "reason=http_503"} {
			if !strings.Contains(logs.String(), want) {
				t.Errorf("logs lack %q:\n%s", want, logs.String())
			}
		}
	})
}

func TestAJobThatKeepsFailingIsDeadAfterFiveTries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": status(503)})
		d := newData(t)
		s := basketService(t, fake, d, Config{NoBreaker: true}) // every try reaches boreal: no breaker (lesson 19)
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil {
			t.Fatal(err)
		}
		drainFor(t, s, 10*time.Second)
		got, _ := s.GetBasket(t.Context(), b.ID)
		f, _ := failureOf(got.Items[0], "boreal")
		if !f.Dead || f.Queued || f.Code != HTTPCode(503) || got.Pending != 0 {
			t.Errorf("boreal %+v, pending %d; want dead with its last reason http_503, nothing pending", f, got.Pending)
		}
		// The basket's 3 attempts, then 5 deliveries of 3.
		if n := fake.Calls("boreal"); n != 3+5*3 {
			t.Errorf("boreal called %d times, want %d", n, 3+5*3)
		}
		if c, _ := d.queue.Counts(t.Context()); c.Dead != 1 {
			t.Errorf("queue %+v, want 1 dead", c)
		}
	})
}

// crashingQueue is a queue whose Complete fails: the worker dies after the
// call and before it could mark the job done.
type crashingQueue struct{ queue.Queue }

func (crashingQueue) Complete(context.Context, string) error { return errors.New("worker killed") }

func TestARedeliveredJobTakesEffectOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": outage(time.Now().Add(100 * time.Millisecond))})
		d := newData(t)
		s := basketService(t, fake, d, Config{})
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil || b.Pending != 1 {
			t.Fatalf("basket %+v, %v; want boreal queued", b, err)
		}
		time.Sleep(time.Second)
		dying := basketService(t, fake, &data{store: d.store, queue: nil}, Config{Queue: crashingQueue{d.queue}})
		dying.queue = crashingQueue{d.queue}
		if _, err := dying.CompensateOnce(t.Context()); err == nil {
			t.Fatal("the dying worker's Complete did not fail")
		}
		calls := fake.Calls("boreal")
		time.Sleep(11 * time.Second) // its lease runs out: the job is delivered again
		if n, err := s.CompensateOnce(t.Context()); n != 1 || err != nil {
			t.Fatalf("redelivery: %d jobs, %v; want the same job again", n, err)
		}
		got, _ := s.GetBasket(t.Context(), b.ID)
		if len(got.Items[0].Quotes) != 3 || got.Items[0].Status != LineComplete || got.Pending != 0 {
			t.Errorf("line %+v, pending %d; want boreal quoted once, complete", got.Items[0], got.Pending)
		}
		if fake.Calls("boreal") != calls {
			t.Errorf("the redelivery called boreal again (%d → %d): the line was already settled", calls, fake.Calls("boreal"))
		}
		if c, _ := d.queue.Counts(t.Context()); c.Done != 1 {
			t.Errorf("queue %+v, want the job done", c)
		}
	})
}

func TestQueuedCallsSurviveARestart(t *testing.T) {
	fake := newFake(map[string]reply{"boreal": status(503)})
	path := filepath.Join(t.TempDir(), "quoteflow.db")
	d := openData(t, path)
	s := basketService(t, fake, d, Config{})
	b, err := s.Basket(testCtx(t), lines(2))
	if err != nil || b.Pending != 2 {
		t.Fatalf("basket pending %d, %v; want 2", b.Pending, err)
	}
	d.db.Close() // the process is gone; bbolt synced every write before it returned

	fake2 := newFake(nil) // boreal is back
	d2 := openData(t, path)
	s2 := basketService(t, fake2, d2, Config{})
	if err := s2.Drain(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := s2.GetBasket(testCtx(t), b.ID)
	if err != nil || got.Pending != 0 || got.Items[0].Status != LineComplete || got.Items[1].Status != LineComplete {
		t.Errorf("after the restart: %+v, %v; want both lines complete", got, err)
	}
	if n := fake2.Calls("boreal"); n != 2 {
		t.Errorf("the new process called boreal %d times, want once per queued line", n)
	}
}

func TestBasketEndpoints(t *testing.T) {
	fake := newFake(map[string]reply{"boreal": status(503)})
	s := basketService(t, fake, newData(t), Config{})
	h := s.Handler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/baskets", strings.NewReader(`{"items":[{"sku":"KB-001","quantity":2}]}`)))
	b := decodeJSON[Basket](t, rec)
	if rec.Code != http.StatusOK || len(b.ID) != 16 || b.Pending != 1 {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body)
	}
	for _, key := range []string{`"basket_id"`, `"index":0`, `"request_id":"` + fake.IDs("boreal")[0] + `"`, `"status":"partial"`, `"best":{`, `"queued":true`, `"attempts":3`, `"pending":1`, `"elapsed_ms"`} {
		if !strings.Contains(rec.Body.String(), key) {
			t.Errorf("POST body lacks %s: %s", key, rec.Body)
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/baskets/"+b.ID, nil))
	if got := decodeJSON[Basket](t, rec); rec.Code != http.StatusOK || got.ID != b.ID || got.Pending != 1 {
		t.Errorf("GET: %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/baskets/nope", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET unknown: %d, want 404", rec.Code)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/compensation", nil))
	if got := decodeJSON[queue.Counts](t, rec); got != (queue.Counts{Pending: 1}) {
		t.Errorf("GET /api/compensation = %+v, want 1 pending", got)
	}
}

// Two deliveries of one job can both finish (the first outlived its lease):
// the first word wins, and a later one changes nothing.
func TestALateSecondResultDoesNotOverwriteTheFirst(t *testing.T) {
	fake := newFake(map[string]reply{"boreal": status(503)})
	s := basketService(t, fake, newData(t), Config{})
	b, err := s.Basket(testCtx(t), lines(1))
	if err != nil || b.Pending != 1 {
		t.Fatalf("basket %+v, %v; want boreal queued", b, err)
	}
	c := compensation{BasketID: b.ID, Index: 0, Supplier: "boreal"}
	q := &Quote{Supplier: "boreal", SKU: "KB-001", UnitCents: 1100, ShippingCents: 400, Stock: 10}
	s.settle(testCtx(t), c, q, nil)
	s.settle(testCtx(t), c, nil, &LineFailure{Supplier: "boreal", Code: HTTPCode(503), Dead: true})
	got, _ := s.GetBasket(testCtx(t), b.ID)
	if l := got.Items[0]; l.Status != LineComplete || len(l.Quotes) != 3 || len(l.Failures) != 0 || got.Pending != 0 {
		t.Errorf("line %+v, pending %d; want boreal's quote kept and no failure", l, got.Pending)
	}
}

func openBenchData(b *testing.B) *data {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "quoteflow.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	q, _ := queue.NewBolt(db, queue.Limits{})
	store, _ := NewBoltStore(db, q, 0)
	return &data{db: db, store: store, queue: q}
}

// budgetsSent records the X-Budget-Ms of every call to supplier.
func budgetsSent(mu *sync.Mutex, sent *[]string, next reply) reply {
	return func(r *http.Request, attempt int) (*http.Response, error) {
		mu.Lock()
		*sent = append(*sent, r.Header.Get("X-Budget-Ms"))
		mu.Unlock()
		return next(r, attempt)
	}
}

// Lesson 15's floor holds for basket calls: a retry whose wait would leave
// less than the floor is not waited for, and no call is made with less.
func TestABasketRetryThatWouldStartBelowTheFloorIsNotMade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent []string
		// Boreal answers 503 after 140 ms; the wait is 20 ms; 40 ms would be
		// left of the 200 ms deadline, below the 50 ms floor.
		fake := newFake(map[string]reply{"boreal": budgetsSent(&mu, &sent, after(140*time.Millisecond, status(503)))})
		s := basketService(t, fake, newData(t), Config{MinAttempt: 50 * time.Millisecond, Basket: BasketPolicy{
			Deadline: 200 * time.Millisecond, Jitter: func(time.Duration) time.Duration { return 20 * time.Millisecond }}})
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil {
			t.Fatal(err)
		}
		f, _ := failureOf(b.Items[0], "boreal")
		if f.Code != HTTPCode(503) || f.Attempts != 1 || !f.Queued || b.ElapsedMS != 140 {
			t.Errorf("boreal %+v, basket at %v ms; want http_503 after 1 attempt, queued, answered at 140 ms", f, b.ElapsedMS)
		}
		if len(sent) != 1 || sent[0] != "200" {
			t.Errorf("boreal was sent X-Budget-Ms %v, want one call with 200: no retry with 40 ms left", sent)
		}
	})
}

func TestABasketCallThatWouldStartBelowTheFloorIsNoBudgetAndQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// One slot: atlas, boreal, cedar in turn, 80 ms each. The third would
		// start at 160 ms with 40 ms of the 200 ms deadline left.
		fake := newFake(nil)
		fake.latency = 80 * time.Millisecond
		d := newData(t)
		s := basketService(t, fake, d, Config{OutboundLimit: 1, MinAttempt: 50 * time.Millisecond,
			Basket: BasketPolicy{Deadline: 200 * time.Millisecond}})
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil {
			t.Fatal(err)
		}
		l := b.Items[0]
		var never []LineFailure
		for _, f := range l.Failures {
			if f.Code == CodeNoBudget && f.Attempts == 0 && f.Queued {
				never = append(never, f)
			}
		}
		if fake.TotalCalls() != 2 || len(l.Quotes) != 2 || len(never) != 1 || b.ElapsedMS != 160 {
			t.Errorf("%d calls, line %+v at %v ms; want 2 calls, 2 quotes and one supplier no_budget after 0 attempts, queued, answered at 160 ms",
				fake.TotalCalls(), l, b.ElapsedMS)
		}
		if c, _ := d.queue.Counts(t.Context()); c.Pending != 1 {
			t.Errorf("queue %+v, want the call never made pending", c)
		}
	})
}

// A worker killed mid-pass must not have kept an answer it already had:
// each compensation job is recorded as soon as its own call ends.
func TestACompensationCallIsRecordedBeforeTheSlowestOfItsPassEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Line 0's boreal is back after 100 ms; line 1's answers only after 3 s.
		var mu sync.Mutex
		down := true
		fake := newFake(map[string]reply{"boreal": func(r *http.Request, attempt int) (*http.Response, error) {
			mu.Lock()
			d := down
			mu.Unlock()
			if d {
				return status(503)(r, attempt)
			}
			if r.URL.Query().Get("sku") == "KB-002" {
				return after(3*time.Second, normal)(r, attempt)
			}
			return normal(r, attempt)
		}})
		d := newData(t)
		s := basketService(t, fake, d, Config{})
		req := lines(2)
		req.Items[1].SKU = "KB-002"
		b, err := s.Basket(t.Context(), req)
		if err != nil || b.Pending != 2 {
			t.Fatalf("basket %+v, %v; want boreal queued on both lines", b, err)
		}
		mu.Lock()
		down = false
		mu.Unlock()
		go s.CompensateOnce(t.Context())
		time.Sleep(time.Second) // line 0's call is over, line 1's is not
		synctest.Wait()
		got, _ := s.GetBasket(t.Context(), b.ID)
		if got.Items[0].Status != LineComplete || got.Items[1].Status != LinePartial || got.Pending != 1 {
			t.Errorf("1 s into the pass: lines %s and %s, pending %d; want line 0 complete (its answer recorded), line 1 still partial",
				got.Items[0].Status, got.Items[1].Status, got.Pending)
		}
		if c, _ := d.queue.Counts(t.Context()); c.Done != 1 || c.Leased != 1 {
			t.Errorf("queue %+v 1 s into the pass; want line 0's job done, line 1's leased", c)
		}
		time.Sleep(5 * time.Second) // let the pass end inside the bubble
	})
}

// A worker killed on a job's last try (kill -9: it never reports) leaves the
// job leased; when that lease runs out the job is dead, and its basket line
// is settled with it in the same transaction: dead, with the queue's reason,
// and pending falls to 0.
func TestADeadJobSettlesItsBasketLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"boreal": status(503)})
		d := newData(t)
		s := basketService(t, fake, d, Config{})
		b, err := s.Basket(t.Context(), lines(1))
		if err != nil || b.Pending != 1 {
			t.Fatalf("basket %+v, %v; want boreal queued", b, err)
		}
		for try := range queue.DefaultMaxTries { // each delivery's worker dies before it reports
			if jobs, err := d.queue.Lease(t.Context(), 10, time.Second); err != nil || len(jobs) != 1 {
				t.Fatalf("delivery %d: %d jobs, %v", try+1, len(jobs), err)
			}
			time.Sleep(2 * time.Second)
		}
		if jobs, err := d.queue.Lease(t.Context(), 10, time.Second); err != nil || len(jobs) != 0 {
			t.Fatalf("after the last lease ran out: %d jobs, %v; want none (dead)", len(jobs), err)
		}
		got, err := s.GetBasket(t.Context(), b.ID)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := failureOf(got.Items[0], "boreal")
		if !f.Dead || f.Queued || f.Code != "lease_expired" || got.Pending != 0 {
			t.Errorf("boreal %+v, pending %d; want dead with reason lease_expired, nothing pending", f, got.Pending)
		}
		if c, _ := d.queue.Counts(t.Context()); c.Dead != 1 {
			t.Errorf("queue %+v, want 1 dead", c)
		}
	})
}

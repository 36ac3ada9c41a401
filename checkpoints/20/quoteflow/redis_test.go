package quoteflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/20/internal/redistest"
	"quoteflowlab.dev/checkpoints/20/queue"
	"quoteflowlab.dev/checkpoints/20/quota"
)

func init() { redis.SetLogger(quietRedis{}) } // a stopped server is part of the tests: no dial logs

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// process is one QuoteFlow process on a shared Redis: its own client, quota,
// queue consumer and basket store, as cmd/quoteflow builds them with --redis.
type process struct {
	svc   *Service
	quota *quota.Redis
	queue *queue.Stream
}

// redisProcess builds one process on url and fake; cleanup closes it as a
// stopping process would. Each watcher sees its quota's requests.
func redisProcess(t *testing.T, url string, fake *fakeProvider, qc quota.RedisConfig, cfg Config, watchers ...quotaWatcher) *process {
	t.Helper()
	rdb, err := quota.NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range watchers { // before any use: AddHook is not safe with commands in flight
		rdb.AddHook(w)
	}
	t.Cleanup(func() { rdb.Close() })
	q, err := queue.NewStream(testCtx(t), rdb, queue.StreamConfig{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewRedisStore(q, 0)
	if err != nil {
		t.Fatal(err)
	}
	if qc.OpTimeout == 0 {
		qc.OpTimeout = time.Second // a busy machine may stall a round trip past the default 250 ms
	}
	qt, err := quota.NewRedis(rdb, qc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(qt.Close)
	cfg.Transport, cfg.Quota, cfg.Store, cfg.Queue = fake, qt, store, q
	for _, w := range watchers {
		cfg.Quota = w.watch(cfg.Quota)
	}
	if cfg.Basket.Jitter == nil {
		cfg.Basket.Jitter = func(time.Duration) time.Duration { return 0 }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &process{svc: newService(t, cfg), quota: qt, queue: q}
}

// quoteAll sends n quotes at once to each service and waits for them all.
func quoteAll(t *testing.T, svcs []*Service, n int) []QuoteResult {
	t.Helper()
	var mu sync.Mutex
	var results []QuoteResult
	var wg sync.WaitGroup
	for _, s := range svcs {
		for range n {
			wg.Go(func() {
				res, err := s.Quote(testCtx(t), kb(1))
				if err != nil {
					t.Errorf("Quote: %v", err)
					return
				}
				mu.Lock()
				results = append(results, res)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return results
}

// Three processes, each allowed 6 supplier calls at once, each with 8 quotes
// (24 supplier calls) in flight: with their own semaphores the suppliers see
// 18 at once; with the shared Redis quota exactly 6.
func TestThreeProcessesShareOneLimitOfSix(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	local := newFake(nil)
	local.latency = 100 * time.Millisecond
	var locals []*Service
	for range 3 {
		locals = append(locals, newService(t, Config{Transport: local}))
	}
	quoteAll(t, locals, DefaultInbound)
	if p := local.Peak(); p != 18 {
		t.Errorf("three processes with local semaphores: peak %d at the suppliers, want 18 (6 each)", p)
	}

	shared := newFake(nil)
	shared.latency = 100 * time.Millisecond
	var svcs []*Service
	for range 3 {
		svcs = append(svcs, redisProcess(t, s.URL(), shared, quota.RedisConfig{Limit: 6}, Config{Budget: 3 * time.Second}).svc)
	}
	for _, res := range quoteAll(t, svcs, DefaultInbound) {
		if len(res.Failures) != 0 {
			t.Errorf("a quote failed on the shared quota: %+v", res.Failures)
		}
	}
	if p := shared.Peak(); p != 6 {
		t.Errorf("three processes on one Redis quota: peak %d at the suppliers, want exactly 6", p)
	}
}

// The rate quota is asked before every request, by every process: the
// provider lab's ratelimited boreal admits 5 in any 200 ms, and three
// processes on a shared 5 per 400 ms never send it more. (The service runs
// 5 per 250 ms; here 200 ms of slack lets a busy machine delay a request
// between its admission and its arrival.)
func TestTheRateQuotaHoldsAcrossProcesses(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	var mu sync.Mutex
	var arrivals []time.Time
	fake := newFake(map[string]reply{"boreal": func(r *http.Request, attempt int) (*http.Response, error) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		return normal(r, attempt)
	}})
	qc := quota.RedisConfig{Limit: 6, Rate: quota.Rate{N: 5, Per: 400 * time.Millisecond}}
	var svcs []*Service
	for range 3 {
		svcs = append(svcs, redisProcess(t, s.URL(), fake, qc, Config{Budget: 2 * time.Second}).svc)
	}
	var limited int
	for _, res := range quoteAll(t, svcs, 4) { // 12 boreal calls: 3 windows' worth
		if codes(res)["boreal"] == CodeRateLimited {
			limited++
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(arrivals)+limited != 12 {
		t.Errorf("boreal saw %d calls and %d were rate_limited; want 12 in all", len(arrivals), limited)
	}
	if len(arrivals) < 10 {
		t.Errorf("boreal saw only %d of 12 calls in a 2 s budget at 5 per 400 ms", len(arrivals))
	}
	for i := range arrivals {
		n := 0
		for _, a := range arrivals {
			if d := a.Sub(arrivals[i]); d >= 0 && d < 200*time.Millisecond {
				n++
			}
		}
		if n > 5 {
			t.Fatalf("%d boreal calls arrived within 200 ms: the ratelimited provider would answer 429", n)
		}
	}
}

// Redis gone mid-run: every supplier is quota_unavailable and none is
// called (closed, not open); Redis back, the same process quotes again
// without a restart.
func TestRedisGoneFailsClosedAndRecovers(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	fake := newFake(nil)
	p := redisProcess(t, s.URL(), fake, quota.RedisConfig{Limit: 6, TTL: 300 * time.Millisecond}, Config{})
	if res, err := p.svc.Quote(testCtx(t), kb(1)); err != nil || len(res.Quotes) != 3 {
		t.Fatalf("before the outage: %+v, %v", res, err)
	}
	before := fake.TotalCalls()
	s.Stop()
	res, err := p.svc.Quote(testCtx(t), kb(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range suppliers {
		if c := codes(res)[name]; c != CodeQuotaUnavailable {
			t.Errorf("Redis down: %s is %q, want quota_unavailable", name, c)
		}
	}
	if n := fake.TotalCalls() - before; n != 0 {
		t.Errorf("Redis down: %d supplier calls were made uncounted, want 0", n)
	}
	rec := httptest.NewRecorder()
	p.svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/baskets",
		strings.NewReader(`{"items":[{"sku":"KB-001","quantity":1}]}`)))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "store_unavailable") {
		t.Errorf("a basket with Redis down: %d %s, want 503 store_unavailable", rec.Code, rec.Body)
	}

	s.Restart() // empty: the quota waits one TTL before admitting anyone (no burst)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		res, err := p.svc.Quote(ctx, kb(1))
		if err == nil && len(res.Quotes) == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("5 s after Redis came back the service still fails: %+v, %v", res, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A basket stored by one process is completed by another: the store and the
// queue are in Redis, and the first process is gone (killed with its calls
// queued); the second drains the queue and fills the basket in.
func TestAnotherProcessCompletesTheBasket(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	qc := quota.RedisConfig{Limit: 6}
	a := redisProcess(t, s.URL(), newFake(map[string]reply{"boreal": status(503)}), qc, Config{})
	b, err := a.svc.Basket(testCtx(t), lines(3))
	if err != nil {
		t.Fatal(err)
	}
	if b.Pending != 3 {
		t.Fatalf("pending %d, want boreal queued on all 3 lines", b.Pending)
	}
	a.quota.Close() // A is killed here: its consumer never asks for a job

	fake := newFake(nil)
	other := redisProcess(t, s.URL(), fake, qc, Config{})
	if err := other.svc.Drain(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	got, err := other.svc.GetBasket(testCtx(t), b.ID)
	if err != nil {
		t.Fatalf("the other process cannot see basket %s: %v", b.ID, err)
	}
	if got.Pending != 0 || fake.Calls("boreal") != 3 {
		t.Errorf("pending %d after the other process drained, boreal asked %d times; want 0 and 3", got.Pending, fake.Calls("boreal"))
	}
	for _, l := range got.Items {
		if l.Status != LineComplete {
			t.Errorf("line %d is %s, want complete", l.Index, l.Status)
		}
	}
	if c, _ := other.queue.Counts(testCtx(t)); c.Done != 3 || c.Pending+c.Leased+c.Dead != 0 {
		t.Errorf("queue %+v, want 3 done", c)
	}
}

// Two processes finishing lines of one basket at once lose neither change
// (Update is an optimistic read-modify-write); past its limit the store
// drops the oldest basket with its jobs.
func TestTheRedisStoreUpdatesAtomicallyAndIsBounded(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	ctx := testCtx(t)
	var stores []*RedisStore
	for range 2 {
		rdb, err := quota.NewClient(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Close() })
		q, err := queue.NewStream(ctx, rdb, queue.StreamConfig{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := NewRedisStore(q, 3)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, st)
	}
	const n = 40
	b := Basket{ID: "b0", Items: make([]BasketLine, n)}
	if err := stores[0].Put(ctx, b, queue.Job{ID: "b0/0/boreal"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := stores[i%2].Update(ctx, "b0", func(b *Basket) bool {
				b.Items[i].SKU = fmt.Sprint("line", i)
				return true
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := stores[1].Get(ctx, "b0")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range got.Items {
		if l.SKU != fmt.Sprint("line", i) {
			t.Errorf("line %d lost its change (%q): two writers overwrote each other", i, l.SKU)
		}
	}
	for i := 1; i <= 3; i++ {
		id := fmt.Sprint("b", i)
		if err := stores[i%2].Put(ctx, Basket{ID: id}, queue.Job{ID: id + "/0/boreal"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := stores[0].Get(ctx, "b0"); !errors.Is(err, ErrNoBasket) {
		t.Errorf("the oldest of 4 baskets in a store of 3: %v, want ErrNoBasket", err)
	}
	if _, err := stores[0].queue.Get(ctx, "b0/0/boreal"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("the dropped basket's job: %v, want ErrNotFound", err)
	}
	if err := stores[0].Update(ctx, "b0", func(*Basket) bool { return true }); !errors.Is(err, ErrNoBasket) {
		t.Errorf("Update of a dropped basket = %v, want ErrNoBasket", err)
	}
}

// On Redis as on bbolt: workers killed on each of a job's tries (they never
// report) leave it leased; when its last lease runs out the job is dead, and
// the script that says so settles its basket line: dead with lease_expired,
// pending 0. A job whose last try fails is settled the same way by Fail's.
func TestADeadStreamJobSettlesItsBasketLine(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	p := redisProcess(t, s.URL(), newFake(map[string]reply{"boreal": status(503)}), quota.RedisConfig{Limit: 6}, Config{})
	ctx := testCtx(t)
	b, err := p.svc.Basket(ctx, lines(2))
	if err != nil || b.Pending != 2 {
		t.Fatalf("basket %+v, %v; want boreal queued on both lines", b, err)
	}
	const lease = 50 * time.Millisecond
	for try := 1; try <= queue.DefaultMaxTries; try++ {
		var jobs []queue.Job
		for len(jobs) < 2 && ctx.Err() == nil { // each delivery's worker dies before it reports
			more, err := p.queue.Lease(ctx, 10, lease)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, more...)
			time.Sleep(lease)
		}
		if try == queue.DefaultMaxTries { // line 1's job: its last try fails, reported
			if dead, err := p.queue.Fail(ctx, b.ID+"/1/boreal", "http_503", 0); err != nil || !dead {
				t.Fatalf("Fail on the last try = %v, %v; want dead", dead, err)
			}
		}
	}
	time.Sleep(2 * lease)
	if jobs, err := p.queue.Lease(ctx, 10, lease); err != nil || len(jobs) != 0 {
		t.Fatalf("after the last lease ran out: %d jobs, %v; want none (dead)", len(jobs), err)
	}
	got, err := p.svc.GetBasket(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, reason := range []Code{"lease_expired", "http_503"} {
		f, _ := failureOf(got.Items[i], "boreal")
		if !f.Dead || f.Queued || f.Code != reason {
			t.Errorf("line %d: boreal %+v, want dead with reason %s", i, f, reason)
		}
	}
	if got.Pending != 0 {
		t.Errorf("pending %d, want 0", got.Pending)
	}
	if c, _ := p.queue.Counts(ctx); c.Dead != 2 {
		t.Errorf("queue %+v, want 2 dead", c)
	}
}

// Redis stalls (1.5 s) while a quote's calls are in flight: the quote still
// answers within its 800 ms budget. Releasing a slot does not wait for Redis.
func TestARedisStallDoesNotStretchAQuote(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	fake := newFake(nil)
	fake.latency = 200 * time.Millisecond
	p := redisProcess(t, s.URL(), fake, quota.RedisConfig{Limit: 6}, Config{Budget: 800 * time.Millisecond})
	type answer struct {
		took time.Duration
		err  error
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		_, err := p.svc.Quote(context.Background(), kb(1))
		done <- answer{time.Since(start), err}
	}()
	for fake.InFlight() < 3 && time.Since(start) < 5*time.Second { // every slot taken: now stall
		time.Sleep(5 * time.Millisecond)
	}
	s.Stall(1500 * time.Millisecond)
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.took > 800*time.Millisecond+200*time.Millisecond {
		t.Errorf("the quote answered after %s with Redis stalled, want within its 800 ms budget (+200 ms slack)", a.took)
	}
}

// Redis stalls (1.5 s) as a basket's answer is written: the client gets 503
// store_unavailable by the deadline (the calls end early enough for the
// write to fit in it), saying the basket may have been kept; when Redis
// resumes, the write it held is refused (too late), so no job is queued and
// no supplier is asked again. A retry with the same Idempotency-Key, once
// the first is over, makes the basket once.
func TestABasketWriteCannotLandAfterItsDeadline(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	fake := newFake(map[string]reply{"boreal": status(503)})
	fake.latency = 300 * time.Millisecond
	p := redisProcess(t, s.URL(), fake, quota.RedisConfig{Limit: 6}, Config{Basket: BasketPolicy{Deadline: 500 * time.Millisecond}})
	h := p.svc.Handler()
	done := make(chan *httptest.ResponseRecorder, 1)
	start := time.Now()
	go func() { done <- postBasket(h, "order-9", twoLines) }()
	for fake.InFlight() < 6 && time.Since(start) < 5*time.Second { // reserved, every call out: now stall
		time.Sleep(5 * time.Millisecond)
	}
	s.Stall(1500 * time.Millisecond)
	rec := <-done
	took := time.Since(start)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "store_unavailable") || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("with Redis stalled at the write: %d %s, want 503 store_unavailable with Retry-After", rec.Code, rec.Body)
	}
	if limit := 500*time.Millisecond + 600*time.Millisecond; took > limit { // Redis stalls 1.5 s: an uncut write answers after it
		t.Errorf("answered after %s, want within %s (the 500 ms deadline, and slack for a busy machine, far under the 1.5 s stall): the write was cut at the deadline", took, limit)
	}
	ctx := testCtx(t)
	for time.Since(start) < 1600*time.Millisecond || redis.NewClient(&redis.Options{Addr: s.Addr}).Ping(ctx).Err() != nil {
		time.Sleep(20 * time.Millisecond) // until Redis has resumed and run what it held
	}
	if c, err := p.queue.Counts(ctx); err != nil || c != (queue.Counts{}) {
		t.Errorf("queue %+v, %v after Redis resumed; want nothing: a write that reached Redis after its deadline is not made", c, err)
	}
	if b, err := p.svc.GetBasket(ctx, keyID("order-9")); err != nil || b.answered() {
		t.Errorf("basket %+v, %v; want only the reservation, never answered", b, err)
	}
	calls := fake.TotalCalls()
	time.Sleep(2 * (500*time.Millisecond + storeWriteTime)) // the reservation can no longer be answering
	retry := postBasket(h, "order-9", twoLines)
	// The retry is a basket of its own, with its own 500 ms deadline: on a
	// busy machine its write may miss that deadline too, and then it says
	// so (503, kept: nothing), as a client is told to try again later.
	for try := 1; try < 5 && retry.Code == http.StatusServiceUnavailable && strings.Contains(retry.Body.String(), `"kept":"nothing"`); try++ {
		time.Sleep(2 * (500*time.Millisecond + storeWriteTime))
		retry = postBasket(h, "order-9", twoLines)
	}
	b := decodeJSON[Basket](t, retry)
	if retry.Code != http.StatusOK || !b.answered() || fake.TotalCalls() == calls {
		t.Fatalf("the retry: %d %s, want 200 with the basket made now", retry.Code, retry.Body)
	}
	calls = fake.TotalCalls()
	again := postBasket(h, "order-9", twoLines)
	if got := decodeJSON[Basket](t, again); again.Code != http.StatusOK || got.ID != b.ID || fake.TotalCalls() != calls {
		t.Errorf("the retry again: %d, basket %s, %d new calls; want 200, basket %s and no call", again.Code, got.ID, fake.TotalCalls()-calls, b.ID)
	}
}

// straggle answers after 10 ms, except boreal's first copies, which take
// 150 ms: each of them is hedged. It counts the first copies that arrive.
func straggle(firsts *atomic.Int64) reply {
	return func(r *http.Request, attempt int) (*http.Response, error) {
		hedge := r.Header.Get("X-Attempt") == "2"
		if !hedge {
			firsts.Add(1)
		}
		d := 10 * time.Millisecond
		if !hedge && strings.HasSuffix(r.URL.Path, "/boreal") {
			d = 150 * time.Millisecond
		}
		return after(d, normal)(r, attempt)
	}
}

// A quotaWatcher sees a process's quota from both ends: the requests the
// service makes of it (watch wraps it) and their round trips to Redis (a
// go-redis hook on the process's client).
type quotaWatcher interface {
	redis.Hook
	watch(quota.Quota) quota.Quota
}

// admissionLog records each request for a slot as it goes to Redis: the
// lease asked for, whether the caller waits in line (Acquire, a first call)
// or may not (TryAcquire, a hedge), Redis's answer, and when the round trip
// that carried it was sent and its answer received. Redis decided between
// those two instants, whatever the scheduler did to the goroutines before
// and after.
type admissionLog struct {
	rdb   *redis.Client // reads the line after each hedge's request
	mu    sync.Mutex
	tries []slotRequest
}

type slotRequest struct {
	lease          string
	waits          bool // Acquire's request: the caller waits in line when refused
	admitted       bool
	sent, received time.Time
	// A hedge's request (TryAcquire): who was in Redis's line just after its
	// answer came back.
	lineAfter []string
}

func (l *admissionLog) watch(q quota.Quota) quota.Quota { return q }

func (l *admissionLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (l *admissionLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (l *admissionLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		sent := time.Now()
		err := next(ctx, cmd)
		received := time.Now()
		c, script := cmd.(*redis.Cmd)
		if !script || err != nil {
			return err
		}
		// The lease script: EVAL(SHA) script numkeys KEYS... ARGV..., where
		// ARGV[7] counts the leases given back that come first from
		// ARGV[8], and the tries follow, each a lease and "wait" (Acquire)
		// or "try" (TryAcquire); it answers {epoch, {admitted 0|1 for each
		// try}, ...}.
		args := cmd.Args()
		if len(args) < 3 || !strings.HasPrefix(strings.ToLower(fmt.Sprint(args[0])), "eval") {
			return err
		}
		numkeys, _ := strconv.Atoi(fmt.Sprint(args[2]))
		argv := 3 + numkeys
		res, rerr := c.Slice()
		if argv+7 > len(args) || rerr != nil || len(res) != 4 {
			return err
		}
		given, _ := strconv.Atoi(fmt.Sprint(args[argv+6]))
		admitted, _ := res[1].([]any)
		var line []string
		for i, j := argv+7+given, 0; i+1 < len(args) && j < len(admitted); i, j = i+2, j+1 {
			r := slotRequest{lease: fmt.Sprint(args[i]), waits: fmt.Sprint(args[i+1]) == "wait",
				admitted: admitted[j] == int64(1), sent: sent, received: received}
			if !r.waits && numkeys >= 4 && l.rdb != nil {
				if line == nil { // KEYS[4] is the line: in the order the callers came.
					line, _ = l.rdb.ZRange(context.Background(), fmt.Sprint(args[3+3]), 0, -1).Result()
				}
				r.lineAfter = line
			}
			l.mu.Lock()
			l.tries = append(l.tries, r)
			l.mu.Unlock()
		}
		return err
	}
}

// passes looks at each hedge's request for a slot made while a first call
// was certainly waiting in line for one: the first call had been refused
// (and so had taken its place in line) before the hedge's request was
// sent, and was still in Redis's line just after the hedge's answer came
// back. A caller joins the line once and leaves it once (granted a slot,
// given up, or its place expired, which its process's renewals prevent
// here), so it was in line when Redis ran the hedge's script. met counts
// those requests, passes those Redis admitted. (A waiter is granted its
// slot by the script that frees one, not by a request of its own, so the
// line itself is what says who waited.)
func (l *admissionLog) passes() (passes, met int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	refused := map[string]time.Time{} // a first call's first refusal, received at
	for _, r := range l.tries {
		if t, seen := refused[r.lease]; r.waits && !r.admitted && (!seen || r.received.Before(t)) {
			refused[r.lease] = r.received
		}
	}
	for _, h := range l.tries {
		if h.waits {
			continue
		}
		for _, w := range h.lineAfter {
			if at, ok := refused[w]; ok && at.Before(h.sent) {
				met++
				if h.admitted {
					passes++
				}
				break
			}
		}
	}
	return passes, met
}

// With the shared Redis quota as with the local limiter, a hedge never
// takes a slot a first call is waiting for: in a 50-line basket (150 first
// calls through 6 slots, every boreal first call slower than its hedge
// delay) Redis admits no hedge while a first call waits in line. Hedges ask
// for a slot every 5 ms and first calls every 20 ms: without the line,
// hedges took freed slots ahead of the first calls waiting for them. The
// order is the one Redis decided in (admissionLog), not the order in which
// calls reach the suppliers, which a busy machine can shuffle.
func TestAHedgeNeverPassesAFirstCallWaitingForTheSharedQuota(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	var firsts atomic.Int64
	fake := newFake(map[string]reply{"atlas": straggle(&firsts), "boreal": straggle(&firsts), "cedar": straggle(&firsts)})
	admissions := &admissionLog{rdb: redis.NewClient(&redis.Options{Addr: s.Addr})}
	t.Cleanup(func() { admissions.rdb.Close() })
	p := redisProcess(t, s.URL(), fake, quota.RedisConfig{Limit: 6}, Config{Hedge: fixedDelay(20 * time.Millisecond),
		Basket: BasketPolicy{Deadline: 10 * time.Second}}, admissions)
	b, err := p.svc.Basket(testCtx(t), lines(MaxBasketLines))
	if err != nil {
		t.Fatal(err)
	}
	if n := firsts.Load(); n != 3*MaxBasketLines {
		t.Fatalf("%d first calls reached the suppliers, want %d (basket %d extra calls)", n, 3*MaxBasketLines, b.ExtraCalls)
	}
	passes, met := admissions.passes()
	if passes != 0 {
		t.Errorf("Redis admitted %d of the %d hedges' requests for a slot made while a first call waited in line; want 0: a hedge never passes a waiter", passes, met)
	}
	if met == 0 {
		t.Errorf("no hedge asked for a slot while a first call waited in line: the test proves nothing (boreal's first copies straggle past the 20 ms hedge delay; %d hedges sent)", b.ExtraCalls)
	}
}

// Redis stalls while a renewal of the quote's leases is in flight: the
// renewal waits out its round-trip limit (1 s here), and the quote, whose
// boreal call runs to the 800 ms deadline, must not wait for it to give
// its slots back. (Release used to wait for the renewal: 0.92 s with the
// default 250 ms limit, up to 1.8 s with this one.)
func TestARenewalStuckInAStalledRedisDoesNotHoldTheAnswer(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	fake := newFake(map[string]reply{"boreal": hang})
	p := redisProcess(t, s.URL(), fake, quota.RedisConfig{Limit: 6, TTL: 300 * time.Millisecond}, // renewed every 100 ms
		Config{Budget: 800 * time.Millisecond, NoHedge: true})
	done := make(chan time.Duration, 1)
	start := time.Now()
	go func() {
		p.svc.Quote(context.Background(), kb(1))
		done <- time.Since(start)
	}()
	for fake.InFlight() < 1 && time.Since(start) < 5*time.Second { // boreal holds its slot: now stall
		time.Sleep(5 * time.Millisecond)
	}
	s.Stall(2 * time.Second)
	if took := <-done; took > 800*time.Millisecond+150*time.Millisecond {
		t.Errorf("the quote answered after %s with Redis stalled, want within its 800 ms budget (+150 ms slack)", took)
	}
}

const oneLine = `{"items":[{"sku":"KB-001","quantity":1}],"scenario":"normal"}`

// replyGate is a TCP proxy to a Redis server that forwards every command and
// can stop forwarding the replies to scripts: what a client sees when Redis
// ran a script and its answer is lost. While muted, a connection that sends
// a script (EVAL, EVALSHA) gets no reply from then on; the others, and the
// handshake of a connection opened meanwhile, are answered. (Muting every
// reply kept the handshake of a new connection from completing: a write
// that needed one was never sent, and Redis never ran it.)
type replyGate struct {
	ln    net.Listener
	to    string
	muted atomic.Bool
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startReplyGate(t *testing.T, to string) *replyGate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &replyGate{ln: ln, to: to}
	g.wg.Go(g.serve)
	t.Cleanup(g.close)
	return g
}

func (g *replyGate) url() string { return "redis://" + g.ln.Addr().String() + "/0" }

func (g *replyGate) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		r, err := net.Dial("tcp", g.to)
		if err != nil {
			c.Close()
			continue
		}
		g.mu.Lock()
		g.conns = append(g.conns, c, r)
		g.mu.Unlock()
		var lost atomic.Bool // this connection sent a script while muted
		g.wg.Go(func() {
			buf, tail := make([]byte, 32<<10), []byte{}
			for {
				n, err := c.Read(buf)
				if n > 0 {
					seen := bytes.ToLower(append(tail, buf[:n]...))
					if g.muted.Load() && (bytes.Contains(seen, []byte("\r\neval\r\n")) || bytes.Contains(seen, []byte("\r\nevalsha\r\n"))) {
						lost.Store(true)
					}
					tail = seen[max(len(seen)-16, 0):]
					if _, err := r.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					r.Close()
					return
				}
			}
		})
		g.wg.Go(func() {
			buf := make([]byte, 32<<10)
			for {
				n, err := r.Read(buf)
				if n > 0 && !(g.muted.Load() && lost.Load()) {
					c.Write(buf[:n])
				}
				if err != nil {
					return
				}
			}
		})
	}
}

func (g *replyGate) close() {
	g.ln.Close()
	g.mu.Lock()
	for _, c := range g.conns {
		c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// Redis runs the write of a basket's answer, and its reply is lost: the
// service cannot know the basket was kept, and must not say that nothing
// was. Its 503 says the basket may have been kept and names it and the
// Idempotency-Key to ask again with; asked again with that key, once Redis
// answers again, it returns the basket that was kept and calls no supplier.
// (It used to answer a bare store_unavailable, "nothing was kept", while
// the basket and its queued call were stored: a retry made a second one.)
func TestABasketWhoseWriteIsNotConfirmedIsNotSaidToBeLost(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	gate := startReplyGate(t, s.Addr)
	var arrived atomic.Int64
	answer := func(r *http.Request, n int) (*http.Response, error) {
		// Each call holds its slot before it reaches the supplier: once all
		// three have, Redis's replies to scripts are lost; the write comes after.
		if arrived.Add(1) == 3 {
			gate.muted.Store(true)
		}
		if strings.HasSuffix(r.URL.Path, "/boreal") {
			return status(503)(r, n) // a call to queue
		}
		return normal(r, n)
	}
	fake := newFake(map[string]reply{"atlas": answer, "boreal": answer, "cedar": answer})
	p := redisProcess(t, gate.url(), fake, quota.RedisConfig{Limit: 6},
		Config{Basket: BasketPolicy{Deadline: time.Second, MaxAttempts: 1}})
	start := time.Now()
	rec := postBasket(p.svc.Handler(), "", oneLine)
	took := time.Since(start)
	gate.muted.Store(false)
	var got map[string]string
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	if took > time.Second+150*time.Millisecond {
		t.Errorf("answered after %s, want by the 1 s deadline (+150 ms slack)", took)
	}
	direct := redisProcess(t, s.URL(), newFake(nil), quota.RedisConfig{}, Config{})
	if c, err := direct.queue.Counts(testCtx(t)); err != nil || c.Pending != 1 {
		t.Fatalf("queue %+v, %v; want the basket's boreal call pending: Redis ran the write", c, err)
	}
	if rec.Code != http.StatusServiceUnavailable || got["detail"] != "store_unavailable" || got["kept"] != "unknown" ||
		got["basket_id"] == "" || got["idempotency_key"] == "" {
		t.Fatalf("the write ran but its reply was lost; the answer: %d %s, want 503 store_unavailable saying kept unknown, with the basket's ID and a key to ask again with", rec.Code, rec.Body)
	}
	kept, err := direct.svc.GetBasket(testCtx(t), got["basket_id"])
	if err != nil || !kept.answered() {
		t.Fatalf("basket %s: %+v, %v; want the basket that was kept, answered", got["basket_id"], kept, err)
	}
	calls := fake.TotalCalls()
	retry := postBasket(p.svc.Handler(), got["idempotency_key"], oneLine)
	if b := decodeJSON[Basket](t, retry); retry.Code != http.StatusOK || b.ID != kept.ID || fake.TotalCalls() != calls {
		t.Errorf("asked again with the key it was given: %d %s, %d new calls; want 200 with basket %s and no call", retry.Code, retry.Body, fake.TotalCalls()-calls, kept.ID)
	}
}

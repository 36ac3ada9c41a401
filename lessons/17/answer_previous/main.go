// Command answer_previous is the reference answer to exercise E16 (lesson 16):
// many baskets, one limit, every cut-off call completed later, nothing lost.
//
//	go run ./lessons/17/answer_previous
//
// It drives checkpoint 16's service with a fake provider (an
// http.RoundTripper given as quoteflow.Config{Transport: ...}) that plays the
// three suppliers and is the witness for everything checked: it counts the
// calls in flight and their peak, remembers when each call arrived, under
// which X-Request-ID, and whether it ended because its context was cancelled.
// Each check builds its own service on a fresh bbolt file.
//
//  1. One limit for everything: two baskets of 10 lines at once (60 calls)
//     never have more than 6 calls at the suppliers. A limiter made per
//     basket would let 12 through.
//  2. No retry of what cannot change: boreal answering 404, or 200 with
//     unit_cents as a string, is called once per line and reported
//     http_404 / invalid_data, not queued.
//  3. The deadline cancels: boreal holds every call for 2 s; with a 300 ms
//     basket deadline every boreal call saw its context cancelled, none is
//     still running when the answer is back, and boreal's failures are
//     deadline, queued. (Bonus: the answer comes by 1.2 s, not at 2 s.)
//  4. Retry-After-Ms is honoured: boreal answers 429 with Retry-After-Ms: 1000
//     to the first call of each line; its retry arrives no earlier than 1000 ms
//     later, and the line is complete. The wait is long next to the first
//     backoff (at most 50 ms), so a retry after 90 % of it (900 ms) is
//     early by more than a stalled timer makes up.
//  5. Nothing lost: boreal answers 503 (an outage); each line reports boreal
//     queued; boreal recovers; the queue is drained with Drain (what
//     `quoteflow compensate --once` runs) and every line is complete.
//
// Bonus checks: the retry waits are drawn from [0, cap] (full jitter, with a
// 500 ms cap for the check), not all the cap nor its top half;
// the queue survives closing and reopening its file; a Retry-After longer than
// the deadline stops the job at once as rate_limited, queued.
//
// The checks run at once (each its own service, fake and bbolt file), and
// the first failure ends the run. Every wait is bounded: each basket runs
// under a 3 s context, and the fake's slowest answer is 2 s, which the
// deadline check does not wait for. The whole run takes about 1.2 s, the
// Retry-After check's. The clock is read only against bounds a busy machine
// cannot blur: a wait can end late but never early, so "not before
// Retry-After" and "not all at the cap" are exact for a broken service, and
// a correct one passes unless the machine stalls the program for hundreds
// of milliseconds.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"quoteflowlab.dev/checkpoints/16/fanout"
	"quoteflowlab.dev/checkpoints/16/queue"
	"quoteflowlab.dev/checkpoints/16/quoteflow"
)

const (
	wait     = 3 * time.Second // cap on every basket and drain
	outbound = 6               // the service's default outbound limit
)

func main() {
	dir, err := os.MkdirTemp("", "e16-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "E16 failed:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	checks := []struct {
		name string
		run  func(dir string) error
	}{
		{"shared limit", oneLimitForEveryBasket},
		{"client errors", clientErrorsAreNotRetried},
		{"deadline", theDeadlineCancels},
		{"Retry-After", retryAfterIsHonoured},
		{"queue", cutOffCallsAreCompletedLater},
		{"jitter", retryWaitsAreSpread},
		{"restart", theQueueSurvivesARestart},
		{"long Retry-After", aRetryAfterPastTheDeadlineIsQueued},
	}
	// The checks run at once (each its own service, fake and bbolt file);
	// the first failure ends the run.
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(checks))
	for i, c := range checks {
		sub := filepath.Join(dir, fmt.Sprint(i))
		go func() { results <- result{c.name, c.run(sub)} }()
	}
	for range checks {
		if r := <-results; r.err != nil {
			fmt.Fprintf(os.Stderr, "E16 failed (%s): %v\n", r.name, r.err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	fmt.Println("E16 passed: two baskets at once peaked at most 6 calls at the suppliers; " +
		"404 and invalid_data called once and not queued; the 300 ms deadline answered on time and cancelled " +
		"every running boreal call; no retry came before its Retry-After-Ms; cut-off calls were queued and " +
		"completed by the queue; retry waits spread by full jitter; the queue survived a restart; " +
		"a Retry-After past the deadline was rate_limited and queued at once")
}

// 1. Two baskets at once share the one outbound limit.
func oneLimitForEveryBasket(dir string) error {
	fake := newFake(20*time.Millisecond, nil)
	svc, closeData, err := open(dir, fake, quoteflow.Config{})
	if err != nil {
		return err
	}
	defer closeData()
	baskets := make([]quoteflow.Basket, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range baskets {
		wg.Go(func() { baskets[i], errs[i] = basket(svc, 10, "normal") })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if p := fake.peak(); p > outbound {
		return fmt.Errorf("two baskets at once had %d calls at the suppliers at the same time, more than the limit of %d: "+
			"the baskets do not share one limit of %d (a limit per basket, or one set too high)", p, outbound, outbound)
	}
	for _, b := range baskets {
		if err := allComplete(b); err != nil {
			return err
		}
	}
	if n := fake.total(); n != 60 {
		return fmt.Errorf("%d supplier calls for 2 baskets of 10 lines, want 60", n)
	}
	return nil
}

// 2. A 404 and invalid data are final: one call per line, not queued.
func clientErrorsAreNotRetried(dir string) error {
	for i, c := range []struct {
		name  string
		reply reply
		code  quoteflow.Code
	}{
		{"404", status(http.StatusNotFound), quoteflow.HTTPCode(http.StatusNotFound)},
		{"invalid data", bodyReply(`{"supplier":"boreal","sku":"KB-001","unit_cents":"1100","shipping_cents":400,"stock":10}`), quoteflow.CodeInvalidData},
	} {
		fake := newFake(0, map[string]reply{"boreal": c.reply})
		svc, closeData, err := open(filepath.Join(dir, fmt.Sprint(i)), fake, quoteflow.Config{})
		if err != nil {
			return err
		}
		defer closeData()
		b, err := basket(svc, 3, "normal")
		if err != nil {
			return err
		}
		if n := fake.calls("boreal"); n != 3 {
			return fmt.Errorf("%s: boreal was called %d times for 3 lines, want 3: asking again gets the same answer, so it must not be retried", c.name, n)
		}
		for _, l := range b.Items {
			f, ok := failureOf(l, "boreal")
			switch {
			case !ok:
				return fmt.Errorf("%s: line %d has no boreal failure: %+v", c.name, l.Index, l)
			case f.Code != c.code:
				return fmt.Errorf("%s: line %d: boreal's failure code is %q, want %q", c.name, l.Index, f.Code, c.code)
			case f.Attempts != 1 || f.Queued:
				return fmt.Errorf("%s: line %d: boreal %+v, want 1 attempt and not queued", c.name, l.Index, f)
			case len(l.Quotes) != 2:
				return fmt.Errorf("%s: line %d has %d quotes, want atlas's and cedar's kept", c.name, l.Index, len(l.Quotes))
			}
		}
		if b.Pending != 0 {
			return fmt.Errorf("%s: pending %d, want 0: nothing worth a retry", c.name, b.Pending)
		}
	}
	return nil
}

// 3. The basket deadline cancels the calls still running.
func theDeadlineCancels(dir string) error {
	const deadline = 300 * time.Millisecond
	fake := newFake(0, map[string]reply{"boreal": holdFor(2 * time.Second)})
	svc, closeData, err := open(dir, fake, quoteflow.Config{Basket: quoteflow.BasketPolicy{
		Deadline: deadline, CallTimeout: 5 * time.Second}})
	if err != nil {
		return err
	}
	defer closeData()
	start := time.Now()
	type answer struct {
		b       quoteflow.Basket
		err     error
		elapsed time.Duration
		running int
	}
	done := make(chan answer, 1)
	go func() {
		b, err := basket(svc, 3, "normal")
		done <- answer{b, err, time.Since(start), fake.inFlight()}
	}()
	// Not back by the deadline + 900 ms: the cancel was swallowed (a broken
	// build answers when boreal does, at 2 s); no need to wait for that.
	late := time.NewTimer(deadline + 900*time.Millisecond)
	defer late.Stop()
	var a answer
	select {
	case a = <-done:
	case <-late.C:
		return fmt.Errorf("the basket had not answered %v after it started, want by its %v deadline (+900 ms): the deadline's cancel was swallowed", time.Since(start).Round(time.Millisecond), deadline)
	}
	b, err, elapsed, running := a.b, a.err, a.elapsed, a.running
	if err != nil {
		return err
	}
	if elapsed > deadline+900*time.Millisecond {
		return fmt.Errorf("the basket answered after %v, want by its %v deadline (+900 ms): the deadline's cancel was swallowed", elapsed.Round(time.Millisecond), deadline)
	}
	if running != 0 {
		return fmt.Errorf("when the basket answered at %v, %d calls were still running at the suppliers: "+
			"the deadline stopped the waiting but did not cancel the calls", elapsed.Round(time.Millisecond), running)
	}
	if cut, n := fake.cancelled("boreal"), fake.calls("boreal"); n == 0 || cut != n {
		return fmt.Errorf("%d of %d boreal calls saw their context cancelled, want all: the deadline must cancel them", cut, n)
	}
	for _, l := range b.Items {
		f, ok := failureOf(l, "boreal")
		switch {
		case !ok || f.Code != quoteflow.Code(fanout.CodeDeadline):
			return fmt.Errorf("line %d: boreal %+v (found %v), want the code deadline", l.Index, f, ok)
		case !f.Queued:
			return fmt.Errorf("line %d: boreal's deadline failure is not queued: a cut-off call must go to the compensation queue", l.Index)
		}
		if len(l.Quotes) != 2 {
			return fmt.Errorf("line %d has %d quotes, want atlas's and cedar's kept", l.Index, len(l.Quotes))
		}
	}
	return nil
}

// 4. A retry never arrives before the Retry-After-Ms its 429 gave.
func retryAfterIsHonoured(dir string) error {
	const after = time.Second
	fake := newFake(0, map[string]reply{"boreal": rateLimitedOnce(after)})
	svc, closeData, err := open(dir, fake, quoteflow.Config{})
	if err != nil {
		return err
	}
	defer closeData()
	b, err := basket(svc, 3, "normal")
	if err != nil {
		return err
	}
	gaps := fake.retryGaps("boreal")
	if len(gaps) != 3 {
		return fmt.Errorf("boreal saw %d retries for 3 lines, want one each (arrivals %v)", len(gaps), fake.arrivalsOf("boreal"))
	}
	for _, g := range gaps {
		if g < after {
			return fmt.Errorf("a retry arrived %v after the 429 that asked for Retry-After-Ms %d: too early", g.Round(time.Millisecond), after.Milliseconds())
		}
	}
	return allComplete(b)
}

// 5. An outage's calls are queued, and the queue completes every line.
func cutOffCallsAreCompletedLater(dir string) error {
	out := &outage{}
	out.set(true)
	fake := newFake(0, map[string]reply{"boreal": out.reply})
	svc, closeData, err := open(dir, fake, quoteflow.Config{})
	if err != nil {
		return err
	}
	defer closeData()
	b, err := basket(svc, 3, "normal")
	if err != nil {
		return err
	}
	if err := borealQueued(b, quoteflow.HTTPCode(http.StatusServiceUnavailable)); err != nil {
		return err
	}
	out.set(false) // boreal is back
	if err := drain(svc); err != nil {
		return err
	}
	return completedLater(svc, b.ID)
}

// Bonus: retry waits are drawn from [0, cap] (full jitter), not all the cap.
func retryWaitsAreSpread(dir string) error {
	const (
		lines   = 30
		backoff = 500 * time.Millisecond // base and cap: the first retry waits up to this
	)
	fake := newFake(0, map[string]reply{"boreal": failsOnce})
	// Slots for every call at once, so the gaps are the waits alone.
	svc, closeData, err := open(dir, fake, quoteflow.Config{OutboundLimit: 3 * lines,
		Basket: quoteflow.BasketPolicy{BackoffBase: backoff, BackoffCap: backoff}})
	if err != nil {
		return err
	}
	defer closeData()
	b, err := basket(svc, lines, "normal")
	if err != nil {
		return err
	}
	if err := allComplete(b); err != nil {
		return err
	}
	gaps := fake.retryGaps("boreal")
	if len(gaps) != lines {
		return fmt.Errorf("jitter: %d boreal retries for %d lines, want %d", len(gaps), lines, lines)
	}
	lo, hi := slices.Min(gaps), slices.Max(gaps)
	// The first retry's wait is uniform in [0, 500 ms]: 30 draws all above
	// 200 ms happen once in 4·10^6 runs, and the shortest (16 ms on average)
	// leaves over 180 ms for a stalled machine. A wait never ends early, so
	// waits that are always the full 500 ms, or drawn from its top half
	// only (250-500 ms), never pass, however busy it is.
	if lo >= backoff*4/10 {
		return fmt.Errorf("jitter: the %d retries came back between %v and %v after their 503: "+
			"waits drawn from [0, %v] would include short ones; none came back within %v, so the waits use only the top of their range and retries stay bunched",
			lines, lo.Round(time.Millisecond), hi.Round(time.Millisecond), backoff, backoff*4/10)
	}
	return nil
}

// Bonus: queued calls are in the file, not in the process.
func theQueueSurvivesARestart(dir string) error {
	out := &outage{}
	out.set(true)
	fake := newFake(0, map[string]reply{"boreal": out.reply})
	svc, closeData, err := open(dir, fake, quoteflow.Config{})
	if err != nil {
		return err
	}
	b, err := basket(svc, 2, "normal")
	closeData() // the process is gone
	if err != nil {
		return err
	}
	if err := borealQueued(b, quoteflow.HTTPCode(http.StatusServiceUnavailable)); err != nil {
		return err
	}
	out.set(false)
	svc2, closeData2, err := open(dir, fake, quoteflow.Config{})
	if err != nil {
		return err
	}
	defer closeData2()
	if err := drain(svc2); err != nil {
		return err
	}
	if err := completedLater(svc2, b.ID); err != nil {
		return fmt.Errorf("after closing and reopening the data file: %w (were the jobs kept only in memory?)", err)
	}
	return nil
}

// Bonus: a Retry-After that does not fit before the deadline is not slept.
func aRetryAfterPastTheDeadlineIsQueued(dir string) error {
	fake := newFake(0, map[string]reply{"boreal": rateLimitedOnce(5 * time.Second)})
	svc, closeData, err := open(dir, fake, quoteflow.Config{})
	if err != nil {
		return err
	}
	defer closeData()
	start := time.Now()
	b, err := basket(svc, 2, "normal")
	if err != nil {
		return err
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		return fmt.Errorf("a Retry-After of 5 s beyond a 2 s deadline: the basket took %v, want at once", d.Round(time.Millisecond))
	}
	return borealQueued(b, quoteflow.Code(fanout.CodeRateLimited))
}

// borealQueued: every line kept atlas and cedar, and boreal failed with code, queued.
func borealQueued(b quoteflow.Basket, code quoteflow.Code) error {
	for _, l := range b.Items {
		f, ok := failureOf(l, "boreal")
		switch {
		case !ok:
			return fmt.Errorf("line %d has no boreal failure: %+v", l.Index, l)
		case f.Code != code:
			return fmt.Errorf("line %d: boreal's failure code is %q, want %q", l.Index, f.Code, code)
		case !f.Queued:
			return fmt.Errorf("line %d: boreal %s is not queued: a cut-off call must go to the compensation queue", l.Index, f.Code)
		case len(l.Quotes) != 2:
			return fmt.Errorf("line %d has %d quotes, want atlas's and cedar's kept", l.Index, len(l.Quotes))
		}
	}
	if b.Pending != len(b.Items) {
		return fmt.Errorf("pending %d, want %d (boreal on every line)", b.Pending, len(b.Items))
	}
	return nil
}

// completedLater: the stored basket shows every line complete, nothing pending.
func completedLater(svc *quoteflow.Service, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	got, err := svc.GetBasket(ctx, id)
	if err != nil {
		return err
	}
	if got.Pending != 0 {
		return fmt.Errorf("after draining the queue the basket still has %d pending: the cut-off calls were never completed", got.Pending)
	}
	return allComplete(got)
}

func allComplete(b quoteflow.Basket) error {
	for _, l := range b.Items {
		if l.Status != quoteflow.LineComplete || len(l.Quotes) != 3 {
			return fmt.Errorf("line %d is %s with %d quotes (failures %+v), want complete with 3", l.Index, l.Status, len(l.Quotes), l.Failures)
		}
	}
	return nil
}

func failureOf(l quoteflow.BasketLine, supplier string) (quoteflow.LineFailure, bool) {
	for _, f := range l.Failures {
		if f.Supplier == supplier {
			return f, true
		}
	}
	return quoteflow.LineFailure{}, false
}

// open builds a service on fake and a bbolt file in dir; closeData closes both.
func open(dir string, fake http.RoundTripper, cfg quoteflow.Config) (*quoteflow.Service, func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, "quoteflow.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, nil, err
	}
	q, err := queue.NewBolt(db, queue.Limits{})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	store, err := quoteflow.NewBoltStore(db, q, 0)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	cfg.ProviderURL, cfg.Transport, cfg.Store, cfg.Queue = "http://provider.test", fake, store, q
	cfg.Logger = slog.New(slog.DiscardHandler)
	svc, err := quoteflow.New(cfg)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return svc, func() { svc.Close(); db.Close() }, nil
}

// basket asks for n lines of KB-001 x1, capped at wait.
func basket(svc *quoteflow.Service, n int, scenario string) (quoteflow.Basket, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	req := quoteflow.BasketRequest{Scenario: scenario}
	for range n {
		req.Items = append(req.Items, quoteflow.BasketItem{SKU: "KB-001", Quantity: 1})
	}
	b, err := svc.Basket(ctx, req)
	if err != nil {
		return b, fmt.Errorf("basket of %d lines: %w", n, err)
	}
	if len(b.Items) != n {
		return b, fmt.Errorf("basket of %d lines answered %d", n, len(b.Items))
	}
	return b, nil
}

func drain(svc *quoteflow.Service) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := svc.Drain(ctx); err != nil {
		return fmt.Errorf("draining the compensation queue: %w", err)
	}
	return nil
}

// reply answers one call; attempt counts the calls with this X-Request-ID to this supplier, from 1.
type reply func(r *http.Request, attempt int) (*http.Response, error)

// call is one request as the fake saw it.
type call struct {
	supplier, id string
	attempt      int
	arrived      time.Time
	cancelled    bool // it ended because its context was cancelled
}

// fake plays the three suppliers: atlas and cedar always answer, boreal
// as its reply says. Every answer waits latency first, honouring the context.
type fake struct {
	latency time.Duration
	replies map[string]reply

	mu       sync.Mutex
	seen     []*call
	running  int
	maxAtAll int
}

func newFake(latency time.Duration, replies map[string]reply) *fake {
	return &fake{latency: latency, replies: replies}
}

func (f *fake) RoundTrip(r *http.Request) (*http.Response, error) {
	c := f.enter(path.Base(r.URL.Path), r.Header.Get("X-Request-ID"))
	defer f.leave()
	resp, err := f.answer(r, c)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		f.mu.Lock()
		c.cancelled = true
		f.mu.Unlock()
	}
	return resp, err
}

func (f *fake) answer(r *http.Request, c *call) (*http.Response, error) {
	if err := pause(r.Context(), f.latency); err != nil {
		return nil, err
	}
	if rep := f.replies[c.supplier]; rep != nil {
		return rep(r, c.attempt)
	}
	return normal(r, c.attempt)
}

func (f *fake) enter(supplier, id string) *call {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &call{supplier: supplier, id: id, arrived: time.Now(), attempt: 1}
	for _, prev := range f.seen {
		if prev.supplier == supplier && prev.id == id {
			c.attempt++
		}
	}
	f.seen = append(f.seen, c)
	f.running++
	f.maxAtAll = max(f.maxAtAll, f.running)
	return c
}

func (f *fake) leave() {
	f.mu.Lock()
	f.running--
	f.mu.Unlock()
}

func (f *fake) peak() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxAtAll
}

func (f *fake) inFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running
}

func (f *fake) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

func (f *fake) calls(supplier string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.seen {
		if c.supplier == supplier {
			n++
		}
	}
	return n
}

func (f *fake) cancelled(supplier string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.seen {
		if c.supplier == supplier && c.cancelled {
			n++
		}
	}
	return n
}

// arrivalsOf lists supplier's calls as "id#attempt at offset" for messages.
func (f *fake) arrivalsOf(supplier string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.seen {
		if c.supplier == supplier {
			out = append(out, fmt.Sprintf("%.8s#%d", c.id, c.attempt))
		}
	}
	return out
}

// retryGaps is, for each second call of a request ID to supplier, how long
// after the first it arrived.
func (f *fake) retryGaps(supplier string) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := map[string]time.Time{}
	var gaps []time.Duration
	for _, c := range f.seen {
		if c.supplier != supplier {
			continue
		}
		switch c.attempt {
		case 1:
			first[c.id] = c.arrived
		case 2:
			gaps = append(gaps, c.arrived.Sub(first[c.id]))
		}
	}
	return gaps
}

// outage answers 503 while it is on, normally after.
type outage struct {
	mu sync.Mutex
	on bool
}

func (o *outage) set(on bool) {
	o.mu.Lock()
	o.on = on
	o.mu.Unlock()
}

func (o *outage) reply(r *http.Request, attempt int) (*http.Response, error) {
	o.mu.Lock()
	on := o.on
	o.mu.Unlock()
	if on {
		return status(http.StatusServiceUnavailable)(r, attempt)
	}
	return normal(r, attempt)
}

// holdFor keeps a call for d, unless its context ends first.
func holdFor(d time.Duration) reply {
	return func(r *http.Request, attempt int) (*http.Response, error) {
		if err := pause(r.Context(), d); err != nil {
			return nil, err
		}
		return normal(r, attempt)
	}
}

// rateLimitedOnce answers the first call of each request ID 429 with
// Retry-After-Ms d (and Retry-After in whole seconds, rounded up), then normally.
func rateLimitedOnce(d time.Duration) reply {
	return func(r *http.Request, attempt int) (*http.Response, error) {
		if attempt > 1 {
			return normal(r, attempt)
		}
		resp := respond(r, http.StatusTooManyRequests, `{"error":"rate_limited"}`)
		resp.Header.Set("Retry-After", fmt.Sprint(int((d+time.Second-1)/time.Second)))
		resp.Header.Set("Retry-After-Ms", fmt.Sprint(d.Milliseconds()))
		return resp, nil
	}
}

// failsOnce answers the first call of each request ID 503, then normally.
func failsOnce(r *http.Request, attempt int) (*http.Response, error) {
	if attempt == 1 {
		return status(http.StatusServiceUnavailable)(r, attempt)
	}
	return normal(r, attempt)
}

func status(code int) reply {
	return func(r *http.Request, _ int) (*http.Response, error) {
		return respond(r, code, `{"error":"fake"}`), nil
	}
}

func bodyReply(s string) reply {
	return func(r *http.Request, _ int) (*http.Response, error) { return respond(r, http.StatusOK, s), nil }
}

// prices: at quantity 1 every supplier's stock suffices, so a complete line has 3 quotes.
var prices = map[string][3]int{ // unit, shipping, stock
	"atlas":  {1299, 500, 10},
	"boreal": {1199, 450, 8},
	"cedar":  {999, 300, 1},
}

func normal(r *http.Request, _ int) (*http.Response, error) {
	s := path.Base(r.URL.Path)
	p := prices[s]
	return respond(r, http.StatusOK, fmt.Sprintf(`{"supplier":%q,"sku":%q,"unit_cents":%d,"shipping_cents":%d,"stock":%d}`,
		s, r.URL.Query().Get("sku"), p[0], p[1], p[2])), nil
}

func respond(r *http.Request, code int, body string) *http.Response {
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(bytes.NewBufferString(body)),
		Request: r,
	}
}

// pause waits d, or until ctx ends (then its error).
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

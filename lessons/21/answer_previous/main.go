// Reference answer to E20 (lesson 20): checkpoint 20's adaptive limit grows
// while latency stays at its baseline and shrinks when it rises (a queue) or
// calls fail, never below its minimum (a limit of 0 never asks again) and
// never above its maximum; a supplier's 404s and invalid data are answers,
// never failures; each supplier's limit is its own; the line in front of a
// limit serves the more important call first, pushes the least important
// out when full, and sheds a waiter at its target or when its deadline
// leaves no time for the call.
//
// The limit and the line are package adaptive, usable alone: the checks
// feed a Limit the samples of a latency series of ours and hold a Limiter's
// slots themselves. Where the service decides (which answers are failures,
// whose limit a call takes) a quoteflow.Service runs in this process on a
// fake supplier (an http.RoundTripper) that answers as each check says, and
// /api/limits's numbers (Service.LimitStats) are read. Every wait is
// bounded: a line that never sheds fails its check instead of hanging it.
//
// Run it:  go run ./lessons/21/answer_previous
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/quoteflow"
)

func main() {
	checks := []struct {
		name string
		run  func() (string, error)
	}{
		{"latency", followsLatency},
		{"failures", failuresBackOffToTheMinimum},
		{"maximum", neverAboveTheMaximum},
		{"client errors", clientErrorsAreAnswers},
		{"priority", importantFirst},
		{"shedding", shedEarly},
		{"own limits", ownLimits},
	}
	var said []string
	for _, c := range checks {
		what, err := bounded(c.run)
		if err != nil {
			fmt.Printf("E20 failed (%s): %v\n", c.name, err)
			os.Exit(1)
		}
		said = append(said, what)
	}
	fmt.Printf("E20 passed: %s\n", strings.Join(said, "; "))
}

// checkBound is the longest a check may take: one that does not finish (a
// waiter never shed, a lock never given back) fails instead of hanging.
const checkBound = 10 * time.Second

func bounded(run func() (string, error)) (string, error) {
	type result struct {
		what string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		what, err := run()
		done <- result{what, err}
	}()
	t := time.NewTimer(checkBound)
	defer t.Stop()
	select {
	case r := <-done:
		return r.what, r.err
	case <-t.C:
		return "", fmt.Errorf("the check did not finish within %v", checkBound)
	}
}

// busy feeds l one window of rtt samples, each with the whole limit in
// flight (a busy supplier), drops of them failed, and returns the limit.
func busy(l *adaptive.Limit, rtt time.Duration, drops int) int {
	n := l.Config().Window
	for i := range n {
		o := adaptive.Success
		if i < drops {
			o = adaptive.Dropped
		}
		l.Sample(rtt, l.Current(), o)
	}
	return l.Current()
}

// 1. The limit follows latency: at a steady 20 ms it grows; when the same
// calls take four times as long (a queue inside the supplier), and no call
// fails, it must shrink.
func followsLatency() (string, error) {
	l, err := adaptive.New(adaptive.Config{Initial: 4, Min: 1, Max: 16, Window: 5})
	if err != nil {
		return "", err
	}
	for range 20 {
		busy(l, 20*time.Millisecond, 0)
	}
	grown := l.Current()
	if grown <= 4 {
		return "", fmt.Errorf("20 windows at a steady 20 ms, every slot busy: the limit is %d, want above its start, 4 (it grows while latency stays at its baseline)", grown)
	}
	for range 6 {
		busy(l, 80*time.Millisecond, 0)
	}
	if got := l.Current(); got >= grown {
		return "", fmt.Errorf("6 windows at 80 ms (four times the baseline: a queue) after growing to %d, no call failed: the limit is %d, want below %d (latency is the signal of a queue; a limit that waits for errors lets every call wait in it)", grown, got, grown)
	}
	return fmt.Sprintf("grew 4 -> %d at 20 ms, shrank to %d at 80 ms", grown, l.Current()), nil
}

// 2. Failures back the limit off, down to its minimum and never below: a
// limit of 0 never asks again, and a supplier that is back is never seen.
func failuresBackOffToTheMinimum() (string, error) {
	l, err := adaptive.New(adaptive.Config{Initial: 8, Min: 2, Max: 8, Window: 5})
	if err != nil {
		return "", err
	}
	if got := busy(l, 20*time.Millisecond, 1); got >= 8 {
		return "", fmt.Errorf("a window of 5 calls at 20 ms, one of them failed, from a limit of 8: the limit is %d, want below 8 (a 503 or a timeout backs it off)", got)
	}
	for range 40 {
		busy(l, 20*time.Millisecond, 1)
	}
	if got := l.Current(); got != 2 {
		return "", fmt.Errorf("41 windows with a failed call each, with a minimum of 2: the limit is %d, want 2", got)
	}
	lim := adaptive.NewLimiter(l, adaptive.Queue{Max: 1, Target: 10 * time.Millisecond})
	var held []*adaptive.Token
	for range 3 {
		if t, ok := lim.TryAcquire(adaptive.High); ok {
			held = append(held, t)
		}
	}
	for _, t := range held {
		t.Done(adaptive.Ignore)
	}
	if len(held) != 2 {
		return "", fmt.Errorf("a Limiter at the minimum of 2 let %d of 3 calls through at once, want 2 (the minimum still asks)", len(held))
	}
	return "backed off to its minimum 2, still 2 calls at once", nil
}

// 3. Never above the maximum: however long latency stays at its baseline,
// the limit stops at Max, and its Limiter lets no more through at once.
func neverAboveTheMaximum() (string, error) {
	l, err := adaptive.New(adaptive.Config{Initial: 2, Min: 1, Max: 6, Window: 5})
	if err != nil {
		return "", err
	}
	top := 0
	for range 40 {
		top = max(top, busy(l, 20*time.Millisecond, 0))
	}
	if top != 6 {
		return "", fmt.Errorf("40 windows at a steady 20 ms with a maximum of 6: the limit reached %d, want 6 and no more", top)
	}
	lim := adaptive.NewLimiter(l, adaptive.Queue{Max: 1, Target: 10 * time.Millisecond})
	n := 0
	var held []*adaptive.Token
	for range 10 {
		if t, ok := lim.TryAcquire(adaptive.High); ok {
			n++
			held = append(held, t)
		}
	}
	for _, t := range held {
		t.Done(adaptive.Ignore)
	}
	if n != 6 {
		return "", fmt.Errorf("a Limiter at the maximum of 6 let %d of 10 calls through at once, want 6", n)
	}
	return "stopped at its maximum 6, 6 calls at once", nil
}

// fake is the suppliers: each answers after delay with what answer says
// (a status, or 0: a quote; bad: a quote with no price).
type fake struct {
	delay  time.Duration
	answer map[string]reply
	mu     sync.Mutex
	calls  map[string]int
}

type reply struct {
	status int
	bad    bool
	hang   bool // until the call's context ends: a timeout
	broken bool // a transport error
}

func (f *fake) RoundTrip(r *http.Request) (*http.Response, error) {
	s := path.Base(r.URL.Path)
	f.mu.Lock()
	f.calls[s]++
	f.mu.Unlock()
	t := time.NewTimer(f.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	a := f.answer[s]
	if a.hang {
		<-r.Context().Done()
		return nil, r.Context().Err()
	}
	if a.broken {
		return nil, errors.New("connection reset by the fake")
	}
	if a.status != 0 {
		return &http.Response{StatusCode: a.status, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	}
	body := fmt.Sprintf(`{"supplier":%q,"sku":%q,"unit_cents":1000,"shipping_cents":100,"stock":50}`, s, r.URL.Query().Get("sku"))
	if a.bad {
		body = fmt.Sprintf(`{"supplier":%q}`, s)
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

func (f *fake) count(s string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[s]
}

// service is a quoteflow.Service on f with adaptive limits of ours (from 4,
// within [1, 12], a window of 4 calls): no hedges, no breakers, no stale
// answers, so that a call of ours is one call of the service and every
// failure reaches the limit.
func service(f *fake) (*quoteflow.Service, error) { return serviceOf(f, 2*time.Second) }

func serviceOf(f *fake, budget time.Duration) (*quoteflow.Service, error) {
	return quoteflow.New(quoteflow.Config{Transport: f, NoHedge: true, NoBreaker: true, MaxStale: -1, InboundLimit: 100,
		Budget: budget, Adaptive: &adaptive.Config{Initial: 4, Min: 1, Max: 12, Window: 4}})
}

// rounds sends n rounds of 4 quotes at once, each bounded.
func rounds(svc *quoteflow.Service, n int) error {
	for range n {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range 4 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_, errs[i] = svc.Quote(ctx, quoteflow.QuoteRequest{SKU: "KB-001", Quantity: 1, Scenario: "normal"})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("a quote: %v", err)
			}
		}
	}
	return nil
}

// 4. A 404 and invalid data are the supplier's answers: the fault is the
// caller's or the data's, and the supplier answered at its baseline. Its
// limit must not shrink for them; a 503, a 500, a transport error and a
// timeout must shrink it.
func clientErrorsAreAnswers() (string, error) {
	f := &fake{delay: 20 * time.Millisecond, calls: map[string]int{},
		answer: map[string]reply{"boreal": {status: http.StatusNotFound}, "cedar": {bad: true}}}
	svc, err := service(f)
	if err != nil {
		return "", err
	}
	if err := rounds(svc, 8); err != nil {
		return "", err
	}
	st := svc.LimitStats()
	for _, s := range []string{"boreal", "cedar"} {
		lim := st.Suppliers[s]
		for _, h := range lim.History {
			if h.Reason == "backoff" {
				return "", fmt.Errorf("%s answered %d calls with %s at 20 ms: its limit backed off (%+v), want none: a 404 or invalid data is an answer, not a failure under load",
					s, f.count(s), map[string]string{"boreal": "404", "cedar": "invalid data"}[s], h)
			}
		}
		if lim.Limit < 4 {
			return "", fmt.Errorf("%s answered %d calls with %s at 20 ms: its limit fell to %d from 4, want no lower", s, f.count(s),
				map[string]string{"boreal": "404", "cedar": "invalid data"}[s], lim.Limit)
		}
	}
	f.answer = map[string]reply{"boreal": {status: http.StatusServiceUnavailable}}
	f2 := &fake{delay: 20 * time.Millisecond, calls: map[string]int{}, answer: f.answer}
	svc2, err := service(f2)
	if err != nil {
		return "", err
	}
	if err := rounds(svc2, 4); err != nil {
		return "", err
	}
	if got := svc2.LimitStats().Suppliers["boreal"].Limit; got >= 4 {
		return "", fmt.Errorf("boreal answered %d calls 503: its limit is %d, want below its start, 4", f2.count("boreal"), got)
	}
	// Every other failure under load shrinks it too: a 500, a transport
	// error, a timeout (a call that hangs past the quote's 300 ms).
	f3 := &fake{delay: 20 * time.Millisecond, calls: map[string]int{},
		answer: map[string]reply{"atlas": {status: http.StatusInternalServerError}, "boreal": {broken: true}, "cedar": {hang: true}}}
	svc3, err := serviceOf(f3, 300*time.Millisecond)
	if err != nil {
		return "", err
	}
	if err := rounds(svc3, 3); err != nil {
		return "", err
	}
	st3 := svc3.LimitStats()
	for s, what := range map[string]string{"atlas": "500", "boreal": "a transport error", "cedar": "a hang past the quote's deadline (a timeout)"} {
		if got := st3.Suppliers[s].Limit; got >= 4 {
			return "", fmt.Errorf("%s answered %d calls with %s: its limit is %d, want below its start, 4 (a failure under load)", s, f3.count(s), what, got)
		}
	}
	return fmt.Sprintf("404s and invalid data kept their limits (boreal %d, cedar %d); a 503, a 500, a transport error and a timeout shrank theirs",
		st.Suppliers["boreal"].Limit, st.Suppliers["cedar"].Limit), nil
}

// waiter is a call waiting in a Limiter's line.
type waiter struct {
	tok *adaptive.Token
	err error
	at  time.Duration // when Acquire returned, since the check began
}

func acquire(ctx context.Context, lim *adaptive.Limiter, p adaptive.Priority, start time.Time) chan waiter {
	c := make(chan waiter, 1)
	go func() {
		t, err := lim.Acquire(ctx, p)
		c <- waiter{t, err, time.Since(start)}
	}()
	return c
}

// waitFor waits, at most 2 s, until n calls wait in lim's line.
func waitFor(lim *adaptive.Limiter, n int) error {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if lim.Stats().Waiting == n {
			return nil
		}
	}
	return fmt.Errorf("%d calls wait in line after 2 s, want %d", lim.Stats().Waiting, n)
}

// ready is the waiter's answer if it came, or false.
func ready(c chan waiter, within time.Duration) (waiter, bool) {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case w := <-c:
		return w, true
	case <-t.C:
		return waiter{}, false
	}
}

// 5. The line serves the more important call first: a single quote's call
// (High) before a basket line's (Low) that waited longer; when the line is
// full, a High call takes the place of the newest Low one, which is shed
// at once, and a Low newcomer is shed itself.
func importantFirst() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	start := time.Now()
	lim := adaptive.NewLimiter(adaptive.Fixed(2), adaptive.Queue{Max: 3, Target: 5 * time.Second})
	a, _ := lim.TryAcquire(adaptive.Low)
	b, _ := lim.TryAcquire(adaptive.Low)
	if a == nil || b == nil {
		return "", errors.New("a Limiter of 2 with nothing in flight refused a call")
	}
	low1 := acquire(ctx, lim, adaptive.Low, start)
	if err := waitFor(lim, 1); err != nil {
		return "", err
	}
	high := acquire(ctx, lim, adaptive.High, start)
	if err := waitFor(lim, 2); err != nil {
		return "", err
	}
	a.Done(adaptive.Ignore)
	w, ok := ready(high, time.Second)
	if !ok || w.err != nil {
		return "", fmt.Errorf("a slot freed with a basket line (low) waiting and a single quote (high) after it: the quote got %v (answered: %v), want the slot (the more important first, not the older)", w.err, ok)
	}
	if w, ok := ready(low1, 20*time.Millisecond); ok {
		return "", fmt.Errorf("the basket line waiting before the quote got %v as well, want it still waiting", w.err)
	}
	high2 := acquire(ctx, lim, adaptive.High, start)
	high3 := acquire(ctx, lim, adaptive.High, start)
	if err := waitFor(lim, 3); err != nil {
		return "", err
	}
	high4 := acquire(ctx, lim, adaptive.High, start)
	if w, ok := ready(low1, 500*time.Millisecond); !ok || !errors.Is(w.err, adaptive.ErrShed) {
		return "", fmt.Errorf("a quote came to a full line of a basket line and 2 quotes: the basket line got %v (answered: %v), want adaptive.ErrShed at once (the quote takes its place)", w.err, ok)
	}
	if err := waitFor(lim, 3); err != nil {
		return "", fmt.Errorf("after a quote took a basket line's place in a full line of 3: %v", err)
	}
	low4 := acquire(ctx, lim, adaptive.Low, start)
	if w, ok := ready(low4, 500*time.Millisecond); !ok || !errors.Is(w.err, adaptive.ErrShed) {
		return "", fmt.Errorf("a basket line came to a full line of 3 quotes: %v (answered: %v), want adaptive.ErrShed at once", w.err, ok)
	}
	// Let everyone go: the slots come back, the quotes pass in order.
	b.Done(adaptive.Ignore)
	w.tok.Done(adaptive.Ignore)
	for _, c := range []chan waiter{high2, high3, high4} {
		w, ok := ready(c, time.Second)
		if !ok || w.err != nil {
			return "", fmt.Errorf("a waiting quote was not let through when slots came back: %v (answered: %v)", w.err, ok)
		}
		w.tok.Done(adaptive.Ignore)
	}
	return "a quote before an older basket line, a quote took a basket line's place in a full line", nil
}

// 6. Shed early: a waiter leaves the line at its target, never waits past
// its deadline less the time a call needs, and a newcomer to a full line of
// calls as important is refused at once.
func shedEarly() (string, error) {
	lim := adaptive.NewLimiter(adaptive.Fixed(1), adaptive.Queue{Max: 2, Target: 200 * time.Millisecond, Reserve: 100 * time.Millisecond})
	held, ok := lim.TryAcquire(adaptive.High)
	if !ok {
		return "", errors.New("a Limiter of 1 with nothing in flight refused a call")
	}
	defer func() { held.Done(adaptive.Ignore) }()
	bg, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	start := time.Now()
	w, ok := ready(acquire(bg, lim, adaptive.High, start), 3*time.Second)
	if !ok || !errors.Is(w.err, adaptive.ErrShed) || w.at < 200*time.Millisecond || w.at > time.Second {
		return "", fmt.Errorf("a call waiting for a slot never freed, with 8 s of deadline: %v after %v (answered: %v), want adaptive.ErrShed at its 200 ms target", w.err, w.at, ok)
	}
	held.Done(adaptive.Ignore)
	if t, ok := lim.TryAcquire(adaptive.High); !ok || lim.Stats().Waiting != 0 {
		return "", fmt.Errorf("the only slot given back after a waiter was shed: a new call let through %v, %d waiting; want through, none waiting (a shed waiter leaves the line)", ok, lim.Stats().Waiting)
	} else {
		held = t
	}
	short, cancel2 := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel2()
	lim2 := adaptive.NewLimiter(adaptive.Fixed(1), adaptive.Queue{Max: 2, Target: 5 * time.Second, Reserve: 400 * time.Millisecond})
	h2, _ := lim2.TryAcquire(adaptive.High)
	defer h2.Done(adaptive.Ignore)
	start = time.Now()
	w, ok = ready(acquire(short, lim2, adaptive.High, start), 3*time.Second)
	if !ok || !errors.Is(w.err, adaptive.ErrShed) || w.at > 1100*time.Millisecond {
		return "", fmt.Errorf("a call with 1.2 s of deadline, a call needing 400 ms (Reserve), a 5 s target: %v after %v (answered: %v), want adaptive.ErrShed by 800 ms (nothing waits past the point where its call could still meet its deadline)", w.err, w.at, ok)
	}
	start = time.Now()
	one, two := acquire(bg, lim2, adaptive.High, start), acquire(bg, lim2, adaptive.High, start)
	if err := waitFor(lim2, 2); err != nil {
		return "", err
	}
	w, ok = ready(acquire(bg, lim2, adaptive.High, start), time.Second)
	if !ok || !errors.Is(w.err, adaptive.ErrShed) || w.at > 500*time.Millisecond {
		return "", fmt.Errorf("a call came to a full line of 2 as important: %v after %v (answered: %v), want adaptive.ErrShed at once (the line is bounded)", w.err, w.at, ok)
	}
	cancel()
	for _, c := range []chan waiter{one, two} {
		w, ok := ready(c, time.Second)
		if w.tok != nil {
			w.tok.Done(adaptive.Ignore)
		}
		if !ok || !errors.Is(w.err, context.Canceled) {
			return "", fmt.Errorf("a waiter whose context was cancelled: %v (answered: %v), want context.Canceled at once", w.err, ok)
		}
	}
	if n := lim2.Stats().Waiting; n != 0 {
		return "", fmt.Errorf("%d waiters in line after every one left, want 0", n)
	}
	return "shed at its 200 ms target, before its deadline less 400 ms, at once at a full line; a cancelled waiter left", nil
}

// 7. Each supplier's limit is its own: boreal's 503s back boreal's limit
// off to its minimum while atlas and cedar, answering at their baseline,
// grow theirs.
func ownLimits() (string, error) {
	f := &fake{delay: 20 * time.Millisecond, calls: map[string]int{},
		answer: map[string]reply{"boreal": {status: http.StatusServiceUnavailable}}}
	svc, err := service(f)
	if err != nil {
		return "", err
	}
	if err := rounds(svc, 8); err != nil {
		return "", err
	}
	st := svc.LimitStats()
	if got := st.Suppliers["boreal"].Limit; got != 1 {
		return "", fmt.Errorf("boreal answered %d calls 503: its limit is %d, want its minimum, 1", f.count("boreal"), got)
	}
	for _, s := range []string{"atlas", "cedar"} {
		if got := st.Suppliers[s].Limit; got <= 4 {
			return "", fmt.Errorf("%s answered %d calls at a steady 20 ms while boreal failed: its limit is %d, want above its start, 4 (boreal's failures are not %s's)", s, f.count(s), got, s)
		}
	}
	return fmt.Sprintf("boreal's 503s: boreal at 1, atlas %d, cedar %d", st.Suppliers["atlas"].Limit, st.Suppliers["cedar"].Limit), nil
}

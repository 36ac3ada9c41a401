// Command compare runs lesson 18's experiment in one process: quotes of
// three suppliers against the provider lab's `tail` scenario (and boreal
// alone at `slow`, after 100 quotes at tail), made four ways — no hedge,
// checkpoint 18's hedge package, failsafe-go's hedge policy and budget, and
// the checkpoint's hedge with its knobs set wrong — through one limiter of 6
// slots, and prints for each the answer's latency percentiles next to what
// the provider counted.
//
// It starts its own provider lab on a free loopback port (the same code as
// `lab provider`, seeded with --seed), so a run needs nothing else:
//
//	go run ./lessons/18/compare
//	go run ./lessons/18/compare --quotes 100 --only tail
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	"quoteflowlab.dev/checkpoints/18/hedge"
	"quoteflowlab.dev/provider"
)

// limit is the outbound limit every supplier call holds a slot of, as
// QuoteFlow's default.
const limit = 6

var suppliers = []string{"atlas", "boreal", "cedar"}

func main() {
	quotes := flag.Int("quotes", 300, "quotes per run at tail (each 3 supplier calls)")
	slowQuotes := flag.Int("slow-quotes", 100, "quotes per run at slow (boreal only)")
	workers := flag.Int("concurrency", 2, "quotes in flight at once")
	deadline := flag.Duration("deadline", 800*time.Millisecond, "one quote's deadline (QuoteFlow's default budget)")
	seed := flag.Uint64("seed", provider.DefaultSeed, "seed of the tail scenario's draws")
	only := flag.String("only", "", "run only the runs whose name contains this")
	flag.Parse()
	if *quotes < 1 || *slowQuotes < 1 || *workers < 1 || *deadline <= 0 {
		fmt.Fprintln(os.Stderr, "compare: --quotes, --slow-quotes and --concurrency must be at least 1, --deadline positive")
		os.Exit(2)
	}

	p := provider.New(provider.Options{LatencyScale: 1, Seed: *seed})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: p.Routes(), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	fmt.Printf("a call straggles with probability %.0f %%: a quote of 3 calls waits for one %.1f %% of the time, a 50-line basket (150 calls) %.1f %%\n\n",
		0.02*100, (1-math.Pow(0.98, 3))*100, (1-math.Pow(0.98, 150))*100)

	runs := []run{
		{name: "no hedge", scenario: "tail", way: plain},
		{name: "checkpoint hedge", scenario: "tail", way: checkpoint(hedge.DelayConfig{}, hedge.BudgetConfig{})},
		{name: "failsafe-go hedge", scenario: "tail", way: failsafeWay()},
		{name: "hedge at 5 ms", scenario: "tail", way: checkpoint(hedge.DelayConfig{Floor: 5 * time.Millisecond, Ceiling: 5 * time.Millisecond}, hedge.BudgetConfig{})},
		{name: "hedge at 5 ms, no budget", scenario: "tail", way: checkpoint(hedge.DelayConfig{Floor: 5 * time.Millisecond, Ceiling: 5 * time.Millisecond}, unlimited)},
		{name: "hedge at 1 s", scenario: "tail", way: checkpoint(hedge.DelayConfig{Floor: time.Second, Ceiling: time.Second}, hedge.BudgetConfig{})},
		{name: "hedge outside the limiter", scenario: "tail", way: outside(hedge.DelayConfig{Floor: 5 * time.Millisecond, Ceiling: 5 * time.Millisecond}, unlimited)},
		{name: "hedge without cancel", scenario: "tail", way: uncancelled(hedge.DelayConfig{}, hedge.BudgetConfig{})},
		{name: "slow: checkpoint hedge", scenario: "slow", way: checkpoint(hedge.DelayConfig{}, hedge.BudgetConfig{})},
		{name: "slow: no budget", scenario: "slow", way: checkpoint(hedge.DelayConfig{}, unlimited)},
		{name: "slow: failsafe-go hedge", scenario: "slow", way: failsafeWay()},
	}
	fmt.Printf("%-26s %6s %6s %6s %6s %6s  %6s %6s %7s %6s %10s %10s %6s\n",
		"run", "quotes", "p50", "p95", "p99", "max", "failed", "calls", "extra", "hedged", "lost_canc.", "loser_runs", "max_active")
	for _, r := range runs {
		if *only != "" && !strings.Contains(r.name, *only) {
			continue
		}
		n := *quotes
		if r.scenario == "slow" {
			n = *slowQuotes
		}
		res := r.measure(p, base, n, *workers, *deadline)
		fmt.Println(res)
	}
	fmt.Println("\nms of the quote's answer; calls, hedged, lost_canc. (a hedged pair's loser whose caller hung up after its sibling answered) and max_active as the provider counted them; extra = calls beyond one per supplier asked; loser_runs = the longest ms a hedged pair's loser ran on after its sibling answered, from the provider's /stats/requests")
}

// warmup is how many quotes at tail go before a run at slow.
const warmup = 100

// unlimited is a budget that never runs out: the no_budget build.
var unlimited = hedge.BudgetConfig{Ratio: 1, Cap: 1e9}

// A way makes one supplier call, hedged or not, through the limiter.
type way func() func(ctx context.Context, lim *limiter, get getter, supplier string) error

// getter makes one GET of a price, with the quote's request ID and attempt.
type getter func(ctx context.Context, supplier string, attempt int) error

type run struct {
	name, scenario string
	way            way
}

type result struct {
	name                 string
	quotes, failed       int
	p50, p95, p99, max   time.Duration
	calls, asked, hedged int64
	lost, maxActive      int64
	after                time.Duration // the longest a loser ran after its sibling answered
}

func (r result) String() string {
	extra := float64(r.calls-r.asked) / float64(r.asked) * 100
	return fmt.Sprintf("%-26s %6d %6d %6d %6d %6d  %6d %6d %6.1f%% %6d %10d %10d %6d",
		r.name, r.quotes, r.p50.Milliseconds(), r.p95.Milliseconds(), r.p99.Milliseconds(), r.max.Milliseconds(),
		r.failed, r.calls, extra, r.hedged, r.lost, r.after.Milliseconds(), r.maxActive)
}

func (r run) measure(p *provider.Provider, base string, n, workers int, deadline time.Duration) result {
	p.Reset()
	call := r.way()
	lim := newLimiter(limit)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	var seq atomic.Int64
	var hedgedIDs sync.Map // "id supplier" of every hedged call
	var mu sync.Mutex
	var lat []time.Duration
	failed := 0
	send := func(n int, scenario string, sups []string) {
		next := make(chan int)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range next {
					id := fmt.Sprintf("cmp-%d", seq.Add(1))
					get := func(ctx context.Context, supplier string, attempt int) error {
						if attempt == 2 {
							hedgedIDs.Store(id+" "+supplier, true)
						}
						return fetch(ctx, client, base, scenario, id, supplier, attempt)
					}
					start := time.Now()
					ctx, cancel := context.WithTimeout(context.Background(), deadline)
					errs := make([]error, len(sups))
					var qw sync.WaitGroup
					for i, s := range sups {
						qw.Go(func() { errs[i] = call(ctx, lim, get, s) })
					}
					qw.Wait()
					cancel()
					el := time.Since(start)
					mu.Lock()
					lat = append(lat, el)
					if errors.Join(errs...) != nil {
						failed++
					}
					mu.Unlock()
				}
			})
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	if r.scenario == "slow" {
		// The service was running before the supplier slowed down: the
		// delays have learnt the fast calls' p95. Then the counters start.
		send(warmup, "tail", suppliers)
		p.Reset()
		hedgedIDs.Clear()
		lat, failed = nil, 0
		send(n, "slow", []string{"boreal"}) // slow slows boreal only
	} else {
		send(n, r.scenario, suppliers)
	}
	sups := len(suppliers)
	if r.scenario == "slow" {
		sups = 1
	}
	// The losers' handlers end as their connections close: give the
	// provider a moment to count the last of them.
	for end := time.Now().Add(3 * time.Second); p.Snapshot().Active > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	st := p.Snapshot()
	after := time.Duration(0)
	hedgedIDs.Range(func(k, _ any) bool {
		id, supplier, _ := strings.Cut(k.(string), " ")
		after = max(after, loserAfter(client, base, id, supplier))
		return true
	})
	slices.Sort(lat)
	q := func(f float64) time.Duration { return lat[min(len(lat)-1, int(math.Ceil(f*float64(len(lat))))-1)] }
	return result{
		name: r.name, quotes: n, failed: failed,
		p50: q(0.50), p95: q(0.95), p99: q(0.99), max: lat[len(lat)-1],
		calls: st.Total, asked: int64(n * sups), hedged: st.Hedged,
		lost: st.LostCancelled, maxActive: st.MaxActive, after: after,
	}
}

// loserAfter reads the provider's log of id at supplier and returns how long
// after the first 200 the other copy ended (0 without both).
func loserAfter(client *http.Client, base, id, supplier string) time.Duration {
	resp, err := client.Get(base + "/stats/requests?id=" + url.QueryEscape(id))
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	var rs struct {
		Log map[string][]struct {
			ArrivalMs  float64 `json:"arrival_ms"`
			DurationMs float64 `json:"duration_ms"`
			Status     int     `json:"status"`
		} `json:"log"`
	}
	if json.NewDecoder(resp.Body).Decode(&rs) != nil {
		return 0
	}
	entries := rs.Log[supplier]
	won := math.Inf(1)
	for _, e := range entries {
		if e.Status == http.StatusOK {
			won = min(won, e.ArrivalMs+e.DurationMs)
		}
	}
	after := 0.0
	for _, e := range entries {
		if end := e.ArrivalMs + e.DurationMs; end > won {
			after = max(after, end-won)
		}
	}
	return time.Duration(after * float64(time.Millisecond))
}

// fetch is one GET of a price: the same X-Request-ID for both copies, the
// copy's number in X-Attempt.
func fetch(ctx context.Context, client *http.Client, base, scenario, id, supplier string, attempt int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		base+"/quotes/"+supplier+"?sku=KB-001&scenario="+scenario, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Request-ID", id)
	req.Header.Set("X-Attempt", fmt.Sprint(attempt))
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", supplier, resp.Status)
	}
	return nil
}

// plain is a call without a hedge: one slot, one copy.
func plain() func(ctx context.Context, lim *limiter, get getter, supplier string) error {
	return func(ctx context.Context, lim *limiter, get getter, supplier string) error {
		if err := lim.Acquire(ctx); err != nil {
			return err
		}
		defer lim.Release()
		return get(ctx, supplier, 1)
	}
}

// checkpoint hedges with checkpoint 18's hedge.Do: the first copy waits for
// a slot; the hedge takes one only if it is free now, and a token.
func checkpoint(dc hedge.DelayConfig, bc hedge.BudgetConfig) way {
	return func() func(ctx context.Context, lim *limiter, get getter, supplier string) error {
		pol := &hedge.Policy{Limiter: nil, Budget: hedge.NewBudget(bc), Delays: hedge.NewDelays(dc)}
		return func(ctx context.Context, lim *limiter, get getter, supplier string) error {
			if err := lim.Acquire(ctx); err != nil {
				return err
			}
			p := *pol
			p.Limiter = lim
			_, _, err := hedge.Do(ctx, &p, supplier, func(ctx context.Context, attempt int) (struct{}, error) {
				if attempt == 1 {
					defer lim.Release() // the first copy's slot, taken above
				}
				return struct{}{}, get(ctx, supplier, attempt)
			})
			return err
		}
	}
}

// outside is the checkpoint's hedge whose copies take no slot of the
// limiter: the hedge_outside_limiter bug (shown with an early delay and no
// budget, where it shows most).
func outside(dc hedge.DelayConfig, bc hedge.BudgetConfig) way {
	return func() func(ctx context.Context, lim *limiter, get getter, supplier string) error {
		pol := &hedge.Policy{Limiter: noLimit{}, Budget: hedge.NewBudget(bc), Delays: hedge.NewDelays(dc)}
		return func(ctx context.Context, lim *limiter, get getter, supplier string) error {
			if err := lim.Acquire(ctx); err != nil {
				return err
			}
			_, _, err := hedge.Do(ctx, pol, supplier, func(ctx context.Context, attempt int) (struct{}, error) {
				if attempt == 1 {
					defer lim.Release()
				}
				return struct{}{}, get(ctx, supplier, attempt)
			})
			return err
		}
	}
}

// noLimit grants every slot asked for.
type noLimit struct{}

func (noLimit) TryAcquire(context.Context) (bool, error) { return true, nil }
func (noLimit) Release()                                 {}

// uncancelled is the checkpoint's hedge with a call that gives up waiting
// when its context is cancelled but leaves its request running: the loser
// runs on at the supplier, after its slot came back (the
// hedge_without_cancel bug).
func uncancelled(dc hedge.DelayConfig, bc hedge.BudgetConfig) way {
	inner := checkpoint(dc, bc)
	return func() func(ctx context.Context, lim *limiter, get getter, supplier string) error {
		call := inner()
		return func(ctx context.Context, lim *limiter, get getter, supplier string) error {
			deaf := func(ctx context.Context, supplier string, attempt int) error {
				done := make(chan error, 1)
				go func() { done <- get(context.WithoutCancel(ctx), supplier, attempt) }()
				select {
				case err := <-done:
					return err
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return call(ctx, lim, deaf, supplier)
		}
	}
}

// failsafeWay hedges with failsafe-go: a hedge policy at the recent p95 of
// each supplier, one hedge at most, paid from a budget; every copy holds a
// slot of the same limiter (a hedge waits for none: the policy cannot ask).
func failsafeWay() way {
	return func() func(ctx context.Context, lim *limiter, get getter, supplier string) error {
		b := budget.NewBuilder().WithMaxRate(0.1).WithMinConcurrency(1).Build()
		pols := map[string]failsafe.Executor[struct{}]{}
		for _, s := range suppliers {
			// CancelIf says which result ends the call and cancels the
			// other copy: without it, failsafe-go waits for both copies.
			hp := hedgepolicy.NewBuilderWithDelayQuantile[struct{}](0.95, 200, 20).
				CancelIf(func(_ struct{}, err error) bool { return err == nil }).
				WithMaxHedges(1).WithBudget(b).Build()
			pols[s] = failsafe.With[struct{}](hp)
		}
		return func(ctx context.Context, lim *limiter, get getter, supplier string) error {
			_, err := pols[supplier].WithContext(ctx).GetWithExecution(func(exec failsafe.Execution[struct{}]) (struct{}, error) {
				attempt := 1
				if exec.IsHedge() {
					attempt = 2
					ok, err := lim.TryAcquire(exec.Context())
					if err != nil || !ok {
						return struct{}{}, errNoSlot
					}
				} else if err := lim.Acquire(exec.Context()); err != nil {
					return struct{}{}, err
				}
				defer lim.Release()
				return struct{}{}, get(exec.Context(), supplier, attempt)
			})
			return err
		}
	}
}

var errNoSlot = errors.New("no free slot for a hedge")

// limiter is the process's outbound limit: a semaphore whose slots are
// taken waiting (Acquire) or only if free now (TryAcquire, a hedge.Limiter).
type limiter struct{ slots chan struct{} }

func newLimiter(n int) *limiter { return &limiter{slots: make(chan struct{}, n)} }

func (l *limiter) Acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *limiter) TryAcquire(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	select {
	case l.slots <- struct{}{}:
		return true, nil
	default:
		return false, nil
	}
}

func (l *limiter) Release() { <-l.slots }

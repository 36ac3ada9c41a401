package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/hedgepolicy"

	"quoteflowlab.dev/checkpoints/18/hedge"
	"quoteflowlab.dev/kit/api"
	"quoteflowlab.dev/kit/demo"
	"quoteflowlab.dev/provider"
)

// Lesson 18's experiment: quotes of three suppliers against the provider
// lab's tail scenario (and boreal alone at slow, after 100 quotes at tail),
// made eleven ways — no hedge, checkpoint 18's hedge package, failsafe-go's
// hedge policy and budget, and the checkpoint's hedge with its knobs set
// wrong — each through one limiter of 6 slots, against a provider lab of its
// own (the same seed), all at once. For each, the answer's latency
// percentiles next to what the provider counted.

var hedgeSuppliers = []string{"atlas", "boreal", "cedar"}

const (
	hedgeQuotes  = 300 // quotes per run at tail (each 3 supplier calls)
	slowQuotes   = 100 // quotes per run at slow (boreal only)
	hedgeWorkers = 2   // quotes in flight at once
)

func hedgeCompare(ctx context.Context, e *demo.Env, w io.Writer) error {
	fast := 5 * time.Millisecond
	runs := []hedgeRun{
		{name: "no hedge", scenario: "tail", way: unhedged},
		{name: "checkpoint hedge", scenario: "tail", way: checkpointHedge(hedge.DelayConfig{}, hedge.BudgetConfig{})},
		{name: "failsafe-go hedge", scenario: "tail", way: failsafeWay()},
		{name: "hedge at 5 ms", scenario: "tail", way: checkpointHedge(hedge.DelayConfig{Floor: fast, Ceiling: fast}, hedge.BudgetConfig{})},
		{name: "hedge at 5 ms, no budget", scenario: "tail", way: checkpointHedge(hedge.DelayConfig{Floor: fast, Ceiling: fast}, unlimitedBudget)},
		{name: "hedge at 1 s", scenario: "tail", way: checkpointHedge(hedge.DelayConfig{Floor: time.Second, Ceiling: time.Second}, hedge.BudgetConfig{})},
		{name: "hedge outside the limiter", scenario: "tail", way: outsideHedge(hedge.DelayConfig{Floor: fast, Ceiling: fast}, unlimitedBudget)},
		{name: "hedge without cancel", scenario: "tail", way: uncancelledHedge(hedge.DelayConfig{}, hedge.BudgetConfig{})},
		{name: "slow: checkpoint hedge", scenario: "slow", way: checkpointHedge(hedge.DelayConfig{}, hedge.BudgetConfig{})},
		{name: "slow: no budget", scenario: "slow", way: checkpointHedge(hedge.DelayConfig{}, unlimitedBudget)},
		{name: "slow: failsafe-go hedge", scenario: "slow", way: failsafeWay()},
	}
	// Each run has a provider lab of its own (its counters, its draws from
	// the same seed), so the runs go at once: they wait on the provider's
	// latencies, not on the CPU.
	provs := make([]*provider.Server, len(runs))
	for i := range runs {
		var err error
		if provs[i], err = e.Provider(); err != nil {
			return err
		}
	}
	results := make([]hedgeResult, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			n := hedgeQuotes
			if r.scenario == "slow" {
				n = slowQuotes
			}
			results[i] = r.measure(ctx, provs[i].Provider, provs[i].URL, n, hedgeWorkers, demo.QuoteBudget)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	fmt.Fprintf(w, "a call straggles with probability 2 %%: a quote of 3 calls waits for one %.1f %% of the time, a 50-line basket (150 calls) %.1f %%\n",
		(1-math.Pow(0.98, 3))*100, (1-math.Pow(0.98, 150))*100)
	fmt.Fprintf(w, "%d quotes a run at tail (%d at slow, boreal only, after %d at tail), %d at once, each cut at %v; one limit of %d slots a run\n",
		hedgeQuotes, slowQuotes, hedgeWarmup, hedgeWorkers, demo.QuoteBudget, demo.OutboundLimit)
	t := demo.Table{Columns: []string{"quotes", "p50", "p95", "p99", "max", "failed", "calls", "extra%", "hedged", "lost_canc.", "loser_runs", "max_active"}}
	for _, r := range results {
		extra := float64(r.calls-r.asked) / float64(r.asked) * 100
		t.Add(r.name, r.quotes, r.p50.Milliseconds(), r.p95.Milliseconds(), r.p99.Milliseconds(), r.max.Milliseconds(),
			r.failed, r.calls, fmt.Sprintf("%.1f", extra), r.hedged, r.lost, r.after.Milliseconds(), r.maxActive)
	}
	t.Print(w)
	fmt.Fprintln(w, "p50..max: ms of the quote's answer; calls, hedged, lost_canc. (a hedged pair's loser whose caller hung up")
	fmt.Fprintln(w, "after its sibling answered) and max_active: the provider's counts; extra%: calls beyond one per supplier")
	fmt.Fprintln(w, "asked; loser_runs: the longest ms a loser ran on after its sibling answered (the provider's request log)")
	return nil
}

// hedgeWarmup is how many quotes at tail go before a run at slow.
const hedgeWarmup = 100

// unlimitedBudget is a budget that never runs out: the no_budget build.
var unlimitedBudget = hedge.BudgetConfig{Ratio: 1, Cap: 1e9}

// A hedgeWay makes one supplier call, hedged or not, through the limiter.
type hedgeWay func() func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error

// priceGetter makes one GET of a price, with the quote's request ID and attempt.
type priceGetter func(ctx context.Context, supplier string, attempt int) error

type hedgeRun struct {
	name, scenario string
	way            hedgeWay
}

type hedgeResult struct {
	name                 string
	quotes, failed       int
	p50, p95, p99, max   time.Duration
	calls, asked, hedged int64
	lost, maxActive      int64
	after                time.Duration // the longest a loser ran after its sibling answered
}

func (r hedgeRun) measure(ctx context.Context, p *provider.Provider, base string, n, workers int, deadline time.Duration) hedgeResult {
	p.Reset()
	call := r.way()
	lim := newSlotLimiter(demo.OutboundLimit)
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
						return fetchPrice(ctx, client, base, scenario, id, supplier, attempt)
					}
					start := time.Now()
					ctx, cancel := context.WithTimeout(ctx, deadline)
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
		send(hedgeWarmup, "tail", hedgeSuppliers)
		p.Reset()
		hedgedIDs.Clear()
		lat, failed = nil, 0
		send(n, "slow", []string{"boreal"}) // slow slows boreal only
	} else {
		send(n, r.scenario, hedgeSuppliers)
	}
	sups := len(hedgeSuppliers)
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
		after = max(after, loserAfter(ctx, client, base, id, supplier))
		return true
	})
	slices.Sort(lat)
	q := func(f float64) time.Duration { return lat[min(len(lat)-1, int(math.Ceil(f*float64(len(lat))))-1)] }
	return hedgeResult{
		name: r.name, quotes: n, failed: failed,
		p50: q(0.50), p95: q(0.95), p99: q(0.99), max: lat[len(lat)-1],
		calls: st.Total, asked: int64(n * sups), hedged: st.Hedged,
		lost: st.LostCancelled, maxActive: st.MaxActive, after: after,
	}
}

// loserAfter reads the provider's log of id at supplier and returns how long
// after the first 200 the other copy ended (0 without both).
func loserAfter(ctx context.Context, client *http.Client, base, id, supplier string) time.Duration {
	rs, err := api.RequestLog(ctx, client, base, id)
	if err != nil {
		return 0
	}
	entries := api.Attempts(rs.Log, supplier)
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

// fetchPrice is one GET of a price: the same X-Request-ID for both copies, the
// copy's number in X-Attempt.
func fetchPrice(ctx context.Context, client *http.Client, base, scenario, id, supplier string, attempt int) error {
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

// unhedged is a call without a hedge: one slot, one copy.
func unhedged() func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
	return func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
		if err := lim.Acquire(ctx); err != nil {
			return err
		}
		defer lim.Release()
		return get(ctx, supplier, 1)
	}
}

// checkpoint hedges with checkpoint 18's hedge.Do: the first copy waits for
// a slot; the hedge takes one only if it is free now, and a token.
func checkpointHedge(dc hedge.DelayConfig, bc hedge.BudgetConfig) hedgeWay {
	return func() func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
		pol := &hedge.Policy{Limiter: nil, Budget: hedge.NewBudget(bc), Delays: hedge.NewDelays(dc)}
		return func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
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
func outsideHedge(dc hedge.DelayConfig, bc hedge.BudgetConfig) hedgeWay {
	return func() func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
		pol := &hedge.Policy{Limiter: noLimit{}, Budget: hedge.NewBudget(bc), Delays: hedge.NewDelays(dc)}
		return func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
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
func uncancelledHedge(dc hedge.DelayConfig, bc hedge.BudgetConfig) hedgeWay {
	inner := checkpointHedge(dc, bc)
	return func() func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
		call := inner()
		return func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
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
func failsafeWay() hedgeWay {
	return func() func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
		b := budget.NewBuilder().WithMaxRate(0.1).WithMinConcurrency(1).Build()
		pols := map[string]failsafe.Executor[struct{}]{}
		for _, s := range hedgeSuppliers {
			// CancelIf says which hedgeResult ends the call and cancels the
			// other copy: without it, failsafe-go waits for both copies.
			hp := hedgepolicy.NewBuilderWithDelayQuantile[struct{}](0.95, 200, 20).
				CancelIf(func(_ struct{}, err error) bool { return err == nil }).
				WithMaxHedges(1).WithBudget(b).Build()
			pols[s] = failsafe.With[struct{}](hp)
		}
		return func(ctx context.Context, lim *slotLimiter, get priceGetter, supplier string) error {
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

// slotLimiter is the process's outbound limit: a semaphore whose slots are
// taken waiting (Acquire) or only if free now (TryAcquire, a hedge.Limiter).
type slotLimiter struct{ slots chan struct{} }

func newSlotLimiter(n int) *slotLimiter { return &slotLimiter{slots: make(chan struct{}, n)} }

func (l *slotLimiter) Acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *slotLimiter) TryAcquire(ctx context.Context) (bool, error) {
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

func (l *slotLimiter) Release() { <-l.slots }

// tailDemo is lesson 18's bar through QuoteFlow itself: checkpoint 18 with
// --no-hedge (checkpoint 17's calls: 17 itself refuses the tail scenario,
// which its request validation predates), checkpoint 18 and 18's no_budget
// mutant, each a process of its own against a provider lab of its own (the
// default seed: the same calls straggle), 300 quotes at tail, then 100 at
// slow, two at a time.
func tailDemo(ctx context.Context, e *demo.Env, w io.Writer) error {
	cols := []struct {
		name   string
		mutant string
		flags  []string
	}{{"--no-hedge", "", []string{"--no-hedge"}}, {"checkpoint 18", "", nil}, {"no_budget", "no_budget", nil}}
	type phase struct {
		lat     []time.Duration
		partial int
		errs    int
		st      provider.Stats
	}
	type outcome struct {
		tail, slow phase
		err        error
	}
	bins := make([]string, len(cols))
	for i, c := range cols {
		var err error
		if bins[i], err = e.Build(ctx, 18, c.mutant); err != nil {
			return err
		}
	}
	outs := make([]outcome, len(cols))
	var wg sync.WaitGroup
	for i := range cols {
		prov, err := e.Provider()
		if err != nil {
			return err
		}
		qf, err := e.Quoteflow(ctx, bins[i], prov.URL, cols[i].flags...)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.Log, qf.First)
		wg.Go(func() {
			send := func(n int, scenario string) phase {
				var ph phase
				var mu sync.Mutex
				next := make(chan struct{})
				var ws sync.WaitGroup
				for range hedgeWorkers {
					ws.Go(func() {
						for range next {
							q, status, took, err := demo.PostQuote(ctx, qf.URL, scenario)
							mu.Lock()
							switch {
							case err != nil || status != http.StatusOK:
								ph.errs++
							case len(q.Failures) > 0:
								ph.partial++
							}
							ph.lat = append(ph.lat, took)
							mu.Unlock()
						}
					})
				}
				for range n {
					next <- struct{}{}
				}
				close(next)
				ws.Wait()
				// The losers' handlers end as their connections close.
				for end := time.Now().Add(3 * time.Second); prov.Provider.Snapshot().Active > 0 && time.Now().Before(end); {
					time.Sleep(10 * time.Millisecond)
				}
				ph.st = prov.Provider.Snapshot()
				slices.Sort(ph.lat)
				return ph
			}
			outs[i].tail = send(hedgeQuotes, "tail")
			prov.Provider.Reset()
			outs[i].slow = send(slowQuotes, "slow")
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	q := func(lat []time.Duration, f float64) int64 {
		return lat[min(len(lat)-1, int(math.Ceil(f*float64(len(lat))))-1)].Milliseconds()
	}
	fmt.Fprintf(w, "checkpoint 18's QuoteFlow three ways (--no-hedge: as checkpoint 17 calls), a provider lab each (seed %d):\n", provider.DefaultSeed)
	fmt.Fprintf(w, "%d quotes at tail, then %d at slow (boreal answers after 1.5 s, past the 0.8 s budget), %d at a time;\n", hedgeQuotes, slowQuotes, hedgeWorkers)
	fmt.Fprintf(w, "one limit of %d slots a process\n", demo.OutboundLimit)
	t := demo.Table{}
	for _, c := range cols {
		t.Columns = append(t.Columns, c.name)
	}
	row := func(label string, f func(o outcome) any) {
		vals := make([]any, len(outs))
		for i, o := range outs {
			vals[i] = f(o)
		}
		t.Add(label, vals...)
	}
	first := int64(hedgeQuotes * len(hedgeSuppliers))
	row("tail: p50 (ms)", func(o outcome) any { return q(o.tail.lat, 0.50) })
	row("tail: p95 (ms)", func(o outcome) any { return q(o.tail.lat, 0.95) })
	row("tail: p99 (ms)", func(o outcome) any { return q(o.tail.lat, 0.99) })
	row("tail: max (ms)", func(o outcome) any { return o.tail.lat[len(o.tail.lat)-1].Milliseconds() })
	row("tail: partial quotes", func(o outcome) any { return o.tail.partial })
	row("tail: quotes not answered 200", func(o outcome) any { return o.tail.errs })
	row("tail: supplier calls", func(o outcome) any { return o.tail.st.Total })
	row("tail: extra calls %", func(o outcome) any { return fmt.Sprintf("%.1f", float64(o.tail.st.Total-first)/float64(first)*100) })
	row("tail: hedged", func(o outcome) any { return o.tail.st.Hedged })
	row("tail: lost_cancelled", func(o outcome) any { return o.tail.st.LostCancelled })
	row("tail: max_active", func(o outcome) any { return o.tail.st.MaxActive })
	slowFirst := int64(slowQuotes * len(hedgeSuppliers))
	row("slow: supplier calls", func(o outcome) any { return o.slow.st.Total })
	row("slow: extra calls", func(o outcome) any { return o.slow.st.Total - slowFirst })
	row("slow: boreal calls", func(o outcome) any { return o.slow.st.PerSupplier.Boreal })
	row("slow: max_active", func(o outcome) any { return o.slow.st.MaxActive })
	t.Print(w)
	fmt.Fprintf(w, "latencies: the quote's answer as the client saw it; calls, hedged, lost_cancelled, max_active: the provider's\n")
	fmt.Fprintf(w, "counts; extra: calls beyond one per supplier a quote asks (%d at tail, %d at slow); the budget allows\n", first, slowFirst)
	fmt.Fprintf(w, "at slow 10 %% of the first calls plus its cap of 10: %d extra calls\n", slowFirst/10+10)
	return nil
}

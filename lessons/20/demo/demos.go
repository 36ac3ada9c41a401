package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"quoteflowlab.dev/kit/api"
	"quoteflowlab.dev/kit/demo"
	"quoteflowlab.dev/kit/load"
	"quoteflowlab.dev/provider"
)

// Lesson 20's bar through QuoteFlow: the provider's capacity schedule
// (each supplier serves 12 calls at once, then 4, then 12 again), quotes
// sent at a steady rate for one whole period, through checkpoint 20 three
// ways, each a process of its own against a provider lab of its own (the
// default seed, the same schedule): a fixed limit of 6 calls per supplier,
// a fixed limit of 24, and the adaptive limit as shipped. A fixed limit is
// the adaptive one pinned (--limit-min = --limit-initial = --limit-max), so
// the line in front of it, its shedding and everything else are the same
// in the three. Every figure is the client's clock and the answers it got,
// the provider's /stats, or (the limit's trace) QuoteFlow's /api/limits.

const (
	// capacityScale stretches the provider's latencies and its schedule:
	// a call's base latency 120-180 ms, each capacity step 30 s. At scale 1
	// the same load is three times the requests a second, more than a
	// shared machine sends and serves evenly.
	capacityScale = 3
	// capacityRate is the quotes sent a second: three quarters of what a
	// supplier serves at C 12 (12 calls / 150 ms = 80 a second), three
	// times what it serves at C 4.
	capacityRate = 60
	// capacityPoll is how often the demo reads the adaptive limits.
	capacityPoll = 100 * time.Millisecond
)

// A capacityCol is one way of running checkpoint 20.
type capacityCol struct {
	name  string
	flags []string
}

func pinned(n int) []string {
	s := strconv.Itoa(n)
	return []string{"--limit-min", s, "--limit-initial", s, "--limit-max", s}
}

var capacityCols = []capacityCol{
	{"fixed 6", pinned(6)},
	{"fixed 24", pinned(24)},
	{"adaptive", nil},
}

// A capQuote is one quote the client sent.
type capQuote struct {
	start, end time.Time
	status     int
	complete   bool // every supplier answered, none failed, no stale price
	err        error
}

// good is a quote answered 200 with every supplier's price within the
// quote's deadline, on the client's clock.
func (q capQuote) good() bool {
	return q.err == nil && q.status == http.StatusOK && q.complete && q.end.Sub(q.start) <= demo.QuoteBudget
}

// A limitSample is the adaptive limits read at one instant.
type limitSample struct {
	at     time.Time
	limits map[string]int
}

// capacityRun is what one column measured.
type capacityRun struct {
	quotes []capQuote
	began  time.Time // the schedule's start, on the client's clock
	sched  provider.CapacitySchedule
	trace  []limitSample
	err    error
}

func capacityDemo(ctx context.Context, e *demo.Env, w io.Writer) error {
	bin, err := e.Build(ctx, 20, "")
	if err != nil {
		return err
	}
	runs := make([]capacityRun, len(capacityCols))
	var wg sync.WaitGroup
	for i, c := range capacityCols {
		prov, err := e.ProviderWith(provider.Options{LatencyScale: capacityScale, Seed: provider.DefaultSeed})
		if err != nil {
			return err
		}
		qf, err := e.Quoteflow(ctx, bin, prov.URL, c.flags...)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.Log, qf.First)
		wg.Go(func() { runs[i] = runCapacity(ctx, prov, qf.URL, c.flags == nil) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, r := range runs {
		if r.err != nil {
			return fmt.Errorf("%s: %w", capacityCols[i].name, r.err)
		}
	}
	sched := runs[0].sched
	fmt.Fprintf(w, "the provider's capacity schedule (seed %d, latencies x %g): a call takes %d-%d ms; each supplier serves\n",
		sched.Seed, sched.LatencyScale, sched.BaseMs[0], sched.BaseMs[1])
	fmt.Fprint(w, "C calls at once, C ")
	for i, s := range sched.Steps {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprintf(w, "%d from %.0f s", s.C, float64(s.FromMs)/1000)
	}
	fmt.Fprintf(w, "; %d quotes a second for %.0f s through checkpoint 20 three ways\n", capacityRate, float64(sched.PeriodMs)/1000)
	fmt.Fprintln(w, "(fixed N: --limit-min N --limit-initial N --limit-max N, every supplier's limit and the inbound one N), a provider lab each:")
	t := demo.Table{}
	for _, c := range capacityCols {
		t.Columns = append(t.Columns, c.name)
	}
	row := func(label string, f func(r capacityRun) any) {
		vals := make([]any, len(runs))
		for i, r := range runs {
			vals[i] = f(r)
		}
		t.Add(label, vals...)
	}
	row("quotes", func(r capacityRun) any { return len(r.quotes) })
	for i, s := range sched.Steps {
		label := fmt.Sprintf("C %d (%.0f-%.0f s)", s.C, float64(s.FromMs)/1000, float64(r0end(sched, i))/1000)
		row(label+": 200 in time/s", func(r capacityRun) any {
			qs, secs := r.phase(i)
			n := 0
			for _, q := range qs {
				if q.err == nil && q.status == http.StatusOK && q.end.Sub(q.start) <= demo.QuoteBudget {
					n++
				}
			}
			return fmt.Sprintf("%.1f", float64(n)/secs)
		})
		row(label+": complete in time/s", func(r capacityRun) any {
			qs, secs := r.phase(i)
			return fmt.Sprintf("%.1f", float64(countGood(qs))/secs)
		})
		row(label+": p99 (ms)", func(r capacityRun) any { qs, _ := r.phase(i); return p99(qs) })
		row(label+": 200 incomplete", func(r capacityRun) any {
			qs, _ := r.phase(i)
			n := 0
			for _, q := range qs {
				if q.status == http.StatusOK && !q.complete {
					n++
				}
			}
			return n
		})
		row(label+": 503", func(r capacityRun) any {
			qs, _ := r.phase(i)
			n := 0
			for _, q := range qs {
				if q.status == http.StatusServiceUnavailable {
					n++
				}
			}
			return n
		})
	}
	row("provider: 503 beyond 3 x C", func(r capacityRun) any { return r.sched.Shed })
	drop, rise := sched.Steps[1], sched.Steps[2]
	for _, who := range []string{"boreal", "inbound"} {
		row(fmt.Sprintf("%s limit at %.0f s (C %d)", who, float64(drop.FromMs)/1000, sched.Steps[0].C),
			func(r capacityRun) any { return r.limitAt(who, drop.FromMs) })
		row(fmt.Sprintf("%s limit <= %d after (s)", who, 2*drop.C), func(r capacityRun) any {
			return r.until(who, drop.FromMs, func(v int) bool { return v <= 2*drop.C })
		})
		row(fmt.Sprintf("%s limit at %.0f s (C %d)", who, float64(rise.FromMs)/1000, drop.C),
			func(r capacityRun) any { return r.limitAt(who, rise.FromMs) })
		row(fmt.Sprintf("%s limit >= %d after (s)", who, rise.C), func(r capacityRun) any {
			return r.until(who, rise.FromMs, func(v int) bool { return v >= rise.C })
		})
	}
	t.Print(w)
	fmt.Fprintln(w, "goodput: quotes answered 200, complete (no supplier failed, no stale price), within the 800 ms deadline")
	fmt.Fprintln(w, "(the client's clock), a second of the phase; a quote's phase is where its start falls on the schedule; p99 over")
	fmt.Fprintln(w, "the phase's quotes;")
	fmt.Fprintln(w, "503: QuoteFlow shed the quote (Retry-After); limits: the adaptive run's /api/limits, read every 100 ms")
	return nil
}

func r0end(s provider.CapacitySchedule, i int) int64 {
	if i+1 < len(s.Steps) {
		return s.Steps[i+1].FromMs
	}
	return s.PeriodMs
}

func countGood(qs []capQuote) int {
	n := 0
	for _, q := range qs {
		if q.good() {
			n++
		}
	}
	return n
}

func p99(qs []capQuote) any {
	if len(qs) == 0 {
		return "-"
	}
	lat := make([]time.Duration, len(qs))
	for i, q := range qs {
		lat[i] = q.end.Sub(q.start)
	}
	slices.Sort(lat)
	return lat[int(math.Ceil(0.99*float64(len(lat))))-1].Milliseconds()
}

// phase returns the quotes that started in step i of the schedule's first
// period, and the step's length in seconds.
func (r capacityRun) phase(i int) ([]capQuote, float64) {
	from, to := r.began.Add(ms64(r.sched.Steps[i].FromMs)), r.began.Add(ms64(r0end(r.sched, i)))
	var out []capQuote
	for _, q := range r.quotes {
		if !q.start.Before(from) && q.start.Before(to) {
			out = append(out, q)
		}
	}
	return out, to.Sub(from).Seconds()
}

func ms64(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// limitAt is boreal's adaptive limit at ms on the schedule ("-" without a
// trace).
func (r capacityRun) limitAt(who string, at int64) any {
	t := r.began.Add(ms64(at))
	v := -1
	for _, s := range r.trace {
		if s.at.After(t) {
			break
		}
		v = s.limits[who]
	}
	if v < 0 {
		return "-"
	}
	return v
}

// until is the time from ms on the schedule to the first reading of who's
// limit that ok accepts, in seconds ("-" without a trace, "never" when
// none does).
func (r capacityRun) until(who string, at int64, ok func(int) bool) any {
	if len(r.trace) == 0 {
		return "-"
	}
	t := r.began.Add(ms64(at))
	for _, s := range r.trace {
		if !s.at.Before(t) && ok(s.limits[who]) {
			return fmt.Sprintf("%.1f", s.at.Sub(t).Seconds())
		}
	}
	return "never"
}

// runCapacity sends capacityRate quotes a second at capacity for one
// period of the schedule, reading the adaptive limits meanwhile when
// traced, then reads what the provider recorded.
func runCapacity(ctx context.Context, prov *provider.Server, qf string, traced bool) capacityRun {
	var r capacityRun
	prov.Provider.Reset()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256}, Timeout: demo.RequestTimeout}
	defer client.CloseIdleConnections()
	_, body := load.Config{Request: "quote", Scenario: "capacity"}.Body()
	period := time.Duration(30*capacityScale) * time.Second
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	if traced {
		wg.Go(func() {
			tick := time.NewTicker(capacityPoll)
			defer tick.Stop()
			for {
				type lim struct {
					Limit int `json:"limit"`
				}
				var ls struct {
					Suppliers map[string]lim `json:"suppliers"`
					Inbound   lim            `json:"inbound"`
				}
				if _, _, err := demo.Do(ctx, http.MethodGet, qf+"/api/limits", nil, &ls); err == nil {
					s := limitSample{at: time.Now(), limits: map[string]int{}}
					for k, v := range ls.Suppliers {
						s.limits[k] = v.Limit
					}
					s.limits["inbound"] = ls.Inbound.Limit
					mu.Lock()
					r.trace = append(r.trace, s)
					mu.Unlock()
				}
				select {
				case <-tick.C:
				case <-stop:
					return
				case <-ctx.Done():
					return
				}
			}
		})
	}
	start := time.Now()
	every := time.Second / capacityRate
	for n := 0; ; n++ {
		next := start.Add(time.Duration(n) * every)
		if next.Sub(start) >= period {
			break
		}
		if err := demo.Pause(ctx, time.Until(next)); err != nil {
			break
		}
		wg.Go(func() {
			q := capQuote{start: time.Now()}
			q.status, q.complete, q.err = postCapacity(ctx, client, qf, body)
			q.end = time.Now()
			mu.Lock()
			r.quotes = append(r.quotes, q)
			mu.Unlock()
		})
	}
	// Every quote ends within its deadline plus the client's cap.
	for {
		mu.Lock()
		n := len(r.quotes)
		mu.Unlock()
		if n >= int(period/every) || ctx.Err() != nil || time.Since(start) > period+demo.RequestTimeout {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if r.err = ctx.Err(); r.err != nil {
		return r
	}
	slices.SortFunc(r.quotes, func(a, b capQuote) int { return a.start.Compare(b.start) })
	before := time.Now()
	var st provider.Stats
	if _, _, r.err = demo.Do(ctx, http.MethodGet, prov.URL+"/stats", nil, &st); r.err != nil {
		return r
	}
	r.sched = st.Scenarios.Capacity
	if r.sched.ElapsedMs == nil {
		r.err = fmt.Errorf("the provider's capacity schedule never began: no quote reached a supplier")
		return r
	}
	// ElapsedMs is within the period; the run lasted about one period, so
	// the schedule began one period plus that before now, or that before.
	mid := before.Add(time.Since(before) / 2)
	el := ms64(*r.sched.ElapsedMs)
	r.began = mid.Add(-el)
	if mid.Sub(start) > el+ms64(r.sched.PeriodMs)/2 {
		r.began = r.began.Add(-ms64(r.sched.PeriodMs))
	}
	return r
}

// postCapacity posts one quote and says whether its answer is complete:
// every supplier answered (a price, fresh, or a product it does not sell),
// none failed.
func postCapacity(ctx context.Context, client *http.Client, qf string, body []byte) (int, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, qf+"/api/quotes", bytes.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	var a api.Answer
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return resp.StatusCode, false, err
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, false, nil
	}
	if err := json.Unmarshal(data, &a); err != nil {
		return resp.StatusCode, false, err
	}
	for _, q := range a.Quotes {
		if q.Stale {
			return resp.StatusCode, false, nil
		}
	}
	return resp.StatusCode, len(a.Failures) == 0 && len(a.Quotes) > 0, nil
}

// Lesson 20's shedding by priority: during the capacity schedule's first
// phase (C 12), single quotes and 10-line baskets together ask each
// supplier for more than it serves, through checkpoint 20 twice, a
// provider lab each: with lesson 19's limits (--no-adaptive: one fixed
// line of 36 supplier calls for every supplier, first come first served,
// and no inbound line) and as shipped (a line per supplier served single
// quotes first, basket lines last, and shed at its target).

const (
	priorityFor     = 20 * time.Second
	priorityQuotes  = 40 // a second
	priorityBaskets = 8  // a second, of priorityLines lines
	priorityLines   = 10
)

var priorityCols = []capacityCol{
	{"lesson 19's limits", []string{"--no-adaptive", "--outbound", "36", "--inbound", "64", "--inbound-queue-target", "0"}},
	{"checkpoint 20", nil},
}

// priorityRun is what one column measured.
type priorityRun struct {
	quotes  []capQuote
	baskets []capQuote // complete: every line complete
	lines   map[string]int
	codes   map[string]int
	err     error
}

func priorityDemo(ctx context.Context, e *demo.Env, w io.Writer) error {
	bin, err := e.Build(ctx, 20, "")
	if err != nil {
		return err
	}
	runs := make([]priorityRun, len(priorityCols))
	var wg sync.WaitGroup
	for i, c := range priorityCols {
		prov, err := e.ProviderWith(provider.Options{LatencyScale: capacityScale, Seed: provider.DefaultSeed})
		if err != nil {
			return err
		}
		qf, err := e.Quoteflow(ctx, bin, prov.URL, c.flags...)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.Log, qf.First)
		wg.Go(func() { runs[i] = runPriority(ctx, prov, qf.URL) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, r := range runs {
		if r.err != nil {
			return fmt.Errorf("%s: %w", priorityCols[i].name, r.err)
		}
	}
	fmt.Fprintf(w, "capacity's first phase (each supplier serves 12 calls at once, a call 120-180 ms: 80 a second), %.0f s of\n", priorityFor.Seconds())
	fmt.Fprintf(w, "%d single quotes and %d baskets of %d lines a second (%d calls a second to each supplier), through checkpoint 20\n",
		priorityQuotes, priorityBaskets, priorityLines, priorityQuotes+priorityBaskets*priorityLines)
	fmt.Fprintln(w, "twice: lesson 19's limits (--no-adaptive --outbound 36 --inbound 64 --inbound-queue-target 0) and as shipped:")
	t := demo.Table{}
	for _, c := range priorityCols {
		t.Columns = append(t.Columns, c.name)
	}
	row := func(label string, f func(r priorityRun) any) {
		vals := make([]any, len(runs))
		for i, r := range runs {
			vals[i] = f(r)
		}
		t.Add(label, vals...)
	}
	secs := priorityFor.Seconds()
	row("quotes", func(r priorityRun) any { return len(r.quotes) })
	row("quotes complete in time/s", func(r priorityRun) any { return fmt.Sprintf("%.1f", float64(countGood(r.quotes))/secs) })
	row("quotes 503 (refused at the door)", func(r priorityRun) any { return statusCount(r.quotes, http.StatusServiceUnavailable) })
	row("quotes 200 incomplete", func(r priorityRun) any {
		n := 0
		for _, q := range r.quotes {
			if q.status == http.StatusOK && !q.complete {
				n++
			}
		}
		return n
	})
	row("quotes p50 (ms)", func(r priorityRun) any { return pct(r.quotes, 0.5) })
	row("quotes p99 (ms)", func(r priorityRun) any { return p99(r.quotes) })
	row("baskets", func(r priorityRun) any { return len(r.baskets) })
	row("baskets p99 (ms)", func(r priorityRun) any { return p99(r.baskets) })
	row("basket lines", func(r priorityRun) any { return load.Counts(r.lines) })
	row("basket line failures", func(r priorityRun) any { return load.Counts(r.codes) })
	t.Print(w)
	fmt.Fprintln(w, "complete in time: 200, no supplier failed, within 800 ms (the client's clock); p50, p99 over every quote or")
	fmt.Fprintln(w, "basket sent; basket lines: the answers' line statuses; failures: the lines' failure codes (shed: never sent,")
	fmt.Fprintln(w, "its supplier's line gave the slot to a single quote or the wait passed its target; queued for compensation)")
	return nil
}

func statusCount(qs []capQuote, status int) int {
	n := 0
	for _, q := range qs {
		if q.status == status {
			n++
		}
	}
	return n
}

// pct is the qs' latency at quantile q, in ms.
func pct(qs []capQuote, q float64) any {
	if len(qs) == 0 {
		return "-"
	}
	lat := make([]time.Duration, len(qs))
	for i, x := range qs {
		lat[i] = x.end.Sub(x.start)
	}
	slices.Sort(lat)
	return lat[int(math.Ceil(q*float64(len(lat))))-1].Milliseconds()
}

// runPriority sends the quotes and the baskets at their rates for
// priorityFor.
func runPriority(ctx context.Context, prov *provider.Server, qf string) priorityRun {
	r := priorityRun{lines: map[string]int{}, codes: map[string]int{}}
	prov.Provider.Reset()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256}, Timeout: demo.RequestTimeout}
	defer client.CloseIdleConnections()
	_, quote := load.Config{Request: "quote", Scenario: "capacity"}.Body()
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	pace := func(rate int, send func()) {
		every := time.Second / time.Duration(rate)
		for n := 0; ; n++ {
			next := start.Add(time.Duration(n) * every)
			if next.Sub(start) >= priorityFor || demo.Pause(ctx, time.Until(next)) != nil {
				return
			}
			wg.Go(send)
		}
	}
	var senders sync.WaitGroup
	senders.Go(func() {
		pace(priorityQuotes, func() {
			q := capQuote{start: time.Now()}
			q.status, q.complete, q.err = postCapacity(ctx, client, qf, quote)
			q.end = time.Now()
			mu.Lock()
			r.quotes = append(r.quotes, q)
			mu.Unlock()
		})
	})
	senders.Go(func() {
		pace(priorityBaskets, func() {
			q := capQuote{start: time.Now()}
			b, status, _, err := demo.PostBasket(ctx, qf, priorityLines, "capacity")
			q.end, q.status, q.err = time.Now(), status, err
			mu.Lock()
			defer mu.Unlock()
			complete := len(b.Items) == priorityLines
			for _, it := range b.Items {
				r.lines[it.Status]++
				complete = complete && it.Status == "complete"
				for _, f := range it.Failures {
					r.codes[f.Code]++
				}
			}
			if status != http.StatusOK {
				r.lines[fmt.Sprintf("none (%d)", status)] += priorityLines
			}
			q.complete = complete
			r.baskets = append(r.baskets, q)
		})
	})
	senders.Wait()
	wg.Wait()
	r.err = ctx.Err()
	return r
}

package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"quoteflowlab.dev/checkpoints/19/breaker"
	"quoteflowlab.dev/kit/api"
	"quoteflowlab.dev/kit/demo"
	"quoteflowlab.dev/kit/load"
	"quoteflowlab.dev/provider"
)

// Lesson 19's bar through QuoteFlow: boreal's brownout (healthy, then down
// for 8 s, then healed: the provider lab's schedule), 2 quotes at a time for
// 20 s, through checkpoint 19 three ways, each a process of its own against
// a provider lab of its own (the default seed). Checkpoint 18 cannot take
// part: its request validation predates the brownout scenario and refuses
// it, so its calls are played by checkpoint 19 with --no-breaker
// --max-stale 0 (no breaker, no stale answer: what is left is 18), as
// lesson 18's demo plays 17 with --no-hedge. Every figure is the provider's
// record (its /stats, its log of each quote's X-Request-ID) or the client's
// clock and the answers it got; one row says what QuoteFlow says of itself.

const (
	brownoutFor     = 20 * time.Second // quotes start for this long after the first
	brownoutWorkers = 2                // quotes in flight at once
	brownoutSlow    = 500 * time.Millisecond
)

// A brownoutCol is one way of running checkpoint 19.
type brownoutCol struct {
	name  string
	flags []string
}

var brownoutCols = []brownoutCol{
	{"as 18", []string{"--no-breaker", "--max-stale", "0"}},
	{"stale only", []string{"--no-breaker"}},
	{"checkpoint 19", nil},
}

func brownout503(ctx context.Context, e *demo.Env, w io.Writer) error {
	return brownoutDemo(ctx, e, w, provider.Brownout503)
}

func brownoutHang(ctx context.Context, e *demo.Env, w io.Writer) error {
	return brownoutDemo(ctx, e, w, provider.BrownoutHang)
}

// A brownoutQuote is one quote the client sent: when, by its clock, and
// what came back.
type brownoutQuote struct {
	start, end time.Time
	status     int
	err        error
	ans        api.Answer
	asked      bool // the provider logged a boreal call with the quote's X-Request-ID
}

// boreal returns boreal's line of the answer (ok false: boreal failed).
func boreal(a api.Answer) (total int, stale bool, ageMS float64, ok bool) {
	for _, q := range a.Quotes {
		if q.Supplier == "boreal" {
			if q.AgeMS != nil {
				ageMS = *q.AgeMS
			}
			return q.TotalCents, q.Stale, ageMS, true
		}
	}
	return 0, false, 0, false
}

// brownoutRun is what one column measured.
type brownoutRun struct {
	quotes   []brownoutQuote // in start order
	began    time.Time       // the schedule's start, on the client's clock
	sched    provider.BrownoutSchedule
	st       provider.Stats
	breakers struct {
		Enabled  bool `json:"enabled"`
		Breakers map[string]struct {
			Opened   int64 `json:"opened"`
			MinCalls int   `json:"min_calls"`
			Window   int   `json:"window"`
		} `json:"breakers"`
	}
	err error
}

func brownoutDemo(ctx context.Context, e *demo.Env, w io.Writer, shape provider.BrownoutShape) error {
	bin, err := e.Build(ctx, 19, "")
	if err != nil {
		return err
	}
	runs := make([]brownoutRun, len(brownoutCols))
	var wg sync.WaitGroup
	for i, c := range brownoutCols {
		prov, err := e.ProviderWith(provider.Options{LatencyScale: 1, Seed: provider.DefaultSeed, BrownoutShape: shape})
		if err != nil {
			return err
		}
		qf, err := e.Quoteflow(ctx, bin, prov.URL, c.flags...)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.Log, qf.First)
		wg.Go(func() { runs[i] = runBrownout(ctx, prov, qf.URL) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, r := range runs {
		if r.err != nil {
			return fmt.Errorf("%s: %w", brownoutCols[i].name, r.err)
		}
	}
	sched := runs[0].sched
	how := "a 503 at once"
	if shape == provider.BrownoutHang {
		how = fmt.Sprintf("each call held %.1f s, past the quote's %.1f s budget", float64(sched.HangMs)/1000, demo.QuoteBudget.Seconds())
	}
	fmt.Fprintf(w, "boreal's brownout, shape %s (%s): healthy until %.1f s of its schedule, down until %.1f s, healed after;\n",
		shape, how, float64(sched.StartMs)/1000, float64(sched.EndMs)/1000)
	fmt.Fprintf(w, "%d quotes at a time for %.0f s through checkpoint 19 three ways, a provider lab each (seed %d):\n",
		brownoutWorkers, brownoutFor.Seconds(), sched.Seed)
	fmt.Fprintln(w, "as 18 (--no-breaker --max-stale 0: checkpoint 18's calls), stale only (--no-breaker), checkpoint 19")
	if b, ok := runs[len(runs)-1].breakers.Breakers["boreal"]; ok {
		fmt.Fprintf(w, "(its breaker opens at half of the last %d outcomes, once it holds %d)\n", b.Window, b.MinCalls)
	}
	t := demo.Table{}
	for _, c := range brownoutCols {
		t.Columns = append(t.Columns, c.name)
	}
	row := func(label string, f func(r brownoutRun) any) {
		vals := make([]any, len(runs))
		for i, r := range runs {
			vals[i] = f(r)
		}
		t.Add(label, vals...)
	}
	row("quotes", func(r brownoutRun) any { return len(r.quotes) })
	row("quotes not answered 200", func(r brownoutRun) any {
		n := 0
		for _, q := range r.quotes {
			if q.err != nil || q.status != http.StatusOK {
				n++
			}
		}
		return n
	})
	row("healthy: quotes", func(r brownoutRun) any { return len(r.phase("healthy")) })
	row("healthy: p50 (ms)", func(r brownoutRun) any { return p50(r.phase("healthy")) })
	row("outage: quotes", func(r brownoutRun) any { return len(r.phase("down")) })
	row("outage: p50 (ms)", func(r brownoutRun) any { return p50(r.phase("down")) })
	row("outage: quotes over 0.5 s", func(r brownoutRun) any {
		n := 0
		for _, q := range r.phase("down") {
			if q.end.Sub(q.start) > brownoutSlow {
				n++
			}
		}
		return n
	})
	row("outage: boreal calls", func(r brownoutRun) any { return r.sched.Failed })
	row("outage: boreal calls a quote", func(r brownoutRun) any {
		return fmt.Sprintf("%.2f", float64(r.sched.Failed)/float64(max(1, len(r.phase("down")))))
	})
	row("outage: quotes that asked boreal", func(r brownoutRun) any {
		n := 0
		for _, q := range r.phase("down") {
			if q.asked {
				n++
			}
		}
		return n
	})
	row("outage: quotes without boreal", func(r brownoutRun) any {
		n := 0
		for _, q := range r.phase("down") {
			if _, _, _, ok := boreal(q.ans); q.status == http.StatusOK && !ok {
				n++
			}
		}
		return n
	})
	row("outage: boreal stale", func(r brownoutRun) any { return r.stale().n })
	row("outage: stale at another price", func(r brownoutRun) any { return r.stale().otherPrice })
	row("outage: stale max age_ms", func(r brownoutRun) any { return orDash(r.stale().n, fmt.Sprintf("%.0f", r.stale().maxAge)) })
	row("outage: stale max age, client", func(r brownoutRun) any {
		return orDash(r.stale().n, fmt.Sprintf("%.0f", r.stale().maxClientAge.Seconds()*1000))
	})
	row("healed: closed by (ms)", func(r brownoutRun) any { return r.closedAfter() })
	row("breaker opened (QuoteFlow)", func(r brownoutRun) any {
		if !r.breakers.Enabled {
			return "-"
		}
		return r.breakers.Breakers["boreal"].Opened
	})
	row(fmt.Sprintf("max_active (limit %d)", demo.OutboundLimit), func(r brownoutRun) any { return r.st.MaxActive })
	t.Print(w)
	fmt.Fprintln(w, "a quote's phase is where its start falls on the schedule; p50: the quote's answer on the client's clock;")
	fmt.Fprintln(w, "boreal calls: the provider's count of boreal calls that arrived inside the outage; asked: the provider logged")
	fmt.Fprintln(w, "a boreal call with the quote's X-Request-ID; stale, its price and age_ms: the answers (the client's age: from")
	fmt.Fprintf(w, "the last fresh boreal answer it got); closed by: from the heal to the answer of the first %d quotes (the\n", breaker.DefaultProbes)
	fmt.Fprintln(w, "probes) of the final run in which every quote asked boreal (the provider's log); opened: /api/breakers;")
	fmt.Fprintln(w, "max_active: the provider's")
	return nil
}

func orDash(n int, s string) string {
	if n == 0 {
		return "-"
	}
	return s
}

// runBrownout sends brownoutWorkers quotes at a time at brownout for
// brownoutFor, then reads what the provider recorded.
func runBrownout(ctx context.Context, prov *provider.Server, qf string) brownoutRun {
	var r brownoutRun
	prov.Provider.Reset()
	_, body := load.Config{Request: "quote", Scenario: "brownout"}.Body()
	var mu sync.Mutex
	stopAt := time.Now().Add(brownoutFor)
	var wg sync.WaitGroup
	for range brownoutWorkers {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(stopAt) {
				q := brownoutQuote{start: time.Now()}
				q.status, _, q.err = demo.Do(ctx, http.MethodPost, qf+"/api/quotes", body, &q.ans)
				q.end = time.Now()
				mu.Lock()
				r.quotes = append(r.quotes, q)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if r.err = ctx.Err(); r.err != nil {
		return r
	}
	slices.SortFunc(r.quotes, func(a, b brownoutQuote) int { return a.start.Compare(b.start) })
	// The calls whose quote gave up end as their connections close: give
	// the provider a moment to count the last of them (capped).
	for end := time.Now().Add(3 * time.Second); prov.Provider.Snapshot().Active > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	before := time.Now()
	if _, _, r.err = demo.Do(ctx, http.MethodGet, prov.URL+"/stats", nil, &r.st); r.err != nil {
		return r
	}
	r.sched = r.st.Scenarios.Brownout
	if r.sched.ElapsedMs == nil {
		r.err = fmt.Errorf("the provider's brownout schedule never began: no quote reached boreal")
		return r
	}
	mid := before.Add(time.Since(before) / 2)
	r.began = mid.Add(-time.Duration(*r.sched.ElapsedMs) * time.Millisecond)
	for i, q := range r.quotes {
		if q.ans.RequestID == "" || q.start.Before(r.at(r.sched.StartMs)) {
			continue
		}
		rs, err := demo.RequestLog(ctx, prov.URL, q.ans.RequestID)
		if err != nil {
			r.err = err
			return r
		}
		r.quotes[i].asked = len(rs.Log.Boreal) > 0
	}
	if _, _, r.err = demo.Do(ctx, http.MethodGet, qf+"/api/breakers", nil, &r.breakers); r.err != nil {
		return r
	}
	return r
}

// at is the time ms after the schedule began, on the client's clock.
func (r brownoutRun) at(ms int64) time.Time { return r.began.Add(time.Duration(ms) * time.Millisecond) }

// phase returns the quotes that started in the schedule's phase: healthy,
// down or healed.
func (r brownoutRun) phase(name string) []brownoutQuote {
	var out []brownoutQuote
	down, healed := r.at(r.sched.StartMs), r.at(r.sched.EndMs)
	for _, q := range r.quotes {
		p := "healthy"
		switch {
		case !q.start.Before(healed):
			p = "healed"
		case !q.start.Before(down):
			p = "down"
		}
		if p == name {
			out = append(out, q)
		}
	}
	return out
}

// p50 is the quotes' median latency in ms.
func p50(qs []brownoutQuote) any {
	if len(qs) == 0 {
		return "-"
	}
	lat := make([]time.Duration, len(qs))
	for i, q := range qs {
		lat[i] = q.end.Sub(q.start)
	}
	slices.Sort(lat)
	return lat[int(math.Ceil(0.5*float64(len(lat))))-1].Milliseconds()
}

type staleFigures struct {
	n, otherPrice int
	maxAge        float64       // the answers' age_ms
	maxClientAge  time.Duration // from the last fresh boreal answer the client got
}

// stale reads the outage's stale boreal lines: how many, how many at
// another price than the last fresh one the client got before, how old.
func (r brownoutRun) stale() staleFigures {
	var f staleFigures
	down, healed := r.at(r.sched.StartMs), r.at(r.sched.EndMs)
	byEnd := slices.Clone(r.quotes)
	slices.SortFunc(byEnd, func(a, b brownoutQuote) int { return a.end.Compare(b.end) })
	lastPrice, lastAt := 0, time.Time{}
	for _, q := range byEnd {
		total, stale, age, ok := boreal(q.ans)
		if q.status != http.StatusOK || !ok {
			continue
		}
		if !stale {
			lastPrice, lastAt = total, q.end
			continue
		}
		if q.start.Before(down) || !q.start.Before(healed) {
			continue
		}
		f.n++
		if lastAt.IsZero() || total != lastPrice {
			f.otherPrice++
		}
		f.maxAge = max(f.maxAge, age)
		if !lastAt.IsZero() {
			f.maxClientAge = max(f.maxClientAge, q.end.Sub(lastAt))
		}
	}
	return f
}

// closedAfter is the time from the heal to the breaker closing, as the
// provider saw it: a breaker closes after breaker.DefaultProbes good
// probes, and from then on every quote asks boreal. So it is the end of the
// first DefaultProbes quotes of the final run of quotes that all asked
// boreal (the provider's log of their X-Request-IDs): the probes, answered
// at the latest when their quotes were. "-" when no quote since the outage
// began went without asking boreal (no breaker refused one); "never" when
// the run ends with fewer quotes after the last refused one.
func (r brownoutRun) closedAfter() any {
	down := r.at(r.sched.StartMs)
	last := -1
	for i, q := range r.quotes {
		if q.status == http.StatusOK && !q.start.Before(down) && !q.asked {
			last = i
		}
	}
	if last < 0 {
		return "-"
	}
	var closed time.Time
	n := 0
	for _, q := range r.quotes[last+1:] {
		if q.status != http.StatusOK {
			continue
		}
		if closed.Before(q.end) {
			closed = q.end
		}
		if n++; n == breaker.DefaultProbes {
			return closed.Sub(r.at(r.sched.EndMs)).Milliseconds()
		}
	}
	return "never"
}

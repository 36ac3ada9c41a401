package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/failsafe-go/failsafe-go/adaptivelimiter"
	"github.com/failsafe-go/failsafe-go/priority"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/quoteflow"
	"quoteflowlab.dev/kit/demo"
	"quoteflowlab.dev/provider"
)

// Checkpoint 20's adaptive limiter and failsafe-go's (adaptivelimiter with
// its priority prioritizer) side by side in one run: calls to one supplier
// (boreal) of the provider's capacity schedule, made directly (no
// QuoteFlow), a third of them single quotes' (high priority) and two
// thirds basket lines' (low), each call with the quote's 800 ms deadline.
// Each limiter's limit is set as checkpoint 20 sets a supplier's, in
// [1, 24] from 4, with the package's default wait in line, at most 50 ms
// (QuoteFlow's supplier lines wait longer); each has a provider lab
// of its own (the default seed, the same schedule), and both run at once.

const (
	fsHigh = 20 // single quotes' calls a second
	fsLow  = 40 // basket lines' calls a second
	// fsWait is the longest a call waits in a limiter's line: the
	// checkpoint's adaptive.DefaultQueueTarget.
	fsWait = adaptive.DefaultQueueTarget
	fsMin  = 1
	fsMax  = adaptive.DefaultMax
	fsInit = adaptive.DefaultInitial
)

// A fsCall's outcome.
const (
	fsOK   = iota // 200
	fsShed        // the limiter refused it
	fsFail        // a 503 of the supplier, a timeout, a transport error
)

// fsCall is one call made through a limiter.
type fsCall struct {
	start, end time.Time
	high       bool
	outcome    int
}

func (c fsCall) good() bool { return c.outcome == fsOK && c.end.Sub(c.start) <= demo.QuoteBudget }

// A fsLimiter is one of the two limiters: acquire waits for a slot (a
// shed call: errFsShed), done gives it back with the call's outcome.
type fsLimiter struct {
	name    string
	acquire func(ctx context.Context, high bool) (done func(outcome int), err error)
	limit   func() int
	stop    func()
}

var errFsShed = errors.New("shed")

// checkpointLimiter is checkpoint 20's supplier limiter: quoteflow's
// setLimits without the service around it.
func checkpointLimiter() fsLimiter {
	l, err := adaptive.New(adaptive.Config{Min: fsMin, Max: fsMax, Initial: fsInit, Backoff: quoteflow.SupplierBackoff})
	if err != nil {
		panic(err) // the constants above are a valid Config
	}
	lim := adaptive.NewLimiter(l, adaptive.Queue{Target: fsWait, Kept: adaptive.DefaultKept})
	return fsLimiter{
		name: "checkpoint 20",
		acquire: func(ctx context.Context, high bool) (func(int), error) {
			p := adaptive.Low
			if high {
				p = adaptive.High
			}
			tok, err := lim.Acquire(ctx, p)
			if errors.Is(err, adaptive.ErrShed) {
				return nil, errFsShed
			}
			if err != nil {
				return nil, err
			}
			return func(o int) {
				if o == fsOK {
					tok.Done(adaptive.Success)
				} else {
					tok.Done(adaptive.Dropped)
				}
			}, nil
		},
		limit: l.Current,
		stop:  func() {},
	}
}

// failsafeLimiter is failsafe-go's: an adaptive limiter built prioritized
// (it queues, up to 2-3 x its limit, and rejects by the prioritizer's
// threshold once its queue passes 2 x), the prioritizer calibrated every
// 100 ms. A failed call is dropped (Drop): failsafe-go takes no latency
// sample from it, and has no other use for it.
func failsafeLimiter(ctx context.Context) fsLimiter {
	p := adaptivelimiter.NewPrioritizer()
	cancel := p.ScheduleCalibrations(ctx, 100*time.Millisecond)
	l := adaptivelimiter.NewBuilder[any]().WithLimits(fsMin, fsMax, fsInit).BuildPrioritized(p)
	return fsLimiter{
		name: "failsafe-go",
		acquire: func(ctx context.Context, high bool) (func(int), error) {
			pr := priority.Low
			if high {
				pr = priority.High
			}
			permit, err := l.AcquirePermitWithMaxWait(priority.ContextWithPriority(ctx, pr), fsWait)
			if errors.Is(err, adaptivelimiter.ErrExceeded) {
				return nil, errFsShed
			}
			if err != nil {
				return nil, err
			}
			return func(o int) {
				if o == fsOK {
					permit.Record()
				} else {
					permit.Drop()
				}
			}, nil
		},
		limit: l.Limit,
		stop:  func() { cancel() },
	}
}

// fsRun is what one limiter measured.
type fsRun struct {
	calls []fsCall
	began time.Time // the schedule's start: the run's first call
	trace []limitSample
	sched provider.CapacitySchedule
	err   error
}

func failsafeDemo(ctx context.Context, e *demo.Env, w io.Writer) error {
	lims := []fsLimiter{checkpointLimiter(), failsafeLimiter(ctx)}
	runs := make([]fsRun, len(lims))
	var wg sync.WaitGroup
	for i, l := range lims {
		prov, err := e.ProviderWith(provider.Options{LatencyScale: capacityScale, Seed: provider.DefaultSeed})
		if err != nil {
			return err
		}
		wg.Go(func() { runs[i] = runFailsafe(ctx, prov, l) })
	}
	wg.Wait()
	for _, l := range lims {
		l.stop()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, r := range runs {
		if r.err != nil {
			return fmt.Errorf("%s: %w", lims[i].name, r.err)
		}
	}
	sched := runs[0].sched
	fmt.Fprintf(w, "boreal at capacity (seed %d, latencies x %g: a call takes %d-%d ms; C ", sched.Seed, sched.LatencyScale, sched.BaseMs[0], sched.BaseMs[1])
	for i, s := range sched.Steps {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprintf(w, "%d from %.0f s", s.C, float64(s.FromMs)/1000)
	}
	fmt.Fprintf(w, "), called directly for %.0f s:\n", float64(sched.PeriodMs)/1000)
	fmt.Fprintf(w, "%d single quotes' calls (high) and %d basket lines' (low) a second, each with 800 ms to answer, through\n", fsHigh, fsLow)
	fmt.Fprintf(w, "checkpoint 20's adaptive.Limiter and failsafe-go's adaptivelimiter + priority, both limits in [%d, %d] from %d,\n", fsMin, fsMax, fsInit)
	fmt.Fprintf(w, "a wait in line of at most %d ms; a provider lab each, both at once:\n", fsWait.Milliseconds())
	t := demo.Table{}
	for _, l := range lims {
		t.Columns = append(t.Columns, l.name)
	}
	row := func(label string, f func(r fsRun) any) {
		vals := make([]any, len(runs))
		for i, r := range runs {
			vals[i] = f(r)
		}
		t.Add(label, vals...)
	}
	row("calls", func(r fsRun) any { return len(r.calls) })
	count := func(cs []fsCall, ok func(fsCall) bool) int {
		n := 0
		for _, c := range cs {
			if ok(c) {
				n++
			}
		}
		return n
	}
	for i, s := range sched.Steps {
		label := fmt.Sprintf("C %d (%.0f-%.0f s)", s.C, float64(s.FromMs)/1000, float64(r0end(sched, i))/1000)
		for _, high := range []bool{true, false} {
			who := "low"
			if high {
				who = "high"
			}
			row(label+": "+who+" 200 in time/s", func(r fsRun) any {
				cs, secs := r.phase(i)
				return fmt.Sprintf("%.1f", float64(count(cs, func(c fsCall) bool { return c.high == high && c.good() }))/secs)
			})
		}
		row(label+": high p99 (ms)", func(r fsRun) any {
			cs, _ := r.phase(i)
			return callP99(cs, func(c fsCall) bool { return c.high })
		})
		row(label+": low p99 (ms)", func(r fsRun) any {
			cs, _ := r.phase(i)
			return callP99(cs, func(c fsCall) bool { return !c.high })
		})
		for _, high := range []bool{true, false} {
			who := "low"
			if high {
				who = "high"
			}
			row(label+": "+who+" shed", func(r fsRun) any {
				cs, _ := r.phase(i)
				return count(cs, func(c fsCall) bool { return c.high == high && c.outcome == fsShed })
			})
		}
		row(label+": failed or late", func(r fsRun) any {
			cs, _ := r.phase(i)
			return count(cs, func(c fsCall) bool { return c.outcome != fsShed && !c.good() })
		})
	}
	row("provider: 503 beyond 3 x C", func(r fsRun) any { return r.sched.Shed })
	drop, rise := sched.Steps[1], sched.Steps[2]
	row(fmt.Sprintf("limit at %.0f s (C %d)", float64(drop.FromMs)/1000, sched.Steps[0].C),
		func(r fsRun) any { return r.capRun().limitAt("boreal", drop.FromMs) })
	row(fmt.Sprintf("limit <= %d after (s)", 2*drop.C), func(r fsRun) any {
		return r.capRun().until("boreal", drop.FromMs, func(v int) bool { return v <= 2*drop.C })
	})
	row(fmt.Sprintf("limit at %.0f s (C %d)", float64(rise.FromMs)/1000, drop.C),
		func(r fsRun) any { return r.capRun().limitAt("boreal", rise.FromMs) })
	row(fmt.Sprintf("limit >= %d after (s)", rise.C), func(r fsRun) any {
		return r.capRun().until("boreal", rise.FromMs, func(v int) bool { return v >= rise.C })
	})
	t.Print(w)
	fmt.Fprintln(w, "200 in time: answered 200 within 800 ms of the call's start, a second of the phase (a call's phase is where")
	fmt.Fprintln(w, "its start falls, the schedule starting at the run's first call); p99 over every call of the phase, shed ones")
	fmt.Fprintln(w, "included; shed: refused by the limiter; failed or late: a 503, a timeout, or a 200 past 800 ms; limit: read")
	fmt.Fprintln(w, "every 100 ms")
	return nil
}

// capRun is r as a capacityRun, for its limit readings.
func (r fsRun) capRun() capacityRun {
	return capacityRun{began: r.began, sched: r.sched, trace: r.trace}
}

// phase returns the calls that started in step i of the schedule's first
// period, and the step's length in seconds.
func (r fsRun) phase(i int) ([]fsCall, float64) {
	from, to := r.began.Add(ms64(r.sched.Steps[i].FromMs)), r.began.Add(ms64(r0end(r.sched, i)))
	var out []fsCall
	for _, c := range r.calls {
		if !c.start.Before(from) && c.start.Before(to) {
			out = append(out, c)
		}
	}
	return out, to.Sub(from).Seconds()
}

// callP99 is the p99 latency of the calls keep accepts, in ms.
func callP99(cs []fsCall, keep func(fsCall) bool) any {
	var qs []capQuote
	for _, c := range cs {
		if keep(c) {
			qs = append(qs, capQuote{start: c.start, end: c.end})
		}
	}
	return p99(qs)
}

// runFailsafe calls boreal at fsHigh + fsLow a second through l for one
// period of the schedule, reading l's limit every capacityPoll.
func runFailsafe(ctx context.Context, prov *provider.Server, l fsLimiter) fsRun {
	var r fsRun
	prov.Provider.Reset()
	client := &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 256}, Timeout: demo.RequestTimeout}
	defer client.CloseIdleConnections()
	period := time.Duration(30*capacityScale) * time.Second
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(capacityPoll)
		defer tick.Stop()
		for {
			s := limitSample{at: time.Now(), limits: map[string]int{"boreal": l.limit()}}
			mu.Lock()
			r.trace = append(r.trace, s)
			mu.Unlock()
			select {
			case <-tick.C:
			case <-stop:
				return
			case <-ctx.Done():
				return
			}
		}
	})
	start := time.Now()
	r.began = start
	every := time.Second / (fsHigh + fsLow)
	for n := 0; ; n++ {
		next := start.Add(time.Duration(n) * every)
		if next.Sub(start) >= period || demo.Pause(ctx, time.Until(next)) != nil {
			break
		}
		high := n%((fsHigh+fsLow)/fsHigh) == 0
		wg.Go(func() {
			c := fsCall{start: time.Now(), high: high}
			c.outcome = callThrough(ctx, client, prov.URL, l, high)
			c.end = time.Now()
			mu.Lock()
			r.calls = append(r.calls, c)
			mu.Unlock()
		})
	}
	sent := func() int { mu.Lock(); defer mu.Unlock(); return len(r.calls) }
	for sent() < int(period/every) && ctx.Err() == nil && time.Since(start) < period+demo.RequestTimeout {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if r.err = ctx.Err(); r.err != nil {
		return r
	}
	slices.SortFunc(r.calls, func(a, b fsCall) int { return a.start.Compare(b.start) })
	var st provider.Stats
	if _, _, r.err = demo.Do(ctx, http.MethodGet, prov.URL+"/stats", nil, &st); r.err != nil {
		return r
	}
	r.sched = st.Scenarios.Capacity
	return r
}

// callThrough makes one call to boreal through l, with the quote's
// deadline.
func callThrough(ctx context.Context, client *http.Client, base string, l fsLimiter, high bool) int {
	ctx, cancel := context.WithTimeout(ctx, demo.QuoteBudget)
	defer cancel()
	done, err := l.acquire(ctx, high)
	if err != nil {
		return fsShed // shed, or the deadline passed in line
	}
	o := fsFail
	defer func() { done(o) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/quotes/boreal?sku=KB-001&scenario=capacity", nil)
	if err != nil {
		return o
	}
	resp, err := client.Do(req)
	if err != nil {
		return o
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err == nil && resp.StatusCode == http.StatusOK {
		o = fsOK
	}
	return o
}

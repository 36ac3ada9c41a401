package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/kit/api"
	"quoteflowlab.dev/kit/demo"
	"quoteflowlab.dev/kit/load"
	"quoteflowlab.dev/provider"
)

func basket50(ctx context.Context, e *demo.Env, w io.Writer) error {
	bin, err := e.Build(ctx, 16, "")
	if err != nil {
		return err
	}
	prov, err := e.Provider()
	if err != nil {
		return err
	}
	qf, err := e.Quoteflow(ctx, bin, prov.URL)
	if err != nil {
		return err
	}
	b, status, took, err := demo.PostBasket(ctx, qf.URL, 50, "normal")
	if err != nil {
		return err
	}
	st, err := demo.Stats(ctx, prov.URL)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "one basket of 50 lines at normal (150 supplier calls); checkpoint 16, one limit of 6 for the process")
	t := demo.Table{Columns: []string{"checkpoint 16"}}
	t.Add("HTTP status", status)
	t.Add("line statuses", demo.LineStatuses(b))
	t.Add("failure codes", demo.FailureCodes(b))
	t.Add("pending (queued)", b.Pending)
	t.Add("answered after (ms)", demo.MS(took))
	t.Add("supplier calls (provider)", st.Total)
	t.Add("max_active (provider)", st.MaxActive)
	t.Add("calls per second", fmt.Sprintf("%.0f", float64(st.Total)/took.Seconds()))
	t.Print(w)
	return nil
}

func slowBasket(ctx context.Context, e *demo.Env, w io.Writer) error {
	setups := []demo.Setup{{Column: "checkpoint"}, {Column: "deadline_without_cancel", Mutant: "deadline_without_cancel"}}
	bins, err := e.BuildAll(ctx, 16, setups)
	if err != nil {
		return err
	}
	t := demo.Table{Columns: demo.Columns(setups)}
	rows := map[string][]any{}
	order := []string{"HTTP status", "answered after (s)", "line statuses", "failure codes", "active right after the answer",
		"boreal calls right after", "boreal calls 1.5 s later", "abandoned 1.5 s later", "client_gone 1.5 s later"}
	for i := range setups {
		prov, err := e.Provider()
		if err != nil {
			return err
		}
		qf, err := e.Quoteflow(ctx, bins[i], prov.URL)
		if err != nil {
			return err
		}
		b, status, took, err := demo.PostBasket(ctx, qf.URL, 3, "slow")
		if err != nil {
			return err
		}
		now, err := demo.Stats(ctx, prov.URL)
		if err != nil {
			return err
		}
		if err := demo.Pause(ctx, 1500*time.Millisecond); err != nil {
			return err
		}
		later, err := demo.Stats(ctx, prov.URL)
		if err != nil {
			return err
		}
		for k, v := range map[string]any{
			"HTTP status": status, "answered after (s)": demo.Secs(took), "line statuses": demo.LineStatuses(b), "failure codes": demo.FailureCodes(b),
			"active right after the answer": now.Active, "boreal calls right after": now.PerSupplier.Boreal,
			"boreal calls 1.5 s later": later.PerSupplier.Boreal, "abandoned 1.5 s later": later.Abandoned,
			"client_gone 1.5 s later": later.ClientGone,
		} {
			rows[k] = append(rows[k], v)
		}
	}
	fmt.Fprintln(w, "a basket of 3 lines at slow (boreal needs 1.5 s, each call is cut at 1 s; the basket's deadline is 2 s);")
	fmt.Fprintln(w, "the provider's /stats right after the answer and 1.5 s later")
	for _, k := range order {
		t.Add(k, rows[k]...)
	}
	t.Print(w)
	return nil
}

func outageDemo(ctx context.Context, e *demo.Env, w io.Writer) error {
	bin, err := e.Build(ctx, 16, "")
	if err != nil {
		return err
	}
	prov, err := e.Provider()
	if err != nil {
		return err
	}
	qf, err := e.Quoteflow(ctx, bin, prov.URL)
	if err != nil {
		return err
	}
	b, status, took, err := demo.PostBasket(ctx, qf.URL, 4, "outage")
	if err != nil {
		return err
	}
	start := time.Now()
	var later api.Answer
	for {
		if later, err = demo.GetBasket(ctx, qf.URL, b.BasketID); err != nil {
			return err
		}
		if later.Pending == 0 || time.Since(start) > 15*time.Second {
			break
		}
		if err := demo.Pause(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
	drained := time.Since(start) + took
	var comp struct {
		Pending, Leased, Done, Dead int
	}
	if _, _, err := demo.Do(ctx, "GET", qf.URL+"/api/compensation", nil, &comp); err != nil {
		return err
	}
	attempts, once := 0, 0
	for _, it := range b.Items {
		rs, err := demo.RequestLog(ctx, prov.URL, it.RequestID)
		if err != nil {
			return err
		}
		attempts += int(rs.Attempts.Boreal)
		n := 0
		for _, a := range rs.Log.Boreal {
			if a.Status == 200 {
				n++
			}
		}
		if n == 1 {
			once++
		}
	}
	fmt.Fprintln(w, "a basket of 4 lines at outage (boreal answers 503 for 1.5 s); checkpoint 16")
	t := demo.Table{Columns: []string{"checkpoint 16"}}
	t.Add("HTTP status", status)
	t.Add("answered after (ms)", demo.MS(took))
	t.Add("line statuses in the answer", demo.LineStatuses(b))
	t.Add("failure codes in the answer", demo.FailureCodes(b))
	t.Add("pending in the answer", b.Pending)
	t.Add("pending 0 after (s)", demo.Secs(drained))
	t.Add("line statuses then", demo.LineStatuses(later))
	t.Add("compensation done", comp.Done)
	t.Add("compensation dead", comp.Dead)
	t.Add("boreal attempts, all lines", attempts)
	t.Add("lines with exactly one boreal 200", once)
	t.Print(w)
	return nil
}

func rateLimited16(ctx context.Context, e *demo.Env, w io.Writer) error {
	setups := []demo.Setup{{Column: "checkpoint"}, {Column: "ignores_retry_after", Mutant: "ignores_retry_after"}}
	bins, err := e.BuildAll(ctx, 16, setups)
	if err != nil {
		return err
	}
	rows := map[string][]any{}
	order := []string{"line statuses", "failure codes", "pending (queued)", "answered after (ms)", "boreal calls", "429s sent", "early_retries"}
	for i := range setups {
		prov, err := e.Provider()
		if err != nil {
			return err
		}
		qf, err := e.Quoteflow(ctx, bins[i], prov.URL)
		if err != nil {
			return err
		}
		b, _, took, err := demo.PostBasket(ctx, qf.URL, 20, "ratelimited")
		if err != nil {
			return err
		}
		st, err := demo.Stats(ctx, prov.URL)
		if err != nil {
			return err
		}
		for k, v := range map[string]any{
			"line statuses": demo.LineStatuses(b), "failure codes": demo.FailureCodes(b), "pending (queued)": b.Pending, "answered after (ms)": demo.MS(took),
			"boreal calls": st.PerSupplier.Boreal, "429s sent": st.RateLimited, "early_retries": st.EarlyRetries,
		} {
			rows[k] = append(rows[k], v)
		}
	}
	fmt.Fprintln(w, "a basket of 20 lines at ratelimited (boreal admits 5 requests in any 200 ms, else 429 with Retry-After-Ms);")
	fmt.Fprintln(w, "early_retries: requests the provider saw before the Retry-After-Ms of their last 429")
	t := demo.Table{Columns: demo.Columns(setups)}
	for _, k := range order {
		t.Add(k, rows[k]...)
	}
	t.Print(w)
	return nil
}

func jitter(ctx context.Context, e *demo.Env, w io.Writer) error {
	setups := []demo.Setup{{Column: "checkpoint"}, {Column: "no_jitter", Mutant: "no_jitter"}}
	bins, err := e.BuildAll(ctx, 16, setups)
	if err != nil {
		return err
	}
	caps := []float64{50, 100}
	rows := map[string][]any{}
	var order []string
	var hists []string
	for i, s := range setups {
		prov, err := e.Provider()
		if err != nil {
			return err
		}
		qf, err := e.Quoteflow(ctx, bins[i], prov.URL)
		if err != nil {
			return err
		}
		// One basket at a time: its 6 calls fit the 6 slots, so a wait is
		// the backoff alone, not time in line for a slot.
		var ids []string
		for range 6 {
			b, _, _, err := demo.PostBasket(ctx, qf.URL, 2, "outage")
			if err != nil {
				return err
			}
			for _, it := range b.Items {
				ids = append(ids, it.RequestID)
			}
		}
		waits := make([][]float64, len(caps))
		for _, id := range ids {
			rs, err := demo.RequestLog(ctx, prov.URL, id)
			if err != nil {
				return err
			}
			waits = addWaits(waits, rs.Log.Boreal)
		}
		order = nil
		for k, c := range caps {
			ws := waits[k]
			short, nearCap := math.Inf(1), 0
			for _, v := range ws {
				short = math.Min(short, v)
				if v >= c-2 {
					nearCap++
				}
			}
			if len(ws) == 0 {
				short = 0
			}
			label := fmt.Sprintf("retry %d (drawn from [0, %g] ms)", k+1, c)
			add := func(name string, v any) {
				rows[label+": "+name] = append(rows[label+": "+name], v)
				order = append(order, label+": "+name)
			}
			add("retries", len(ws))
			add("shortest wait (ms)", fmt.Sprintf("%.0f", short))
			add(fmt.Sprintf("waits of %g ms or more", c-2), nearCap)
			hists = append(hists, histogram(fmt.Sprintf("%s, retry %d: ms between the 503 and the retry (full jitter: uniform in [0, %g])", s.Column, k+1, c), ws, c))
		}
	}
	fmt.Fprintln(w, "six 2-line baskets, one after the other, at outage (boreal answers 503 at once); from the provider's own")
	fmt.Fprintln(w, "arrival stamps (/stats/requests), the wait between each boreal 503 and its retry")
	t := demo.Table{Columns: demo.Columns(setups)}
	for _, k := range order {
		t.Add(k, rows[k]...)
	}
	t.Print(w)
	for _, h := range hists {
		fmt.Fprintln(w)
		fmt.Fprint(w, h)
	}
	return nil
}

// addWaits adds the waits before each retry of one line's attempts:
// arrival of attempt k+1 minus the end of attempt k.
func addWaits(waits [][]float64, log []provider.Attempt) [][]float64 {
	for k := 1; k < len(log) && k <= len(waits); k++ {
		prev := log[k-1]
		waits[k-1] = append(waits[k-1], log[k].ArrivalMs-(prev.ArrivalMs+prev.DurationMs))
	}
	return waits
}

func histogram(title string, ws []float64, top float64) string {
	var sb strings.Builder
	fmt.Fprintln(&sb, title)
	n := int(top/10) + 1
	bins := make([]int, n+1)
	for _, v := range ws {
		i := int(math.Max(v, 0) / 10)
		bins[min(i, n)]++
	}
	for i, c := range bins {
		label := fmt.Sprintf("%3d-%d", i*10, i*10+9)
		if i == n {
			label = fmt.Sprintf("%3d+", i*10)
			if c == 0 {
				continue
			}
		}
		fmt.Fprintf(&sb, "    %-8s %s\n", label, strings.Repeat("#", c))
	}
	return sb.String()
}

func sharedLimit(ctx context.Context, e *demo.Env, w io.Writer) error {
	setups := []demo.Setup{{Column: "checkpoint"}, {Column: "limiter_per_run", Mutant: "limiter_per_run"}}
	bins, err := e.BuildAll(ctx, 16, setups)
	if err != nil {
		return err
	}
	rows := map[string][]any{}
	order := []string{"baskets' answers", "basket 0 lines", "basket 1 lines", "baskets' pending (queued)", "single quotes' answers", "single quotes with a best offer",
		"single quotes' failure codes", "supplier calls (provider)", "max_active (provider)"}
	for i := range setups {
		prov, err := e.Provider()
		if err != nil {
			return err
		}
		qf, err := e.Quoteflow(ctx, bins[i], prov.URL)
		if err != nil {
			return err
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		baskets := make([]api.Answer, 2)
		bStatus := map[string]int{}
		qStatus := map[string]int{}
		codes := map[string]int{}
		best := 0
		var firstErr error
		for k := range baskets {
			wg.Go(func() {
				b, status, _, err := demo.PostBasket(ctx, qf.URL, 50, "normal")
				mu.Lock()
				defer mu.Unlock()
				baskets[k] = b
				bStatus[demo.StatusText(status, b.Detail)]++
				if err != nil && firstErr == nil {
					firstErr = err
				}
			})
		}
		// The quotes in four waves of 6: with the two baskets, 8 requests in
		// flight, the inbound limit (lesson 13), so none is turned away at the door.
		if err := demo.Pause(ctx, 50*time.Millisecond); err != nil {
			return err
		}
		for range 4 {
			var wave sync.WaitGroup
			for range 6 {
				wave.Go(func() {
					q, status, _, err := demo.PostQuote(ctx, qf.URL, "normal")
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						qStatus["no answer"]++
						return
					}
					qStatus[demo.StatusText(status, q.Detail)]++
					if len(q.Quotes) > 0 {
						best++
					}
					for _, f := range q.Failures {
						codes[f.Code]++
					}
				})
			}
			wave.Wait()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		st, err := demo.Stats(ctx, prov.URL)
		if err != nil {
			return err
		}
		for k, v := range map[string]any{
			"baskets' answers": load.Counts(bStatus), "single quotes' answers": load.Counts(qStatus),
			"basket 0 lines": demo.LineStatuses(baskets[0]), "basket 1 lines": demo.LineStatuses(baskets[1]),
			"baskets' pending (queued)":       baskets[0].Pending + baskets[1].Pending,
			"single quotes with a best offer": best, "single quotes' failure codes": load.Counts(codes),
			"supplier calls (provider)": st.Total, "max_active (provider)": st.MaxActive,
		} {
			rows[k] = append(rows[k], v)
		}
	}
	fmt.Fprintln(w, "two baskets of 50 lines at normal sent at once to one checkpoint 16 process, and while they run 24 single")
	fmt.Fprintln(w, "quotes, 6 at a time (8 requests in flight: the inbound limit);")
	fmt.Fprintln(w, "the checkpoint (one limiter for the process) vs limiter_per_run (a limiter of 6 per basket)")
	t := demo.Table{Columns: demo.Columns(setups)}
	for _, k := range order {
		t.Add(k, rows[k]...)
	}
	t.Print(w)
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/kit/api"
	"quoteflowlab.dev/kit/demo"
	"quoteflowlab.dev/kit/load"
	"quoteflowlab.dev/provider"
)

// leasesKey is checkpoint 17's sorted set of leases (quota.DefaultPrefix).
const leasesKey = "{quoteflow}:leases"

// three starts three checkpoint 17 processes on prov, with extra flags.
func three(ctx context.Context, e *demo.Env, bin, prov string, extra ...string) ([]*demo.Proc, error) {
	ps := make([]*demo.Proc, 3)
	for i := range ps {
		p, err := e.Quoteflow(ctx, bin, prov, extra...)
		if err != nil {
			return nil, err
		}
		fmt.Fprintln(e.Log, p.First)
		ps[i] = p
	}
	return ps, nil
}

// quotes sends n quotes at scenario to each process at once and counts the
// answers' statuses and failure codes.
func quotes(ctx context.Context, ps []*demo.Proc, n int, scenario string) (statuses, codes map[string]int) {
	var mu sync.Mutex
	statuses, codes = map[string]int{}, map[string]int{}
	var wg sync.WaitGroup
	for _, p := range ps {
		for range n {
			wg.Go(func() {
				q, status, _, err := demo.PostQuote(ctx, p.URL, scenario)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					statuses["error"]++
					return
				}
				statuses[fmt.Sprint(status)]++
				for _, f := range q.Failures {
					codes[f.Code]++
				}
			})
		}
	}
	wg.Wait()
	return statuses, codes
}

func threeProcesses(ctx context.Context, e *demo.Env, w io.Writer) error {
	bin, err := e.Build(ctx, 17, "")
	if err != nil {
		return err
	}
	rows := map[string][]any{}
	order := []string{"responses", "failure codes", "supplier calls (provider)", "max_active (provider)", "provider statuses"}
	for _, shared := range []bool{false, true} {
		prov, err := e.Provider()
		if err != nil {
			return err
		}
		var extra []string
		if shared {
			r, err := e.Redis(ctx)
			if err != nil {
				return err
			}
			extra = []string{"--redis", r.URL()}
		}
		ps, err := three(ctx, e, bin, prov.URL, extra...)
		if err != nil {
			return err
		}
		statuses, codes := quotes(ctx, ps, 12, "slow")
		st, err := demo.Stats(ctx, prov.URL)
		if err != nil {
			return err
		}
		ps64 := map[string]int{}
		for k, v := range st.PerStatus {
			ps64[k] = int(v)
		}
		for k, v := range map[string]any{
			"responses": load.Counts(statuses), "failure codes": load.Counts(codes), "supplier calls (provider)": st.Total,
			"max_active (provider)": st.MaxActive, "provider statuses": load.Counts(ps64),
		} {
			rows[k] = append(rows[k], v)
		}
		for _, p := range ps {
			p.Kill()
		}
	}
	fmt.Fprintln(w, "three checkpoint 17 processes, 12 quotes at slow sent at once to each (36 in all); first each with its")
	fmt.Fprintln(w, "own limit of 6 (no --redis), then all three on one redis-server (--redis): one quota of 6")
	t := demo.Table{Columns: []string{"local limits", "one Redis quota"}}
	for _, k := range order {
		t.Add(k, rows[k]...)
	}
	t.Print(w)
	return nil
}

func kill9(ctx context.Context, e *demo.Env, w io.Writer) error {
	setups := []demo.Setup{{Column: "checkpoint 17"}, {Column: "no_ttl", Mutant: "no_ttl"}}
	bins, err := e.BuildAll(ctx, 17, setups)
	if err != nil {
		return err
	}
	rows := map[string][]any{}
	order := []string{"leases the killed process held", "its leases expired after (s)", "others held 6 again after (s)", "most leases held at once"}
	for i := range setups {
		vals, err := kill9Run(ctx, e, bins[i])
		if err != nil {
			return err
		}
		for k, v := range vals {
			rows[k] = append(rows[k], v)
		}
	}
	fmt.Fprintln(w, "three checkpoint 17 processes on one redis-server (a quota of 6, leases with a TTL of 2 s renewed every")
	fmt.Fprintln(w, "TTL/3), under steady slow load (8, 3 and 3 quotes in flight); the first is killed with kill -9 once it holds 2 or more leases.")
	fmt.Fprintln(w, "Witness: the lease set itself, sampled every 5 ms on Redis's clock; no_ttl: leases that never expire")
	t := demo.Table{Columns: demo.Columns(setups)}
	for _, k := range order {
		t.Add(k, rows[k]...)
	}
	t.Print(w)
	return nil
}

func kill9Run(ctx context.Context, e *demo.Env, bin string) (map[string]any, error) {
	prov, err := e.Provider()
	if err != nil {
		return nil, err
	}
	r, err := e.Redis(ctx)
	if err != nil {
		return nil, err
	}
	ps, err := three(ctx, e, bin, prov.URL, "--redis", r.URL())
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()

	// held counts the leases per owner (a process's random prefix of its
	// lease IDs) whose expiry, on Redis's clock, has not passed.
	held := func() (map[string]int, error) {
		t, err := rdb.Time(ctx).Result()
		if err != nil {
			return nil, err
		}
		zs, err := rdb.ZRangeByScoreWithScores(ctx, leasesKey, &redis.ZRangeBy{Min: fmt.Sprint(t.UnixMilli() + 1), Max: "+inf"}).Result()
		if err != nil {
			return nil, err
		}
		out := map[string]int{}
		for _, z := range zs {
			owner, _, _ := strings.Cut(fmt.Sprint(z.Member), ":")
			out[owner]++
		}
		return out, nil
	}
	// poll samples held every 5 ms until done says so or limit passes.
	poll := func(limit time.Duration, done func(map[string]int) bool) (map[string]int, bool, error) {
		start := time.Now()
		for {
			h, err := held()
			if err != nil || done(h) {
				return h, err == nil, err
			}
			if time.Since(start) > limit {
				return h, false, nil
			}
			if err := demo.Pause(ctx, 5*time.Millisecond); err != nil {
				return nil, false, err
			}
		}
	}

	// Steady load: 8, 3 and 3 slow quotes in flight, each answer followed
	// by the next. The first process starts alone, so the first owner seen
	// in the lease set is its.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopLoad()
	start := func(i, n int) {
		for range n {
			wg.Go(func() {
				for loadCtx.Err() == nil {
					demo.PostQuote(loadCtx, ps[i].URL, "slow")
				}
			})
		}
	}
	start(0, 8)
	h, ok, err := poll(5*time.Second, func(h map[string]int) bool { return len(h) > 0 })
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("the first process took no lease within 5 s")
	}
	var victim string
	for owner := range h {
		victim = owner
	}
	start(1, 3)
	start(2, 3)
	if err := demo.Pause(ctx, 1500*time.Millisecond); err != nil {
		return nil, err
	}
	// Kill it while it holds at least two leases.
	atKill, _, err := poll(5*time.Second, func(h map[string]int) bool { return h[victim] >= 2 })
	if err != nil {
		return nil, err
	}
	killedAt := time.Now()
	ps[0].Kill()
	var most int
	var expired, back time.Duration
	for time.Since(killedAt) < 4*time.Second {
		h, err := held()
		if err != nil {
			return nil, err
		}
		at := time.Since(killedAt)
		total, others := 0, 0
		for owner, n := range h {
			total += n
			if owner != victim {
				others += n
			}
		}
		most = max(most, total)
		if h[victim] == 0 && expired == 0 {
			expired = at
		}
		if others == 6 && back == 0 && expired != 0 {
			back = at
		}
		if expired != 0 && back != 0 && at > expired+500*time.Millisecond {
			break
		}
		if err := demo.Pause(ctx, 5*time.Millisecond); err != nil {
			return nil, err
		}
	}
	stopLoad()
	for _, p := range ps[1:] {
		p.Kill()
	}
	return map[string]any{
		"leases the killed process held": atKill[victim], "its leases expired after (s)": orNever(expired),
		"others held 6 again after (s)": orNever(back), "most leases held at once": most,
	}, nil
}

func orNever(d time.Duration) string {
	if d == 0 {
		return "never (4 s)"
	}
	return demo.Secs(d)
}

func rateLimited17(ctx context.Context, e *demo.Env, w io.Writer) error {
	bin, err := e.Build(ctx, 17, "")
	if err != nil {
		return err
	}
	rows := map[string][]any{}
	order := []string{"responses", "failure codes", "supplier calls (provider)", "429s sent (provider)"}
	for _, shared := range []bool{false, true} {
		prov, err := e.Provider()
		if err != nil {
			return err
		}
		var extra []string
		if shared {
			r, err := e.Redis(ctx)
			if err != nil {
				return err
			}
			extra = []string{"--redis", r.URL(), "--rate", "5/250ms"}
		}
		ps, err := three(ctx, e, bin, prov.URL, extra...)
		if err != nil {
			return err
		}
		statuses, codes := map[string]int{}, map[string]int{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 8 { // a burst every 750 ms for 6 s
			wg.Go(func() {
				s, c := quotes(ctx, ps, 4, "ratelimited")
				mu.Lock()
				defer mu.Unlock()
				for k, v := range s {
					statuses[k] += v
				}
				for k, v := range c {
					codes[k] += v
				}
			})
			if err := demo.Pause(ctx, 750*time.Millisecond); err != nil {
				return err
			}
		}
		wg.Wait()
		st, err := demo.Stats(ctx, prov.URL)
		if err != nil {
			return err
		}
		for k, v := range map[string]any{
			"responses": load.Counts(statuses), "failure codes": load.Counts(codes), "supplier calls (provider)": st.Total,
			"429s sent (provider)": st.RateLimited,
		} {
			rows[k] = append(rows[k], v)
		}
		for _, p := range ps {
			p.Kill()
		}
	}
	fmt.Fprintln(w, "three checkpoint 17 processes; a burst of 12 quotes at ratelimited (4 to each) every 750 ms for 6 s;")
	fmt.Fprintln(w, "boreal admits 5 requests in any 200 ms. First local limits only, then one Redis with --rate 5/250ms")
	t := demo.Table{Columns: []string{"local limits", "Redis, --rate 5/250ms"}}
	for _, k := range order {
		t.Add(k, rows[k]...)
	}
	t.Print(w)
	return nil
}

func redisOutage(ctx context.Context, e *demo.Env, w io.Writer) error {
	bin, err := e.Build(ctx, 17, "")
	if err != nil {
		return err
	}
	prov, err := e.Provider()
	if err != nil {
		return err
	}
	r, err := e.Redis(ctx)
	if err != nil {
		return err
	}
	p, err := e.Quoteflow(ctx, bin, prov.URL, "--redis", r.URL())
	if err != nil {
		return err
	}
	fmt.Fprintln(e.Log, p.First)
	one := func() (string, string, time.Duration, error) {
		q, status, took, err := demo.PostQuote(ctx, p.URL, "normal")
		if err != nil {
			return "", "", took, err
		}
		m := map[string]int{}
		for _, f := range q.Failures {
			m[f.Code]++
		}
		return fmt.Sprintf("%d, %d quotes", status, len(q.Quotes)), load.Counts(m), took, nil
	}
	beforeS, beforeC, _, err := one()
	if err != nil {
		return err
	}
	r.Stop()
	before, err := demo.Stats(ctx, prov.URL)
	if err != nil {
		return err
	}
	downS, downC, downTook, err := one()
	if err != nil {
		return err
	}
	after, err := demo.Stats(ctx, prov.URL)
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	started := time.Now()
	var backAfter time.Duration
	for time.Since(started) < 10*time.Second {
		q, status, _, err := demo.PostQuote(ctx, p.URL, "normal")
		if err == nil && status == 200 && len(q.Failures) == 0 && len(q.Quotes) > 0 {
			backAfter = time.Since(started)
			break
		}
		if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	kind := "redis-server"
	if !r.Real {
		kind = "the embedded stand-in (no redis-server installed)"
	}
	fmt.Fprintf(w, "one checkpoint 17 process on %s; one quote at normal before, one with Redis killed, then\n", kind)
	fmt.Fprintln(w, "Redis started again on the same port, empty, and a quote every 20 ms until one is complete")
	t := demo.Table{Columns: []string{"checkpoint 17"}}
	t.Add("before: status", beforeS)
	t.Add("before: failure codes", beforeC)
	t.Add("Redis down: status", downS)
	t.Add("Redis down: failure codes", downC)
	t.Add("Redis down: answered in (s)", fmt.Sprintf("%.3f", downTook.Seconds()))
	t.Add("Redis down: supplier calls", after.Total-before.Total)
	t.Add("first complete quote after (s)", orNever(backAfter))
	t.Print(w)
	return nil
}

// postQuoteQty asks for one quote of KB-001 at scenario, of quantity qty.
func postQuoteQty(ctx context.Context, qf, scenario string, qty int) (api.Answer, int, error) {
	body, _ := json.Marshal(map[string]any{"sku": "KB-001", "quantity": qty, "scenario": scenario})
	var q api.Answer
	status, _, err := demo.Do(ctx, http.MethodPost, qf+"/api/quotes", body, &q)
	return q, status, err
}

func costQuota(ctx context.Context, e *demo.Env, w io.Writer) error {
	bin, err := e.Build(ctx, 17, "")
	if err != nil {
		return err
	}
	columns := []string{"quota of calls", "quota of cost"}
	flags := [][]string{{"--rate", "20/1100ms"}, {"--rate", "100/1100ms", "--rate-by", "quantity"}}
	rows := map[string][]any{}
	order := []string{"quotes", "boreal quoted", "failures", "provider statuses", "cost_limited (provider)", "cost_admitted (provider)"}
	for _, extra := range flags {
		prov, err := e.Provider()
		if err != nil {
			return err
		}
		r, err := e.Redis(ctx)
		if err != nil {
			return err
		}
		ps, err := three(ctx, e, bin, prov.URL, append([]string{"--redis", r.URL()}, extra...)...)
		if err != nil {
			return err
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sizes, failures := map[int]int{}, map[string]int{}
		quoted := 0
		n := 0
		for range 16 { // every 250 ms for 4 s, one quote to each process
			for _, p := range ps {
				qty := 2
				if n%4 == 3 {
					qty = 40
				}
				n++
				sizes[qty]++
				wg.Go(func() {
					q, status, err := postQuoteQty(ctx, p.URL, "costlimited", qty)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						failures["error"]++
						return
					}
					if status != http.StatusOK {
						failures[fmt.Sprint("http ", status)]++
					}
					for _, x := range q.Quotes {
						if x.Supplier == "boreal" {
							quoted++
						}
					}
					for _, f := range q.Failures {
						failures[f.Supplier+" "+f.Code]++
					}
				})
			}
			if err := demo.Pause(ctx, 250*time.Millisecond); err != nil {
				return err
			}
		}
		wg.Wait()
		var st provider.Stats
		if _, _, err := demo.Do(ctx, http.MethodGet, prov.URL+"/stats", nil, &st); err != nil {
			return err
		}
		ps64 := map[string]int{}
		for k, v := range st.PerStatus {
			ps64[k] = int(v)
		}
		for k, v := range map[string]any{
			"quotes":                   fmt.Sprintf("%d (%d of 40)", n, sizes[40]),
			"boreal quoted":            quoted,
			"failures":                 load.Counts(failures),
			"provider statuses":        load.Counts(ps64),
			"cost_limited (provider)":  st.CostLimited,
			"cost_admitted (provider)": st.CostAdmitted,
		} {
			rows[k] = append(rows[k], v)
		}
		for _, p := range ps {
			p.Kill()
		}
		r.Stop()
	}
	fmt.Fprintln(w, "three checkpoint 17 processes on one Redis, at costlimited (boreal admits 100 units of quantity in")
	fmt.Fprintln(w, "any 1000 ms); every 250 ms for 4 s one quote to each process, of quantity 2, 2, 2, then 40 in turn.")
	fmt.Fprintln(w, "First a quota of calls (--rate 20/1100ms), then a quota of cost (--rate 100/1100ms --rate-by quantity)")
	t := demo.Table{Columns: columns}
	for _, k := range order {
		t.Add(k, rows[k]...)
	}
	t.Print(w)
	return nil
}

// streamKey and streamGroup are checkpoint 17's compensation stream and
// its consumer group (queue.StreamConfig's defaults).
const (
	streamKey   = "{quoteflow}:jobs:stream"
	streamGroup = "compensation"
)

// queueCounts is the body of checkpoint 17's GET /api/compensation.
type queueCounts struct {
	Pending int `json:"pending"`
	Leased  int `json:"leased"`
	Done    int `json:"done"`
	Dead    int `json:"dead"`
}

// queuedJob is one supplier call of a basket line that the answer queued.
type queuedJob struct{ requestID, supplier string }

func streamsClaim(ctx context.Context, e *demo.Env, w io.Writer) error {
	bin, err := e.Build(ctx, 17, "")
	if err != nil {
		return err
	}
	prov, err := e.ProviderScaled(0.6)
	if err != nil {
		return err
	}
	r, err := e.Redis(ctx)
	if err != nil {
		return err
	}
	flags := []string{"--redis", r.URL(), "--queue-visibility", "2s"}
	a, err := e.Quoteflow(ctx, bin, prov.URL, flags...)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer rdb.Close()

	// A first basket at normal loads the scripts into the fresh Redis: on a
	// busy machine the very first write can take longer than the 250 ms a
	// basket's store write has, and is answered store_unavailable.
	for try := 1; ; try++ {
		_, status, _, err := demo.PostBasket(ctx, a.URL, 1, "")
		if err == nil && status == http.StatusOK {
			break
		}
		if try == 3 {
			return fmt.Errorf("a 1-line basket at normal: status %d, %v", status, err)
		}
	}
	b, status, _, err := demo.PostBasket(ctx, a.URL, 20, "slow")
	if err != nil {
		return err
	}
	if status != http.StatusOK && status != http.StatusAccepted {
		return fmt.Errorf("the basket answered %d: %s", status, b.Detail)
	}
	var jobs []queuedJob
	var full api.Answer
	if _, _, err := demo.Do(ctx, http.MethodGet, a.URL+"/api/baskets/"+b.BasketID, nil, &full); err != nil {
		return err
	}
	for _, it := range full.Items {
		for _, f := range it.Failures {
			if f.Queued {
				jobs = append(jobs, queuedJob{it.RequestID, f.Supplier})
			}
		}
	}
	if len(jobs) == 0 {
		return fmt.Errorf("the basket queued nothing (statuses %s)", demo.LineStatuses(b))
	}

	// Kill A as soon as its consumer holds jobs it has not finished.
	var held int64
	var owner string
	for start := time.Now(); ; {
		x, err := rdb.XPending(ctx, streamKey, streamGroup).Result()
		if err != nil {
			return err
		}
		if x.Count > 0 {
			held = x.Count
			for c := range x.Consumers {
				owner = c
			}
			break
		}
		if time.Since(start) > 10*time.Second {
			return fmt.Errorf("A's worker took no job within 10 s")
		}
		if err := demo.Pause(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
	a.Kill()
	killed := time.Now()

	bp, err := e.Quoteflow(ctx, bin, prov.URL, flags...)
	if err != nil {
		return err
	}
	var claimed, finished time.Duration
	var qc queueCounts
	for time.Since(killed) < 30*time.Second {
		x, err := rdb.XPending(ctx, streamKey, streamGroup).Result()
		if err != nil {
			return err
		}
		if claimed == 0 && x.Consumers[owner] == 0 {
			claimed = time.Since(killed)
		}
		if _, _, err := demo.Do(ctx, http.MethodGet, bp.URL+"/api/compensation", nil, &qc); err != nil {
			return err
		}
		if qc.Pending == 0 && qc.Leased == 0 {
			finished = time.Since(killed)
			break
		}
		if err := demo.Pause(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	after, err := demo.GetBasket(ctx, bp.URL, b.BasketID)
	if err != nil {
		return err
	}
	// The provider's own log: how many 200s each queued call got.
	oks := map[int]int{}
	for _, j := range jobs {
		rs, err := demo.RequestLog(ctx, prov.URL, j.requestID)
		if err != nil {
			return err
		}
		n := 0
		for _, at := range api.Attempts(rs.Log, j.supplier) {
			if at.Status == http.StatusOK {
				n++
			}
		}
		oks[n]++
	}
	bp.Kill()

	fmt.Fprintln(w, "process A (checkpoint 17, --redis, --queue-visibility 2s) answers a 20-line basket at slow (provider")
	fmt.Fprintln(w, "--latency-scale 0.6) and is killed with kill -9 once its worker holds queued jobs; process B, started")
	fmt.Fprintln(w, "then on the same Redis, claims them. Witness: the stream's pending list, and the provider's log per call")
	t := demo.Table{Columns: []string{"checkpoint 17"}}
	t.Add("basket answered", demo.LineStatuses(b))
	t.Add("calls queued", len(jobs))
	t.Add("held by A when killed", held)
	t.Add("none held by A after (s)", orNever(claimed))
	t.Add("queue empty after (s)", orNever(finished))
	t.Add("jobs done", qc.Done)
	t.Add("jobs dead", qc.Dead)
	t.Add("basket at the end", demo.LineStatuses(after))
	t.Add("queued calls with one 200", oks[1])
	t.Add("queued calls with no 200", oks[0])
	more := 0
	for n, c := range oks {
		if n > 1 {
			more += c
		}
	}
	t.Add("queued calls with two or more", more)
	t.Print(w)
	return nil
}

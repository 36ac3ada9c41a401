// Package load sends QuoteFlow requests at a rate or a concurrency and
// reports what came back (statuses, the per-supplier failure codes inside
// the answers, latency percentiles and a histogram) next to what the
// provider lab counted over the same run. The attack itself is
// github.com/tsenart/vegeta/v12's lib: its pacer, workers and metrics.
package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"quoteflowlab.dev/kit/api"
	"quoteflowlab.dev/provider"
)

// Config is one run.
type Config struct {
	Targets     []string      // QuoteFlow base URLs, used round robin
	Request     string        // "quote" or "basket"
	Lines       int           // basket lines
	Scenario    string        // provider scenario ("" for normal)
	Concurrency int           // requests in flight at once (when Rate is 0)
	Rate        float64       // requests per second (0: concurrency-driven)
	Duration    time.Duration // stop sending after this long (0: only Requests)
	Requests    int           // stop after this many (0: only Duration)
	Timeout     time.Duration // one request's limit (0: 30 s)
	Provider    string        // provider lab base URL for /stats ("" for none)
	Reset       bool          // POST /reset on the provider first, so max_active is this run's
	// Deadline, when set, makes the report count Good: answers 200,
	// complete, within it.
	Deadline time.Duration
	// Progress, when set, is called about every 250 ms while the run lasts,
	// from one goroutine.
	Progress func(Progress)
}

// Progress is where a run stands.
type Progress struct {
	Sent     int           // requests sent so far
	Answered int           // requests that came back (an answer or a transport error)
	Elapsed  time.Duration // since the start
	// Sending is false once the duration or the request count is reached:
	// what is left is waiting for the Sent-Answered requests in flight.
	Sending bool
}

// Limits of a run: what the pacer can keep and what makes sense on one
// machine.
const (
	// MinRate is the slowest --rate: one request every 100 s.
	MinRate = 0.01
	// MaxRate is the fastest --rate: beyond it this machine's own sender,
	// not the rate, sets the pace (and every slow answer holds a connection).
	MaxRate = 1000
	// MaxConcurrency is the most requests kept in flight at once.
	MaxConcurrency = 1000
)

// SKUs a basket's lines cycle through (each in the provider's catalog).
var SKUs = []string{"KB-001", "KB-002", "MS-010"}

// Body returns the JSON body and path of the configured request.
func (c Config) Body() (path string, body []byte) {
	if c.Request == "basket" {
		type item struct {
			SKU      string `json:"sku"`
			Quantity int    `json:"quantity"`
		}
		items := make([]item, c.Lines)
		for i := range items {
			items[i] = item{SKU: SKUs[i%len(SKUs)], Quantity: 1 + (i/len(SKUs))%3}
		}
		b, _ := json.Marshal(struct {
			Items    []item `json:"items"`
			Scenario string `json:"scenario,omitempty"`
		}{items, c.Scenario})
		return "/api/baskets", b
	}
	b, _ := json.Marshal(struct {
		SKU      string `json:"sku"`
		Quantity int    `json:"quantity"`
		Scenario string `json:"scenario,omitempty"`
	}{"KB-001", 2, c.Scenario})
	return "/api/quotes", b
}

// Bucket is one histogram bar: requests with latency in [From, To).
type Bucket struct {
	FromMs float64 `json:"from_ms"`
	ToMs   float64 `json:"to_ms"` // +Inf for the last: written as 0 in JSON
	Count  uint64  `json:"count"`
}

// Report is what a run saw.
type Report struct {
	Target     string         `json:"target"`
	Request    string         `json:"request"`
	Scenario   string         `json:"scenario"`
	Mode       string         `json:"mode"` // "rate 20/s" or "concurrency 6"
	Requests   int            `json:"requests"`
	ElapsedS   float64        `json:"elapsed_s"`
	Statuses   map[string]int `json:"statuses"`           // HTTP status (or "error") -> requests
	Lines      map[string]int `json:"line_statuses"`      // baskets: complete/partial/failed -> lines
	Failures   map[string]int `json:"failures"`           // supplier failure code -> count, across answers
	Details    map[string]int `json:"details"`            // a non-200's "detail" -> count
	Errors     map[string]int `json:"errors"`             // transport errors (no HTTP answer)
	Pending    int            `json:"pending"`            // baskets: failures queued
	Good       int            `json:"good,omitempty"`     // with a Deadline: answers 200, complete (no failure, no stale price, every line complete), within it
	LatencyMs  Percentiles    `json:"latency_ms"`         // over every request
	Histogram  []Bucket       `json:"histogram"`          // latency buckets
	Provider   *ProviderDiff  `json:"provider,omitempty"` // nil without --provider
	ProviderOK string         `json:"provider_note,omitempty"`
}

// Percentiles of latency, in ms.
type Percentiles struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// ProviderDiff is the provider lab's /stats after the run minus before it.
type ProviderDiff struct {
	Calls        int64            `json:"calls"`
	PerSupplier  map[string]int64 `json:"per_supplier"`
	PerStatus    map[string]int64 `json:"per_status"`
	MaxActive    int64            `json:"max_active"`
	MaxActiveHow string           `json:"max_active_how"` // "since the reset" or "sampled every 20 ms"
	RateLimited  int64            `json:"rate_limited"`   // 429s sent
	EarlyRetries int64            `json:"early_retries"`
	ClientGone   int64            `json:"client_gone"`
	Abandoned    int64            `json:"abandoned"`
	ActiveAfter  int64            `json:"active_after"` // calls still running at the supplier when the run ended
}

// ReadStats fetches base/stats.
func ReadStats(ctx context.Context, base string) (provider.Stats, error) {
	var s provider.Stats
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("%s/stats answered %s", base, resp.Status)
	}
	return s, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&s)
}

// ResetStats posts base/reset, as JSON: the provider refuses a reset a web
// page could send without a preflight.
func ResetStats(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/reset", strings.NewReader("{}"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s/reset answered %s", base, resp.Status)
	}
	return nil
}

// Diff is after minus before; maxActive is the peak to report.
func Diff(before, after provider.Stats, maxActive int64, how string) *ProviderDiff {
	d := &ProviderDiff{
		Calls:        after.Total - before.Total,
		PerSupplier:  map[string]int64{},
		PerStatus:    map[string]int64{},
		MaxActive:    maxActive,
		MaxActiveHow: how,
		RateLimited:  after.RateLimited - before.RateLimited,
		EarlyRetries: after.EarlyRetries - before.EarlyRetries,
		ClientGone:   after.ClientGone - before.ClientGone,
		Abandoned:    after.Abandoned - before.Abandoned,
		ActiveAfter:  after.Active,
	}
	for k, n := range map[string]int64{
		"atlas":  after.PerSupplier.Atlas - before.PerSupplier.Atlas,
		"boreal": after.PerSupplier.Boreal - before.PerSupplier.Boreal,
		"cedar":  after.PerSupplier.Cedar - before.PerSupplier.Cedar,
	} {
		if n != 0 {
			d.PerSupplier[k] = n
		}
	}
	for k, v := range after.PerStatus {
		if n := v - before.PerStatus[k]; n != 0 {
			d.PerStatus[k] = n
		}
	}
	return d
}

// Validate reports the first problem with c, for a usage error.
func (c Config) Validate() error {
	switch {
	case len(c.Targets) == 0:
		return errors.New("no target: give one or more QuoteFlow base URLs")
	case c.Request != "quote" && c.Request != "basket":
		return fmt.Errorf("request %q: want quote or basket", c.Request)
	case c.Request == "basket" && (c.Lines < 1 || c.Lines > 50):
		return fmt.Errorf("--lines %d: a basket holds 1 to 50 lines", c.Lines)
	case c.Rate != 0 && !(c.Rate >= MinRate && c.Rate <= MaxRate): // NaN fails both
		return fmt.Errorf("--rate %v: want requests per second from %g (one every %g s) to %g", c.Rate, MinRate, 1/MinRate, float64(MaxRate))
	case c.Concurrency < 0 || c.Concurrency > MaxConcurrency:
		return fmt.Errorf("--concurrency %d: want 1 to %d requests in flight at once", c.Concurrency, MaxConcurrency)
	case c.Rate == 0 && c.Concurrency < 1:
		return errors.New("give --concurrency N (requests in flight at once) or --rate R (requests per second)")
	case c.Rate > 0 && c.Concurrency > 0:
		return errors.New("--rate and --concurrency drive the run two different ways: give one")
	case c.Duration < 0 || c.Requests < 0:
		return errors.New("--duration and --requests must not be negative")
	case c.Duration == 0 && c.Requests == 0:
		return errors.New("give --duration D or --requests N (or both: whichever comes first)")
	case c.Rate > 0 && c.Duration > 0 && interval(c.Rate) > c.Duration:
		return fmt.Errorf("--rate %v sends its first request after %s, past --duration %s: nothing would be sent", c.Rate, interval(c.Rate), c.Duration)
	case c.Timeout < 0:
		return fmt.Errorf("--timeout %s: want a positive duration", c.Timeout)
	}
	for _, t := range append(slices.Clone(c.Targets), c.Provider) {
		if t == c.Provider && t == "" {
			continue
		}
		if err := CheckBase(t); err != nil {
			return err
		}
	}
	return nil
}

// CheckBase accepts an http(s) base URL of a loopback host: no path (but
// "/"), query, fragment or user, since the request's path is added to it.
func CheckBase(base string) error {
	u, err := url.Parse(base)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%q: want a base URL like http://127.0.0.1:9100", base)
	case u.Path != "" && u.Path != "/", u.RawQuery != "" || u.ForceQuery, u.Fragment != "", u.User != nil:
		return fmt.Errorf("%q: want a base URL with no path, query, fragment or user, like http://127.0.0.1:9100 (the lab adds the path)", base)
	}
	if u.Hostname() == "localhost" {
		return nil
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: want a loopback host, like http://127.0.0.1:9100 (the lab sends load to this machine only)", base)
	}
	return nil
}

// pacer stops after n hits and otherwise paces as p does.
type pacer struct {
	p vegeta.Pacer
	n uint64
}

func (q pacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if q.n > 0 && hits >= q.n {
		return 0, true
	}
	return q.p.Pace(elapsed, hits)
}

func (q pacer) Rate(elapsed time.Duration) float64 { return q.p.Rate(elapsed) }

// pacer paces c's requests: at c.Rate (unpaced for a concurrency run: each
// worker sends as soon as its last request was answered), stopping after
// c.Requests when that is set.
func (c Config) pacer() vegeta.Pacer {
	var rate vegeta.Rate // the zero Rate: no pacing
	if c.Rate > 0 {
		rate = vegeta.Rate{Freq: 1, Per: interval(c.Rate)}
	}
	return pacer{rate, uint64(c.Requests)}
}

// Run runs c until its duration or request count is reached, or ctx ends
// (what was answered by then is reported).
func Run(ctx context.Context, c Config) (Report, error) {
	if err := c.Validate(); err != nil {
		return Report{}, err
	}
	if c.Timeout <= 0 {
		c.Timeout = 30 * time.Second
	}
	path, body := c.Body()
	targets := make([]vegeta.Target, len(c.Targets))
	hdr := http.Header{"Content-Type": []string{"application/json"}}
	for i, t := range c.Targets {
		targets[i] = vegeta.Target{Method: http.MethodPost, URL: strings.TrimSuffix(t, "/") + path, Body: body, Header: hdr}
	}
	r := Report{Target: strings.Join(c.Targets, ","), Request: c.Request, Scenario: c.Scenario,
		Statuses: map[string]int{}, Lines: map[string]int{}, Failures: map[string]int{}, Details: map[string]int{}, Errors: map[string]int{}}
	if r.Scenario == "" {
		r.Scenario = "normal"
	}
	if c.Request == "basket" {
		r.Request = fmt.Sprintf("basket of %d lines", c.Lines)
	}

	var before provider.Stats
	how := "sampled every 20 ms during the run"
	if c.Provider != "" {
		if c.Reset {
			if err := ResetStats(ctx, c.Provider); err != nil {
				return r, fmt.Errorf("provider: %w", err)
			}
			how = "since the reset at the start of the run"
		}
		var err error
		if before, err = ReadStats(ctx, c.Provider); err != nil {
			return r, fmt.Errorf("provider: %w", err)
		}
	}

	var opts []func(*vegeta.Attacker)
	rate := c.pacer()
	if c.Rate > 0 {
		r.Mode = "rate " + strconv.FormatFloat(c.Rate, 'f', -1, 64) + "/s"
		opts = append(opts, vegeta.Workers(10))
	} else {
		// Rate 0 with a fixed number of workers: each worker sends its next
		// request as soon as its last one is answered.
		r.Mode = fmt.Sprintf("concurrency %d", c.Concurrency)
		opts = append(opts, vegeta.Workers(uint64(c.Concurrency)), vegeta.MaxWorkers(uint64(c.Concurrency)))
	}
	opts = append(opts, vegeta.Timeout(c.Timeout), vegeta.KeepAlive(true), vegeta.Redirects(vegeta.NoFollow), vegeta.MaxBody(4<<20))
	atk := vegeta.NewAttacker(opts...)
	stopWatch := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stopWatch()

	// Sample the provider's active count while the run lasts.
	var peak atomic.Int64
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	if c.Provider != "" && !c.Reset {
		sampling.Add(1)
		go func() {
			defer sampling.Done()
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				if s, err := ReadStats(sampleCtx, c.Provider); err == nil && s.Active > peak.Load() {
					peak.Store(s.Active)
				}
				select {
				case <-sampleCtx.Done():
					return
				case <-t.C:
				}
			}
		}()
	}

	var m vegeta.Metrics
	m.Histogram = &vegeta.Histogram{Buckets: buckets()}
	start := time.Now()
	var done int
	var sent atomic.Int64 // the targeter is asked once per request, as it is sent
	static := vegeta.NewStaticTargeter(targets...)
	targeter := func(t *vegeta.Target) error {
		sent.Add(1)
		return static(t)
	}
	progress := func() {
		elapsed := time.Since(start)
		n := int(sent.Load())
		c.Progress(Progress{Sent: n, Answered: done, Elapsed: elapsed,
			Sending: !(c.Duration > 0 && elapsed >= c.Duration) && !(c.Requests > 0 && n >= c.Requests)})
	}
	var tick <-chan time.Time
	if c.Progress != nil {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		tick = t.C
	}
	results := atk.Attack(targeter, rate, c.Duration, "lab load")
	for results != nil {
		select {
		case res, ok := <-results:
			if !ok {
				results = nil
				break
			}
			m.Add(res)
			done++
			if r.count(res) && c.Deadline > 0 && res.Latency <= c.Deadline {
				r.Good++
			}
		case <-tick:
			progress()
		}
	}
	m.Close()
	stopSampling()
	sampling.Wait()
	r.Requests = done
	r.ElapsedS = round(time.Since(start).Seconds(), 3)
	r.LatencyMs = Percentiles{
		Mean: ms(m.Latencies.Mean), P50: ms(m.Latencies.P50), P90: ms(m.Latencies.P90),
		P99: ms(m.Latencies.P99), Max: ms(m.Latencies.Max),
	}
	for i, b := range m.Histogram.Buckets {
		to := math.Inf(1)
		if i+1 < len(m.Histogram.Buckets) {
			to = ms(m.Histogram.Buckets[i+1])
		}
		r.Histogram = append(r.Histogram, Bucket{FromMs: ms(b), ToMs: to, Count: m.Histogram.Counts[i]})
	}
	if c.Provider != "" {
		// A fresh context: a Ctrl-C that ended the run still gets its counts.
		after, err := ReadStats(context.Background(), c.Provider)
		if err != nil {
			r.ProviderOK = "could not read the provider's /stats after the run: " + err.Error()
			return r, nil
		}
		peakNow := max(peak.Load(), after.Active)
		if c.Reset {
			peakNow = after.MaxActive
		}
		r.Provider = Diff(before, after, peakNow, how)
	}
	return r, nil
}

// Answered is how many requests got an HTTP answer (of any status).
func (r Report) Answered() int { return r.Requests - r.Statuses["error"] }

// MarshalJSON writes the last bucket's +Inf as 0 (JSON has no infinity).
func (b Bucket) MarshalJSON() ([]byte, error) {
	to := b.ToMs
	if math.IsInf(to, 1) {
		to = 0
	}
	type plain Bucket
	return json.Marshal(plain{FromMs: b.FromMs, ToMs: to, Count: b.Count})
}

// interval is the time between two requests at r per second (vegeta's
// Rate{Freq: 1, Per: interval}, to the nanosecond; its first request goes
// one interval after the start).
func interval(r float64) time.Duration {
	return time.Duration(math.Round(float64(time.Second) / r))
}

func buckets() vegeta.Buckets {
	var b vegeta.Buckets
	for _, v := range []int{0, 50, 100, 200, 400, 800, 1000, 1600, 2000, 3000} {
		b = append(b, time.Duration(v)*time.Millisecond)
	}
	return b
}

func ms(d time.Duration) float64 { return round(float64(d)/float64(time.Millisecond), 1) }

func round(v float64, places int) float64 {
	p := math.Pow10(places)
	return math.Round(v*p) / p
}

// count adds one answer's statuses and codes, and says whether it is a
// complete answer: 200, no failure in it, no stale price, every basket
// line complete.
func (r *Report) count(res *vegeta.Result) (complete bool) {
	if res.Code == 0 {
		r.Statuses["error"]++
		msg := res.Error
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
		r.Errors[msg]++
		return false
	}
	r.Statuses[strconv.Itoa(int(res.Code))]++
	var body api.Answer
	if json.Unmarshal(bytes.TrimSpace(res.Body), &body) != nil {
		return false
	}
	if body.Detail != "" {
		r.Details[body.Detail]++
	}
	complete = res.Code == http.StatusOK && len(body.Failures) == 0
	for _, f := range body.Failures {
		r.Failures[f.Code]++
	}
	for _, q := range body.Quotes {
		complete = complete && !q.Stale
	}
	r.Pending += body.Pending
	for _, it := range body.Items {
		r.Lines[it.Status]++
		complete = complete && it.Status == "complete"
		for _, f := range it.Failures {
			r.Failures[f.Code]++
		}
	}
	return complete
}

// Text writes the report for a person.
func (r Report) Text(w io.Writer) {
	fmt.Fprintf(w, "%d requests (%s at %s, %s) to %s in %.2f s\n", r.Requests, r.Request, r.Scenario, r.Mode, r.Target, r.ElapsedS)
	fmt.Fprintf(w, "  statuses:      %s\n", Counts(r.Statuses))
	if len(r.Lines) > 0 {
		fmt.Fprintf(w, "  lines:         %s; pending (queued) %d\n", Counts(r.Lines), r.Pending)
	}
	fmt.Fprintf(w, "  failure codes: %s\n", Counts(r.Failures))
	if len(r.Details) > 0 {
		fmt.Fprintf(w, "  refusals:      %s\n", Counts(r.Details))
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "  no answer:     %s\n", Counts(r.Errors))
	}
	l := r.LatencyMs
	fmt.Fprintf(w, "  latency ms:    p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (mean %.1f)\n", l.P50, l.P90, l.P99, l.Max, l.Mean)
	var most uint64
	for _, b := range r.Histogram {
		most = max(most, b.Count)
	}
	for _, b := range r.Histogram {
		if b.Count == 0 {
			continue
		}
		label := fmt.Sprintf("%g-%g ms", b.FromMs, b.ToMs)
		if math.IsInf(b.ToMs, 1) {
			label = fmt.Sprintf("%g ms+", b.FromMs)
		}
		bar := int(math.Ceil(float64(b.Count) * 40 / float64(most)))
		fmt.Fprintf(w, "    %-14s %5d %s\n", label, b.Count, strings.Repeat("#", bar))
	}
	if p := r.Provider; p != nil {
		fmt.Fprintf(w, "  provider over the run: calls %d %s; statuses %s\n", p.Calls, counts64(p.PerSupplier), counts64(p.PerStatus))
		fmt.Fprintf(w, "    max_active %d (%s); still active at the end %d\n", p.MaxActive, p.MaxActiveHow, p.ActiveAfter)
		fmt.Fprintf(w, "    429s sent %d, early_retries %d, client_gone %d, abandoned %d\n", p.RateLimited, p.EarlyRetries, p.ClientGone, p.Abandoned)
	} else if r.ProviderOK != "" {
		fmt.Fprintf(w, "  provider: %s\n", r.ProviderOK)
	}
}

// Counts writes m as "complete 2, partial 1": by key, in order; "none"
// when empty.
func Counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func counts64(m map[string]int64) string {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = int(v)
	}
	return "(" + Counts(c) + ")"
}

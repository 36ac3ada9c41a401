package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"quoteflowlab.dev/kit/api"
	"quoteflowlab.dev/kit/load"
	"quoteflowlab.dev/provider"
)

// RequestTimeout caps one request a demo makes.
const RequestTimeout = 15 * time.Second

// QuoteFlow's defaults that the demos' own clients play and their tables
// name.
const (
	QuoteBudget   = 800 * time.Millisecond // a quote's deadline (--budget)
	OutboundLimit = 6                      // supplier calls at once (--outbound)
)

// LineStatuses counts a basket's lines by status: "complete 50" or
// "complete 2, partial 1".
func LineStatuses(b api.Answer) string {
	m := map[string]int{}
	for _, it := range b.Items {
		m[it.Status]++
	}
	return load.Counts(m)
}

// FailureCodes counts a basket's failures by code.
func FailureCodes(b api.Answer) string {
	m := map[string]int{}
	for _, it := range b.Items {
		for _, f := range it.Failures {
			m[f.Code]++
		}
	}
	return load.Counts(m)
}

// Do sends one request with a JSON body (nil: none) and decodes the
// answer into out (nil: not read), within RequestTimeout; it returns the
// status and how long the answer took.
func Do(ctx context.Context, method, u string, body []byte, out any) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, time.Since(start), err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	took := time.Since(start)
	if err != nil {
		return resp.StatusCode, took, err
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, took, fmt.Errorf("%s %s answered %d with %q: %w", method, u, resp.StatusCode, firstBytes(data), err)
		}
	}
	return resp.StatusCode, took, nil
}

func firstBytes(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// PostBasket posts a basket of n lines at scenario to QuoteFlow at qf.
func PostBasket(ctx context.Context, qf string, n int, scenario string) (api.Answer, int, time.Duration, error) {
	_, body := load.Config{Request: "basket", Lines: n, Scenario: scenario}.Body()
	var b api.Answer
	status, took, err := Do(ctx, http.MethodPost, qf+"/api/baskets", body, &b)
	return b, status, took, err
}

// GetBasket reads a stored basket.
func GetBasket(ctx context.Context, qf, id string) (api.Answer, error) {
	var b api.Answer
	status, _, err := Do(ctx, http.MethodGet, qf+"/api/baskets/"+url.PathEscape(id), nil, &b)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET basket %s: %d", id, status)
	}
	return b, err
}

// PostQuote asks for one quote at scenario.
func PostQuote(ctx context.Context, qf, scenario string) (api.Answer, int, time.Duration, error) {
	_, body := load.Config{Request: "quote", Scenario: scenario}.Body()
	var q api.Answer
	status, took, err := Do(ctx, http.MethodPost, qf+"/api/quotes", body, &q)
	return q, status, took, err
}

// RequestLog reads the provider's attempts for one X-Request-ID, within
// RequestTimeout.
func RequestLog(ctx context.Context, prov, id string) (provider.RequestStats, error) {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	return api.RequestLog(ctx, nil, prov, id)
}

// Stats reads the provider's /stats.
func Stats(ctx context.Context, prov string) (provider.Stats, error) {
	return load.ReadStats(ctx, prov)
}

// Pause waits d or until ctx ends.
func Pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StatusText is "200", or "503 queue_full" with the answer's detail.
func StatusText(status int, detail string) string {
	if detail == "" {
		return fmt.Sprint(status)
	}
	return fmt.Sprintf("%d %s", status, detail)
}

// MS is d in whole milliseconds.
func MS(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }

// Secs is d in seconds with two decimals.
func Secs(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }

// A Setup is one build a demo compares: its column, and the mutant of the
// lesson's checks it applies ("" for the checkpoint).
type Setup struct {
	Column string
	Mutant string
}

// Columns are the setups' columns.
func Columns(ss []Setup) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Column
	}
	return out
}

// BuildAll builds every setup's binary before anything runs, so no build
// competes with a timed run.
func (e *Env) BuildAll(ctx context.Context, lesson int, ss []Setup) ([]string, error) {
	bins := make([]string, len(ss))
	for i, s := range ss {
		var err error
		if bins[i], err = e.Build(ctx, lesson, s.Mutant); err != nil {
			return nil, err
		}
	}
	return bins, nil
}

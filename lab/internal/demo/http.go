package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"quoteflowlab.dev/kit/load"
	"quoteflowlab.dev/provider"
)

// requestTimeout caps one request a demo makes.
const requestTimeout = 15 * time.Second

// Basket is the part of a basket answer the demos read.
type Basket struct {
	ID      string `json:"basket_id"`
	Pending int    `json:"pending"`
	Detail  string `json:"detail"`
	Items   []struct {
		RequestID string `json:"request_id"`
		Status    string `json:"status"`
		Failures  []struct {
			Supplier string `json:"supplier"`
			Code     string `json:"code"`
			Attempts int    `json:"attempts"`
		} `json:"failures"`
	} `json:"items"`
	ElapsedMS float64 `json:"elapsed_ms"`
}

// Quote is the part of a quote answer the demos read.
type Quote struct {
	Detail   string `json:"detail"`
	Failures []struct {
		Code string `json:"code"`
	} `json:"failures"`
	Quotes []json.RawMessage `json:"quotes"`
}

// Statuses counts the lines by status: "complete 50" or "complete 2, partial 1".
func (b Basket) Statuses() string {
	m := map[string]int{}
	for _, it := range b.Items {
		m[it.Status]++
	}
	return counts(m)
}

// Codes counts the failures by code.
func (b Basket) Codes() string {
	m := map[string]int{}
	for _, it := range b.Items {
		for _, f := range it.Failures {
			m[f.Code]++
		}
	}
	return counts(m)
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func do(ctx context.Context, method, u string, body []byte, out any) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
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

// postBasket posts a basket of n lines at scenario.
func postBasket(ctx context.Context, qf string, n int, scenario string) (Basket, int, time.Duration, error) {
	_, body := load.Config{Request: "basket", Lines: n, Scenario: scenario}.Body()
	var b Basket
	status, took, err := do(ctx, http.MethodPost, qf+"/api/baskets", body, &b)
	return b, status, took, err
}

// getBasket reads a stored basket.
func getBasket(ctx context.Context, qf, id string) (Basket, error) {
	var b Basket
	status, _, err := do(ctx, http.MethodGet, qf+"/api/baskets/"+url.PathEscape(id), nil, &b)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("GET basket %s: %d", id, status)
	}
	return b, err
}

// postQuote asks for one quote at scenario.
func postQuote(ctx context.Context, qf, scenario string) (Quote, int, time.Duration, error) {
	_, body := load.Config{Request: "quote", Scenario: scenario}.Body()
	var q Quote
	status, took, err := do(ctx, http.MethodPost, qf+"/api/quotes", body, &q)
	return q, status, took, err
}

// requestLog reads the provider's attempts for one X-Request-ID.
func requestLog(ctx context.Context, prov, id string) (provider.RequestStats, error) {
	var rs provider.RequestStats
	_, _, err := do(ctx, http.MethodGet, prov+"/stats/requests?id="+url.QueryEscape(id), nil, &rs)
	return rs, err
}

// stats reads the provider's /stats.
func stats(ctx context.Context, prov string) (load.Stats, error) { return load.ReadStats(ctx, prov) }

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

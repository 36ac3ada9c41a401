// Package api is the client's side of the course's two HTTP APIs, for lab
// and the lessons' demos alike: QuoteFlow's answer to a quote or a basket
// (Answer: one type for every checkpoint's answers, a field a checkpoint
// does not send left zero) and the provider lab's log of one X-Request-ID
// (RequestLog).
package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"quoteflowlab.dev/provider"
)

// Answer is QuoteFlow's answer body: to a quote (POST /api/quotes), to a
// basket (POST /api/baskets, GET /api/baskets/ID), or a refusal.
type Answer struct {
	// A quote's.
	RequestID string    `json:"request_id"`
	Quotes    []Quote   `json:"quotes"`
	Failures  []Failure `json:"failures"`
	// A basket's.
	BasketID  string  `json:"basket_id"`
	Items     []Line  `json:"items"`
	Pending   int     `json:"pending"` // failures queued and not yet finished
	ElapsedMS float64 `json:"elapsed_ms"`
	// A refusal's reason (a 4xx or 5xx answer), as queue_full.
	Detail string `json:"detail"`
}

// A Quote is one supplier's price.
type Quote struct {
	Supplier   string   `json:"supplier"`
	TotalCents int      `json:"total_cents"`
	Stale      bool     `json:"stale"`  // a remembered price (lesson 19)
	AgeMS      *float64 `json:"age_ms"` // how old a stale price is
}

// A Failure is one supplier that gave no price.
type Failure struct {
	Supplier string `json:"supplier"`
	Code     string `json:"code"`
	Attempts int    `json:"attempts"`
	Queued   bool   `json:"queued"` // a basket line's call left to the compensation queue
}

// A Line is one line of a basket.
type Line struct {
	Index     int       `json:"index"`
	RequestID string    `json:"request_id"`
	Status    string    `json:"status"` // complete, partial or failed
	Failures  []Failure `json:"failures"`
}

// A StatusError is an answer other than 200 OK.
type StatusError struct {
	URL  string
	Code int
	Body []byte
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s answered %d: %s", e.URL, e.Code, strings.TrimSpace(string(e.Body)))
}

// A BodyError is a 200 OK whose body is not what was asked for.
type BodyError struct {
	URL string
	Err error
}

func (e *BodyError) Error() string {
	return fmt.Sprintf("%s answered something that is not a request log: %v", e.URL, e.Err)
}

func (e *BodyError) Unwrap() error { return e.Err }

// RequestLogURL is where the provider lab at base keeps id's log.
func RequestLogURL(base, id string) string {
	return strings.TrimSuffix(base, "/") + "/stats/requests?id=" + url.QueryEscape(id)
}

// RequestLog reads the provider lab's log of one X-Request-ID (GET
// /stats/requests?id=) through client (nil: http.DefaultClient), within
// ctx. An error is the transport's, a *StatusError or a *BodyError.
func RequestLog(ctx context.Context, client *http.Client, base, id string) (provider.RequestStats, error) {
	var rs provider.RequestStats
	if client == nil {
		client = http.DefaultClient
	}
	u := RequestLogURL(base, id)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return rs, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return rs, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return rs, err
	}
	if resp.StatusCode != http.StatusOK {
		return rs, &StatusError{URL: u, Code: resp.StatusCode, Body: body}
	}
	if err := json.Unmarshal(body, &rs); err != nil {
		return rs, &BodyError{URL: u, Err: err}
	}
	return rs, nil
}

// Attempts is supplier's part of a log (nil for a supplier the lab has not).
func Attempts(l provider.AttemptLog, supplier string) []provider.Attempt {
	switch supplier {
	case "atlas":
		return l.Atlas
	case "boreal":
		return l.Boreal
	case "cedar":
		return l.Cedar
	}
	return nil
}

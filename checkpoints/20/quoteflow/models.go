// Package quoteflow asks three suppliers for a price at once and answers
// with the ranked quotes, the failures, and the best offer.
package quoteflow

import (
	"strconv"
	"strings"
)

// suppliers is every supplier asked for every quote, in report order.
var suppliers = []string{"atlas", "boreal", "cedar"}

// QuoteRequest is what a client asks for. DecodeQuoteRequest fills in the
// defaults (KB-001, 2, normal); Quote takes the values as they are.
type QuoteRequest struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
	Scenario string `json:"scenario"`
}

// Code says why a supplier has no quote in a result.
type Code string

// Failure codes that do not carry an HTTP status (see HTTPCode for those).
const (
	CodeTimeout        Code = "timeout"         // no final result by the deadline
	CodeTransportError Code = "transport_error" // the HTTP exchange itself failed
	CodeInvalidData    Code = "invalid_data"    // an answer we cannot trust or decode
	CodeNoBudget       Code = "no_budget"       // never asked: too little budget left to start a call

	// CodeQuotaUnavailable: never asked, because the shared quota could not
	// be reached: the service fails closed rather than call uncounted.
	CodeQuotaUnavailable Code = "quota_unavailable"
	// CodeRateLimited: never asked, because the rate quota had no room for
	// the supplier before the deadline.
	CodeRateLimited Code = "rate_limited"
	// CodeCircuitOpen: never asked, because the supplier's circuit breaker
	// was open (breakers.go): it fails at once, without a slot or a token.
	CodeCircuitOpen Code = "circuit_open"
	// CodeShed: never asked, because the supplier's adaptive limit had no
	// room in time: its line was full of more important calls, or the call
	// waited its target, or its deadline left no time to wait (limits.go).
	CodeShed Code = "shed"
)

// HTTPCode is the failure code for a supplier answering with status, e.g. "http_503".
func HTTPCode(status int) Code {
	return Code("http_" + strconv.Itoa(status))
}

// Quote is one supplier's offer; TotalCents = UnitCents*quantity + ShippingCents.
type Quote struct {
	Supplier      string `json:"supplier"`
	SKU           string `json:"sku"`
	UnitCents     int    `json:"unit_cents"`
	ShippingCents int    `json:"shipping_cents"`
	Stock         int    `json:"stock"`
	TotalCents    int    `json:"total_cents"`
	// Stale marks a quote answered from the supplier's last good quote
	// because the supplier failed now (breakers.go); AgeMS is how old it is.
	Stale bool          `json:"stale,omitempty"`
	AgeMS *Milliseconds `json:"age_ms,omitempty"`
}

// Failure names a supplier that gave no usable quote, and why.
type Failure struct {
	Supplier string `json:"supplier"`
	Code     Code   `json:"code"`
}

// QuoteResult is the answer to one QuoteRequest. Every supplier appears
// exactly once in Quotes or Failures, or in neither when it had too little stock.
type QuoteResult struct {
	SKU       string       `json:"sku"`
	Quantity  int          `json:"quantity"`
	Quotes    []Quote      `json:"quotes"`   // sorted by (TotalCents, Supplier); never nil
	Failures  []Failure    `json:"failures"` // in supplier order; never nil
	Best      *Quote       `json:"best"`     // Quotes[0], or nil
	ElapsedMS Milliseconds `json:"elapsed_ms"`
	RequestID string       `json:"request_id"` // 32 hex digits, sent as X-Request-ID
	Calls     []Calls      `json:"calls"`      // per supplier, in supplier order: what was sent
}

// Calls is what was sent to one supplier for one quote or basket line:
// Attempts counts every call, the first, its retries and its hedge; Hedged
// says whether a hedge was sent.
type Calls struct {
	Supplier string `json:"supplier"`
	Attempts int    `json:"attempts"`
	Hedged   bool   `json:"hedged"`
}

// Milliseconds is a duration in milliseconds. It is written in JSON with a
// fractional part even when whole (800.0, not 800), so that every client,
// Python's json module included, reads elapsed_ms as the float it is.
type Milliseconds float64

// MarshalJSON writes m in its shortest form, with ".0" added when it is whole.
func (m Milliseconds) MarshalJSON() ([]byte, error) {
	b := strconv.AppendFloat(nil, float64(m), 'f', -1, 64)
	if !strings.Contains(string(b), ".") {
		b = append(b, ".0"...)
	}
	return b, nil
}

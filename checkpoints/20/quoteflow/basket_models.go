package quoteflow

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// MaxBasketLines is the most lines one basket may hold.
const MaxBasketLines = 50

// BasketItem is one line a client asks for.
type BasketItem struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

// BasketRequest asks for every item at once, all under one scenario.
type BasketRequest struct {
	Items    []BasketItem `json:"items"`
	Scenario string       `json:"scenario"`
}

// LineStatus says how far a basket line got.
type LineStatus string

const (
	LineAsking   LineStatus = "asking"   // stored before the suppliers are asked; the basket is not answered yet
	LineComplete LineStatus = "complete" // every supplier gave its word (a quote, or too little stock)
	LinePartial  LineStatus = "partial"  // some quotes, some failures
	LineFailed   LineStatus = "failed"   // no supplier gave a quote
)

// Basket is the answer to a BasketRequest, and what GET /api/baskets/{id}
// shows as the compensation queue fills it in.
type Basket struct {
	ID string `json:"basket_id"`
	// IdempotencyKey is the request's Idempotency-Key header, if it had
	// one: the same key again gets this basket, never a second one.
	IdempotencyKey string       `json:"idempotency_key,omitempty"`
	Scenario       string       `json:"scenario"`
	Created        time.Time    `json:"created"` // when the request was accepted
	Items          []BasketLine `json:"items"`
	Pending        int          `json:"pending"` // failures queued and not yet finished
	ElapsedMS      Milliseconds `json:"elapsed_ms"`
	// ExtraCalls counts the retries and hedges this basket sent;
	// BudgetTokens is what the shared budget held once it had answered.
	ExtraCalls   int     `json:"extra_calls"`
	BudgetTokens float64 `json:"budget_tokens"`
}

// BasketLine is one item's quotes and failures, ranked as in a single quote.
type BasketLine struct {
	Index    int    `json:"index"`
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
	// RequestID is the X-Request-ID of every call for this line, the
	// compensation queue's included: the provider's /stats/requests?id= key.
	RequestID string        `json:"request_id"`
	Status    LineStatus    `json:"status"`
	Best      *Quote        `json:"best"`
	Quotes    []Quote       `json:"quotes"`   // never nil
	Failures  []LineFailure `json:"failures"` // in supplier order; never nil
	Calls     []Calls       `json:"calls"`    // per supplier, in supplier order: what was sent
}

// LineFailure is a supplier without a quote for a line: why, after how many
// attempts and how long, and whether the compensation queue will try again.
type LineFailure struct {
	Supplier  string       `json:"supplier"`
	Code      Code         `json:"code"`
	Attempts  int          `json:"attempts"`
	ElapsedMS Milliseconds `json:"elapsed_ms"`
	Queued    bool         `json:"queued"`
	Dead      bool         `json:"dead,omitempty"` // the queue gave up after its last try; Code is the last reason
}

// settle records a supplier's final word for line index: a quote (kept if
// the stock suffices) or a failure. It replaces that supplier's earlier
// failure, re-ranks the line and recounts Pending.
func (b *Basket) settle(index int, supplier string, q *Quote, f *LineFailure) {
	l := &b.Items[index]
	l.Failures = slices.DeleteFunc(l.Failures, func(x LineFailure) bool { return x.Supplier == supplier })
	l.Quotes = slices.DeleteFunc(l.Quotes, func(x Quote) bool { return x.Supplier == supplier })
	switch {
	case f != nil:
		l.Failures = append(l.Failures, *f)
		slices.SortFunc(l.Failures, func(a, b LineFailure) int {
			return cmp.Compare(slices.Index(suppliers, a.Supplier), slices.Index(suppliers, b.Supplier))
		})
	case q.Stock >= l.Quantity:
		qq := *q
		qq.TotalCents = qq.UnitCents*l.Quantity + qq.ShippingCents
		l.Quotes = append(l.Quotes, qq)
	}
	l.rank()
	b.Pending = 0
	for _, line := range b.Items {
		for _, f := range line.Failures {
			if f.Queued {
				b.Pending++
			}
		}
	}
}

// rank sorts the quotes, picks the best and sets the status.
func (l *BasketLine) rank() {
	slices.SortFunc(l.Quotes, func(a, b Quote) int {
		return cmp.Or(cmp.Compare(a.TotalCents, b.TotalCents), strings.Compare(a.Supplier, b.Supplier))
	})
	l.Best = nil
	if len(l.Quotes) > 0 {
		best := l.Quotes[0]
		l.Best = &best
	}
	switch {
	case len(l.Failures) == 0:
		l.Status = LineComplete
	case len(l.Quotes) == 0 && len(l.Failures) == len(suppliers):
		l.Status = LineFailed
	default:
		l.Status = LinePartial
	}
}

// answered reports whether the basket's suppliers have been asked (a
// reserved basket's lines are all LineAsking until its answer is stored).
func (b *Basket) answered() bool {
	return !slices.ContainsFunc(b.Items, func(l BasketLine) bool { return l.Status == LineAsking })
}

// asks reports whether b was made for req: the same lines and scenario.
func (b *Basket) asks(req BasketRequest) bool {
	if b.Scenario != req.Scenario || len(b.Items) != len(req.Items) {
		return false
	}
	for i, item := range req.Items {
		if b.Items[i].SKU != item.SKU || b.Items[i].Quantity != item.Quantity {
			return false
		}
	}
	return true
}

// bury settles supplier's queued failure on line index as dead, with the
// queue's last reason: the queue has given up on it. It reports whether the
// line was still waiting.
func (b *Basket) bury(index int, supplier, reason string) bool {
	if !b.queuedFailure(index, supplier) {
		return false
	}
	i := slices.IndexFunc(b.Items[index].Failures, func(f LineFailure) bool { return f.Supplier == supplier })
	f := b.Items[index].Failures[i]
	f.Queued, f.Dead, f.Code = false, true, Code(reason)
	b.settle(index, supplier, nil, &f)
	return true
}

// queuedFailure reports whether line index still waits for supplier from the queue.
func (b *Basket) queuedFailure(index int, supplier string) bool {
	if index < 0 || index >= len(b.Items) {
		return false
	}
	return slices.ContainsFunc(b.Items[index].Failures, func(f LineFailure) bool {
		return f.Supplier == supplier && f.Queued
	})
}

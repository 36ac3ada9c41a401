package provider

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// quoteParams are the query parameters of /quotes/{supplier}.
var quoteParams = []string{"sku", "scenario", "qty"}

// MaxQty is the largest qty a supplier request may give: an order's
// quantity, as QuoteFlow's requests allow (1 to 100).
const MaxQty = 100

// quote serves GET /quotes/{supplier}?sku=&scenario= (scenario defaults to
// normal). Unknown supplier or SKU: 404; unknown scenario: 400. Every
// request with an X-Request-ID is logged for /stats/requests.
func (p *Provider) quote(st *state, w http.ResponseWriter, r *http.Request) (int, net.Conn) {
	c := &supplierCall{call: call{st: st, w: w, r: r, arrival: time.Now()}, entry: -1}
	name, _ := supplierPath(r.URL.Path) // the router matched it, or supplierFirst did
	c.supplier = supplierIndex(name)
	if c.supplier < 0 {
		return c.fail(http.StatusNotFound, "unknown_supplier", fmt.Sprintf("no supplier %s (have atlas, boreal, cedar)", quoted(name))), nil
	}
	st.perSupplier[c.supplier].Add(1)
	n := p.flights.setSupplier(r, c.supplier, &p.supplierActive[c.supplier])
	defer p.flights.unsetSupplier(r, &p.supplierActive[c.supplier])
	if n > st.supplierPeak[c.supplier].Load() {
		n = p.flights.live(c.supplier)
	}
	raiseMax(&st.supplierPeak[c.supplier], n)
	id, err := requestID(r.Header)
	if err != nil {
		return c.fail(http.StatusBadRequest, "bad_request_id", err.Error()), nil
	}
	if id == "" {
		return p.serveQuote(c), c.cut
	}
	c.id = id
	early := false
	st.ids.update(id, func(rec *idRecord) {
		c.nth = rec.attempts[c.supplier]
		rec.attempts[c.supplier]++
		early = c.arrival.Before(rec.retryAt[c.supplier])
		c.hedged = rec.inFlight[c.supplier] > 0
		rec.inFlight[c.supplier]++
		c.rec, c.entry = rec, rec.log.start(c.arrival, logEntry{where: uint8(c.supplier), budgetMs: -1, hedged: c.hedged})
	})
	if early {
		st.earlyRetries.Add(1)
	}
	if c.hedged {
		st.hedged.Add(1)
	}
	seq := st.feed.start(id, c.supplier, c.arrival, c.hedged)
	status := p.serveQuote(c)
	end := c.end(status, c.cut != nil)
	budget := int64(-1)
	if c.hasBudget {
		budget = c.budgetMs
	}
	now := time.Now()
	st.ids.view(id, func(rec *idRecord) {
		if rec != c.rec {
			return // forgotten (the table was full): its in-flight count went with it
		}
		s := c.supplier
		rec.inFlight[s]--
		switch {
		case end == endDone:
			rec.answeredAt[s] = now
		case end == endClientGone && !rec.answeredAt[s].IsZero() && !rec.answeredAt[s].Before(c.arrival):
			// A sibling answered while this one ran (it arrived after
			// this one, or this one was its hedge), then the caller hung
			// up on this one: the loser of a hedged pair, cancelled.
			c.lost = true
		}
		rec.log.finish(c.entry, now, status, end)
		if c.entry >= 0 {
			rec.log.entries[c.entry].budgetMs = budget
			rec.log.entries[c.entry].lost = c.lost
		}
	})
	if c.lost {
		st.lostCancelled.Add(1)
	}
	st.feed.finish(seq, now, status, end, budget, c.retryAfterMs, c.lost)
	return status, c.cut
}

// serveQuote validates the rest of a supplier request and plays its scenario.
func (p *Provider) serveQuote(c *supplierCall) int {
	var q [3]string
	present, err := readQuery(c.r.URL.RawQuery, quoteParams, q[:])
	if err != nil {
		return c.fail(http.StatusBadRequest, "bad_parameter", err.Error())
	}
	c.qty = 1
	if present&(1<<2) != 0 {
		n, ok := plainInt(q[2], MaxQty)
		if !ok || n < 1 {
			return c.fail(http.StatusBadRequest, "bad_parameter", fmt.Sprintf(
				"query parameter qty=%s: want the order's quantity, an integer from 1 to %d (or no qty: 1)", quoted(q[2]), MaxQty))
		}
		c.qty = int(n)
	}
	c.sku = q[0]
	name := q[1]
	if name == "" {
		name = "normal"
	}
	c.sc = scenarioNamed(name)
	if c.sc == nil {
		return c.fail(http.StatusBadRequest, "unknown_scenario", fmt.Sprintf("no scenario %s (have %s)", quoted(name), scenarioList))
	}
	supplier := Suppliers[c.supplier]
	if _, ok := catalog[quoteKey{supplier, c.sku}]; !ok {
		return c.fail(http.StatusNotFound, "unknown_sku", fmt.Sprintf("%s has no SKU %s", supplier, quoted(c.sku)))
	}
	if c.budgetMs, c.hasBudget, err = budgetOf(c.r.Header); err != nil {
		return c.fail(http.StatusBadRequest, "bad_budget", err.Error())
	}
	if supplier != "boreal" && !c.sc.everySupplier {
		c.sc = &scenarios[0] // only boreal misbehaves (tail: every supplier has a tail)
	}
	if c.sc.arrive != nil {
		status := c.sc.arrive(p, c)
		if c.held != nil {
			defer c.held.Add(-1)
		}
		if status != 0 {
			return status
		}
	}
	delay := c.sc.delay
	if c.sc.plan != nil {
		delay = c.sc.plan(p, c)
	} else if delay == 0 {
		delay = baseLatency[c.supplier]
	}
	if status, ok := p.work(c, p.scaled(delay)); !ok {
		return status
	}
	return c.sc.answer(p, c)
}

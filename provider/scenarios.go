package provider

import (
	"fmt"
	"net"
	"net/http"
	"time"
)

// slowDelay is how long boreal takes in the slow scenario (times LatencyScale).
const slowDelay = 1500 * time.Millisecond

// A supplierCall is one supplier request being answered.
type supplierCall struct {
	w        http.ResponseWriter
	r        *http.Request
	supplier int      // index in Suppliers
	sku      string   // a catalog SKU
	id       string   // X-Request-ID, "" when absent
	cut      net.Conn // set by reset: the hijacked connection to close with an RST
}

// A scenario answers one boreal request and returns the status it wrote
// (0 when no response was written: connection reset or client gone).
type scenario func(p *Provider, c *supplierCall) int

// scenarios maps each scenario name to what boreal does. Atlas and cedar
// answer normally in every scenario.
var scenarios = map[string]scenario{
	"normal":    normal,    // 200 with the catalog quote after the base latency
	"slow":      slow,      // the same 200, but after 1500 ms
	"broken":    broken,    // 503 every time
	"malformed": malformed, // 200 whose unit_cents is a JSON string
	"flaky":     flaky,     // 503 for the first request of each X-Request-ID, then normal
	"gzip":      badGzip,   // 200 with Content-Encoding: gzip and bytes that are not gzip
	"reset":     reset,     // first request of each X-Request-ID: TCP reset before any byte, then normal
	"mismatch":  mismatch,  // 200 with a well-formed quote for another SKU
}

// normal answers with the catalog quote after the supplier's base latency.
func normal(p *Provider, c *supplierCall) int {
	if status, ok := p.work(c, p.scaled(baseLatency[c.supplier])); !ok {
		return status
	}
	return c.ok(p.normal[quoteKey{Suppliers[c.supplier], c.sku}])
}

// slow answers normally, but only after slowDelay.
func slow(p *Provider, c *supplierCall) int {
	if status, ok := p.work(c, p.scaled(slowDelay)); !ok {
		return status
	}
	return c.ok(p.normal[quoteKey{Suppliers[c.supplier], c.sku}])
}

// broken is unavailable: 503 every time.
func broken(p *Provider, c *supplierCall) int {
	if status, ok := p.work(c, p.scaled(baseLatency[c.supplier])); !ok {
		return status
	}
	return c.fail(http.StatusServiceUnavailable, "unavailable", "boreal is down (scenario broken)")
}

// malformed sends unit_cents as a string, which a strict client must reject.
func malformed(p *Provider, c *supplierCall) int {
	if status, ok := p.work(c, p.scaled(baseLatency[c.supplier])); !ok {
		return status
	}
	q := c.quote()
	return c.ok(mustJSON(struct {
		Supplier      string `json:"supplier"`
		SKU           string `json:"sku"`
		UnitCents     string `json:"unit_cents"`
		ShippingCents int    `json:"shipping_cents"`
		Stock         int    `json:"stock"`
	}{q.Supplier, q.SKU, fmt.Sprint(q.UnitCents), q.ShippingCents, q.Stock}))
}

// flaky fails the first request of each X-Request-ID with 503 and answers
// the next ones normally; without the header every request is a first.
func flaky(p *Provider, c *supplierCall) int {
	first := p.firstOf("flaky", c.id)
	if !first {
		return normal(p, c)
	}
	if status, ok := p.work(c, p.scaled(baseLatency[c.supplier])); !ok {
		return status
	}
	return c.fail(http.StatusServiceUnavailable, "unavailable",
		"boreal fails the first request of each X-Request-ID (scenario flaky); retry with the same ID")
}

// badGzip claims a gzip body but sends plain bytes, so decoding fails.
func badGzip(p *Provider, c *supplierCall) int {
	if status, ok := p.work(c, p.scaled(baseLatency[c.supplier])); !ok {
		return status
	}
	h := c.w.Header()
	h["Content-Encoding"] = []string{"gzip"}
	writeBody(c.w, http.StatusOK, []byte("these bytes are not gzip\n"))
	return http.StatusOK
}

// reset kills the connection with a TCP RST, before any response byte, on the
// first request of each X-Request-ID (every request without the header), and
// answers later ones normally.
func reset(p *Provider, c *supplierCall) int {
	if !p.firstOf("reset", c.id) {
		return normal(p, c)
	}
	if status, ok := p.work(c, p.scaled(baseLatency[c.supplier])); !ok {
		return status
	}
	conn, _, err := http.NewResponseController(c.w).Hijack()
	if err != nil { // not a plain HTTP/1 connection (e.g. a recorder in a test)
		return c.fail(http.StatusInternalServerError, "reset_unsupported", "cannot reset this connection: "+err.Error())
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0) // close sends RST instead of FIN
	}
	c.cut = conn // closed by counted once the request has left the counters
	return 0
}

// mismatch answers with a well-formed quote that names another SKU.
func mismatch(p *Provider, c *supplierCall) int {
	if status, ok := p.work(c, p.scaled(baseLatency[c.supplier])); !ok {
		return status
	}
	q := c.quote()
	q.SKU = otherSKU(c.sku)
	return c.ok(mustJSON(q))
}

// firstOf reports whether this is the first request of request ID id for
// scenario name, in one atomic check-and-set. An empty id is always a first.
func (p *Provider) firstOf(name, id string) bool {
	if id == "" {
		return true
	}
	return incr(p.seen, name+"\x00"+id) == 1
}

// quote returns the catalog quote this call asks for.
func (c *supplierCall) quote() Quote { return catalog[quoteKey{Suppliers[c.supplier], c.sku}] }

// ok writes a 200 with body.
func (c *supplierCall) ok(body []byte) int {
	writeBody(c.w, http.StatusOK, body)
	return http.StatusOK
}

// fail writes an error response.
func (c *supplierCall) fail(status int, code, detail string) int {
	writeError(c.w, status, code, detail)
	return status
}

package provider

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A scenario is what boreal does when a request asks for it by name. Atlas
// and cedar answer normally in every scenario. Every request goes through
// the same steps (quote does them): arrive, if set, runs at once and may
// answer there (a rate limiter, an outage); otherwise boreal works for delay,
// honouring X-Budget-Ms and the client's presence, and answer writes the
// response.
type scenario struct {
	name  string
	since int           // the lesson whose checkpoint first accepts it
	delay time.Duration // boreal's work before answering (× LatencyScale); zero: its base latency
	// plan, if set, replaces delay: the work before answering, per request
	// (× LatencyScale).
	plan func(p *Provider, c *supplierCall) time.Duration
	// everySupplier: atlas and cedar play it too (tail: a quote waits for
	// its slowest supplier, so every supplier has a tail).
	everySupplier bool
	// arrive runs when the request arrives, before any work. It returns the
	// status it wrote, or 0 to let the request go on.
	arrive func(p *Provider, c *supplierCall) int
	// answer writes the response after the work and returns the status it
	// wrote (0 when none: connection reset).
	answer func(p *Provider, c *supplierCall) int
}

// scenarios is the table of every scenario, in the order messages list them.
var scenarios = []scenario{
	{name: "normal", since: 12, answer: answerQuote},                         // 200 with the catalog quote after the base latency
	{name: "slow", since: 12, delay: slowDelay, answer: answerQuote},         // the same 200, after 1500 ms
	{name: "broken", since: 12, answer: unavailable},                         // 503 every time
	{name: "malformed", since: 12, answer: stringPrice},                      // 200 whose unit_cents is a JSON string
	{name: "flaky", since: 12, arrive: noteFirst, answer: failFirst},         // 503 for the first request of each X-Request-ID, then normal
	{name: "gzip", since: 12, answer: badGzip},                               // 200 with Content-Encoding: gzip and bytes that are not gzip
	{name: "reset", since: 12, arrive: noteFirst, answer: resetFirst},        // first request of each X-Request-ID: TCP reset before any byte
	{name: "mismatch", since: 12, answer: otherSKUQuote},                     // 200 with a well-formed quote for another SKU
	{name: "ratelimited", since: 16, arrive: limitRate, answer: answerQuote}, // at most 5 requests in any 200 ms, else 429
	{name: "outage", since: 16, arrive: outage, answer: answerQuote},         // 503 for 1500 ms from the first request after a reset
	{name: "costlimited", since: 17, arrive: limitCost, answer: answerQuote}, // at most 100 units of qty in any 1000 ms, else 429
	// Every supplier: a seeded latency, about 98 % 20-60 ms, about 2 % 1000-1500 ms.
	{name: "tail", since: 18, plan: tailLatency, everySupplier: true, answer: answerQuote},
	// boreal down for a stated window of its schedule (503 at once, or hung
	// past any read limit: Options.BrownoutShape), healthy before and after.
	{name: "brownout", since: 19, arrive: brownout, plan: brownoutLatency, answer: brownoutAnswer},
	// Every supplier: C calls at once at a seeded base latency, slower with
	// every call beyond C, 503 at once beyond 3×C; C follows a stated
	// schedule (12 → 4 → 12 over 30 s, repeating).
	{name: "capacity", since: 20, arrive: capacityArrive, plan: capacityLatency, everySupplier: true, answer: answerQuote},
}

// Scenario timings (slowDelay and outageLength are × LatencyScale; the rate
// limit is a policy, not a latency, and is never scaled).
const (
	slowDelay    = 1500 * time.Millisecond
	outageLength = 1500 * time.Millisecond
	rateWindow   = 200 * time.Millisecond
	rateMax      = 5
	costWindow   = 1000 * time.Millisecond
	costMax      = 100 // units of cost (qty) admitted in any costWindow; ≥ MaxQty, so every request can get in
)

// scenarioNamed returns the scenario called name, or nil.
func scenarioNamed(name string) *scenario {
	for i := range scenarios {
		if scenarios[i].name == name {
			return &scenarios[i]
		}
	}
	return nil
}

// scenarioList is "normal, slow, …": every name, for messages.
var scenarioList = func() string {
	names := make([]string, len(scenarios))
	for i, s := range scenarios {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}()

// ScenariosUpTo returns, in table order, the names of the scenarios that
// arrived in lesson n or earlier: those the checkpoint of lesson n accepts.
func ScenariosUpTo(n int) []string {
	var names []string
	for _, s := range scenarios {
		if s.since <= n {
			names = append(names, s.name)
		}
	}
	return names
}

// A supplierCall is one supplier request being answered.
type supplierCall struct {
	call
	sc        *scenario
	supplier  int    // index in Suppliers
	sku       string // a catalog SKU
	id        string // X-Request-ID, "" when absent
	budgetMs  int64  // X-Budget-Ms, when hasBudget
	hasBudget bool
	qty       int   // the qty parameter: the order's quantity, the request's cost under costlimited (1 when absent)
	nth       int64 // how many requests of this X-Request-ID this supplier had before this one (tail's key)
	hang      bool  // brownout: this request arrived in the window of shape hang
	capacity  int   // capacity: the supplier's C when this request arrived
	inFlight  int64 // capacity: the supplier's calls in flight with this one, on arrival
	// held, when set, is a gauge this call holds from its arrive step to
	// its end (capacity: its supplier's calls in flight).
	held   *atomic.Int64
	hedged bool      // another request of this X-Request-ID was running at this supplier when this one arrived
	lost   bool      // lost_cancelled: its client hung up after a concurrent sibling had answered
	first  bool      // flaky, reset: the first request of its X-Request-ID (noted on arrival)
	cut    net.Conn  // set by resetFirst: the hijacked connection to close with an RST
	rec    *idRecord // this ID's record, as logged on arrival
	entry  int       // this attempt's index in rec's log (-1: not logged)
	// retryAfterMs is the Retry-After-Ms this call's 429 gave (0: none).
	retryAfterMs int64
}

// answerQuote writes the catalog quote.
func answerQuote(p *Provider, c *supplierCall) int {
	return c.ok(p.normal[quoteKey{Suppliers[c.supplier], c.sku}])
}

// unavailable is 503 every time.
func unavailable(p *Provider, c *supplierCall) int {
	return c.fail(http.StatusServiceUnavailable, "unavailable", "boreal is down (scenario broken)")
}

// stringPrice sends unit_cents as a string, which a strict client must reject.
func stringPrice(p *Provider, c *supplierCall) int {
	q := c.quote()
	return c.ok(mustJSON(struct {
		Supplier      string `json:"supplier"`
		SKU           string `json:"sku"`
		UnitCents     string `json:"unit_cents"`
		ShippingCents int    `json:"shipping_cents"`
		Stock         int    `json:"stock"`
	}{q.Supplier, q.SKU, fmt.Sprint(q.UnitCents), q.ShippingCents, q.Stock}))
}

// noteFirst notes, on arrival and in one atomic check-and-set, whether this
// is the first request of its X-Request-ID for this scenario (a request
// without the header always is).
func noteFirst(p *Provider, c *supplierCall) int {
	c.first = c.id == "" || incr(c.st.seen, c.sc.name+"\x00"+c.id) == 1
	return 0
}

// failFirst fails the first request of each X-Request-ID with 503 and
// answers the next ones normally.
func failFirst(p *Provider, c *supplierCall) int {
	if !c.first {
		return answerQuote(p, c)
	}
	return c.fail(http.StatusServiceUnavailable, "unavailable",
		"boreal fails the first request of each X-Request-ID (scenario flaky); retry with the same ID")
}

// badGzip claims a gzip body but sends plain bytes, so decoding fails.
func badGzip(p *Provider, c *supplierCall) int {
	h := c.w.Header()
	h["Content-Encoding"] = []string{"gzip"}
	writeBody(c.w, http.StatusOK, []byte("these bytes are not gzip\n"))
	return http.StatusOK
}

// resetFirst kills the connection with a TCP RST, before any response byte,
// on the first request of each X-Request-ID, and answers later ones normally.
func resetFirst(p *Provider, c *supplierCall) int {
	if !c.first {
		return answerQuote(p, c)
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

// otherSKUQuote answers with a well-formed quote that names another SKU.
func otherSKUQuote(p *Provider, c *supplierCall) int {
	q := c.quote()
	q.SKU = otherSKU(c.sku)
	return c.ok(mustJSON(q))
}

// limitRate admits at most rateMax boreal requests in any rateWindow
// (one window for the whole lab, over every client) and answers the rest
// 429 at once, saying when a slot frees: Retry-After in HTTP's whole
// seconds (1) and Retry-After-Ms precisely. A request with an X-Request-ID
// that comes back before that is counted in early_retries (on arrival).
func limitRate(p *Provider, c *supplierCall) int {
	wait, ok := c.st.window.admit()
	if ok {
		return 0
	}
	ms := c.tooMany(wait)
	return c.fail(http.StatusTooManyRequests, "rate_limited", fmt.Sprintf(
		"boreal admits %d requests in any %d ms (scenario ratelimited); a slot frees in %d ms",
		rateMax, rateWindow.Milliseconds(), ms))
}

// limitCost admits boreal requests while the cost (qty) admitted in the
// last costWindow, with this one's, stays within costMax (one window for
// the whole lab, over every client), and answers the rest 429 at once,
// saying when enough cost leaves the window for this one: Retry-After in
// whole seconds and Retry-After-Ms precisely. A request's cost is its qty
// parameter (1 without one). Early retries are counted as for ratelimited.
func limitCost(p *Provider, c *supplierCall) int {
	wait, ok := c.st.costs.admit(c.qty)
	if ok {
		c.st.costAdmitted.Add(int64(c.qty))
		return 0
	}
	ms := c.tooMany(wait)
	return c.fail(http.StatusTooManyRequests, "cost_limited", fmt.Sprintf(
		"boreal admits %d units of cost (qty) in any %d ms (scenario costlimited); this request costs %d, which fits in %d ms",
		costMax, costWindow.Milliseconds(), c.qty, ms))
}

// tooMany sets a 429's Retry-After (whole seconds, rounded up) and
// Retry-After-Ms for a wait, records when the request's ID may come back
// (for early_retries and the request log), and returns the wait in ms.
func (c *supplierCall) tooMany(wait time.Duration) int64 {
	ms := int64((wait + time.Millisecond - 1) / time.Millisecond) // round up: never too early
	c.retryAfterMs = ms
	if c.id != "" {
		back := c.arrival.Add(time.Duration(ms) * time.Millisecond)
		c.st.ids.view(c.id, func(rec *idRecord) {
			rec.retryAt[c.supplier] = back
			if rec == c.rec && c.entry >= 0 {
				rec.log.entries[c.entry].retryAfterMs = ms
			}
		})
	}
	h := c.w.Header()
	h["Retry-After"] = []string{strconv.FormatInt(max(1, (ms+999)/1000), 10)}
	h["Retry-After-Ms"] = []string{strconv.FormatInt(ms, 10)}
	return ms
}

// outage answers 503 at once to every boreal request for outageLength
// (× LatencyScale) from its first outage request after a reset.
func outage(p *Provider, c *supplierCall) int {
	st := c.st
	st.outageMu.Lock()
	if st.outageStart.IsZero() {
		st.outageStart = c.arrival
	}
	start := st.outageStart
	st.outageMu.Unlock()
	length := p.scaled(outageLength)
	left := start.Add(length).Sub(c.arrival)
	if left <= 0 {
		return 0
	}
	return c.fail(http.StatusServiceUnavailable, "unavailable", fmt.Sprintf(
		"boreal is down for %d ms from its first request after a reset (scenario outage); back in %d ms",
		length.Milliseconds(), (left+time.Millisecond-1)/time.Millisecond))
}

// A rateWindowLog remembers the times of the last rateMax admissions.
type rateWindowLog struct {
	mu       sync.Mutex
	admitted [rateMax]time.Time // a ring: once full, admitted[next] is the oldest
	n, next  int
}

// admit admits a request now if fewer than rateMax were admitted in the
// last rateWindow; otherwise it returns how long until the oldest of those
// leaves the window.
func (w *rateWindowLog) admit() (wait time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if w.n < rateMax {
		w.admitted[w.n] = now
		w.n++
		return 0, true
	}
	if free := w.admitted[w.next].Add(rateWindow); now.Before(free) {
		return free.Sub(now), false
	}
	w.admitted[w.next] = now
	w.next = (w.next + 1) % rateMax
	return 0, true
}

// A costWindowLog remembers the admissions of the last costWindow, oldest
// first, with their cost. Every cost is at least 1 and their sum at most
// costMax, so costMax entries always suffice: bounded in count and size.
type costWindowLog struct {
	mu      sync.Mutex
	at      [costMax]time.Time
	cost    [costMax]int
	head, n int // a ring: at[head] is the oldest of n entries
	sum     int // the cost of the n entries
}

// admit admits a request of cost c (1 ≤ c ≤ costMax) now if the cost
// admitted in the last costWindow plus c is at most costMax; otherwise it
// returns how long until enough of that cost leaves the window.
func (w *costWindowLog) admit(c int) (wait time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for w.n > 0 && !now.Before(w.at[w.head].Add(costWindow)) {
		w.sum -= w.cost[w.head]
		w.head = (w.head + 1) % costMax
		w.n--
	}
	if w.sum+c <= costMax {
		i := (w.head + w.n) % costMax
		w.at[i], w.cost[i] = now, c
		w.n++
		w.sum += c
		return 0, true
	}
	need, freed := w.sum+c-costMax, 0
	for k := range w.n {
		i := (w.head + k) % costMax
		if freed += w.cost[i]; freed >= need {
			return w.at[i].Add(costWindow).Sub(now), false
		}
	}
	return costWindow, false // not reached: c ≤ costMax, so freeing every entry suffices
}

// The tail scenario's distribution: a request is a straggler with
// probability tailStragglerPPM per million; a straggler takes
// tailSlowMin..tailSlowMax, any other tailFastMin..tailFastMax (uniform;
// × LatencyScale).
const (
	tailStragglerPPM = 20000 // 2 %
	tailFastMin      = 20 * time.Millisecond
	tailFastMax      = 60 * time.Millisecond
	tailSlowMin      = 1000 * time.Millisecond
	tailSlowMax      = 1500 * time.Millisecond
)

// tailLatency draws a request's latency from the tail distribution, keyed
// by (seed, supplier, X-Request-ID, how many requests of that ID this
// supplier had before): the same seed and requests give the same
// latencies, a hedge (the ID's second request) gets a draw of its own, and
// no state is kept beyond the request log. Requests without an ID are
// keyed by their arrival order among such requests.
func tailLatency(p *Provider, c *supplierCall) time.Duration {
	n := c.nth
	if c.id == "" {
		n = c.st.tailAnon.Add(1) - 1
	}
	slow, frac := tailDraw(p.seed, c.supplier, c.id, n)
	if slow {
		c.st.stragglers.Add(1)
		return tailSlowMin + time.Duration(frac*float64(tailSlowMax-tailSlowMin))
	}
	return tailFastMin + time.Duration(frac*float64(tailFastMax-tailFastMin))
}

// tailDraw hashes the key (FNV-1a over it, then SplitMix64's finaliser)
// into whether the request straggles and a fraction in [0, 1) that places
// it within its range.
func tailDraw(seed uint64, supplier int, id string, n int64) (slow bool, frac float64) {
	h := uint64(14695981039346656037)
	mix := func(b byte) { h ^= uint64(b); h *= 1099511628211 }
	for i := range 8 {
		mix(byte(seed >> (8 * i)))
	}
	mix(byte(supplier))
	for i := range 8 {
		mix(byte(uint64(n) >> (8 * i)))
	}
	for i := 0; i < len(id); i++ {
		mix(id[i])
	}
	a := splitmix(h)
	b := splitmix(a)
	return a%1000000 < tailStragglerPPM, float64(b>>11) / (1 << 53)
}

// splitmix is SplitMix64's output function: a bijection that spreads every
// input bit over the output.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
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

// BrownoutShape is how boreal fails inside brownout's window.
type BrownoutShape string

const (
	// Brownout503 answers 503 at once: a supplier that knows it is down.
	Brownout503 BrownoutShape = "503"
	// BrownoutHang holds each request for the schedule's hang (3 s ×
	// LatencyScale), far past any client's read limit, then answers 503
	// (504 at an X-Budget-Ms that comes first): a supplier that accepts
	// and stalls.
	BrownoutHang BrownoutShape = "hang"
)

// brownout's schedule, × LatencyScale, from boreal's first brownout request
// after a reset: healthy for brownoutStart, down until brownoutEnd, then
// healed. A hung request holds for brownoutHang.
const (
	brownoutStart = 6 * time.Second
	brownoutEnd   = 14 * time.Second
	brownoutHang  = 3 * time.Second
)

// brownoutPhase says where t (since the schedule began) falls.
func brownoutPhase(t, start, end time.Duration) string {
	switch {
	case t < start:
		return "healthy"
	case t < end:
		return "down"
	}
	return "healed"
}

// brownout starts the schedule on boreal's first brownout request after a
// reset, and inside the window fails the request at once (shape 503) or
// marks it to hang (shape hang).
func brownout(p *Provider, c *supplierCall) int {
	st := c.st
	st.outageMu.Lock()
	if st.brownoutBegan.IsZero() {
		st.brownoutBegan = c.arrival
	}
	began := st.brownoutBegan
	st.outageMu.Unlock()
	start, end := p.scaled(brownoutStart), p.scaled(brownoutEnd)
	at := c.arrival.Sub(began)
	if brownoutPhase(at, start, end) != "down" {
		return 0
	}
	st.brownoutFailed.Add(1)
	if p.brownoutShape == BrownoutHang {
		c.hang = true
		return 0
	}
	return c.fail(http.StatusServiceUnavailable, "unavailable", fmt.Sprintf(
		"boreal is down from %d to %d ms of its schedule (scenario brownout, shape 503); now at %d ms",
		start.Milliseconds(), end.Milliseconds(), at.Milliseconds()))
}

// brownoutLatency is a hung request's hang, or else a seeded draw from
// tail's fast range (keyed like tail's: the same seed and requests give the
// same latencies), so a healthy boreal is a realistic one.
func brownoutLatency(p *Provider, c *supplierCall) time.Duration {
	if c.hang {
		return brownoutHang
	}
	n := c.nth
	if c.id == "" {
		n = c.st.tailAnon.Add(1) - 1
	}
	_, frac := tailDraw(p.seed, c.supplier, c.id, n)
	return tailFastMin + time.Duration(frac*float64(tailFastMax-tailFastMin))
}

// brownoutAnswer is the quote, or after a hang a 503.
func brownoutAnswer(p *Provider, c *supplierCall) int {
	if !c.hang {
		return answerQuote(p, c)
	}
	return c.fail(http.StatusServiceUnavailable, "unavailable", fmt.Sprintf(
		"boreal hung for %d ms (scenario brownout, shape hang)", p.scaled(brownoutHang).Milliseconds()))
}

// capacity's schedule: from the first capacity request after a reset (any
// supplier), each supplier serves capacitySteps[i].c calls at once from
// capacitySteps[i].from on, the whole repeating every capacityPeriod; the
// times are × LatencyScale (at scale 0 the first step holds for ever).
var capacitySteps = []struct {
	from time.Duration
	c    int
}{{0, 12}, {10 * time.Second, 4}, {20 * time.Second, 12}}

// capacity's other numbers: a call's base latency is a seeded draw in
// capacityBaseMin..capacityBaseMax (× LatencyScale); a supplier holding
// more than capacityShed × C calls answers the next one 503 at once.
const (
	capacityPeriod  = 30 * time.Second
	capacityBaseMin = 40 * time.Millisecond
	capacityBaseMax = 60 * time.Millisecond
	capacityShed    = 3
)

// capacityAt returns the capacity C at t since the schedule began, the
// index of its step and t within the period.
func (p *Provider) capacityAt(t time.Duration) (c, step int, in time.Duration) {
	period := p.scaled(capacityPeriod)
	if period <= 0 {
		return capacitySteps[0].c, 0, 0
	}
	in = t % period
	for i := len(capacitySteps) - 1; i >= 0; i-- {
		if in >= p.scaled(capacitySteps[i].from) {
			return capacitySteps[i].c, i, in
		}
	}
	return capacitySteps[0].c, 0, in // not reached: the first step is from 0
}

// capacityArrive starts the schedule on the first capacity request after a
// reset, counts the call in its supplier's calls in flight (until it ends:
// supplierCall.held), and answers 503 at once when the supplier then holds
// more than capacityShed × C.
func capacityArrive(p *Provider, c *supplierCall) int {
	st := c.st
	st.outageMu.Lock()
	if st.capacityBegan.IsZero() {
		st.capacityBegan = c.arrival
	}
	began := st.capacityBegan
	st.outageMu.Unlock()
	capC, _, _ := p.capacityAt(c.arrival.Sub(began))
	c.held = &st.capacityInFlight[c.supplier]
	n := c.held.Add(1)
	c.capacity, c.inFlight = capC, n
	if n > int64(capacityShed*capC) {
		st.capacityShed.Add(1)
		return c.fail(http.StatusServiceUnavailable, "overloaded", fmt.Sprintf(
			"%s serves %d calls at once now (scenario capacity) and holds %d with this one, more than %d: shed",
			Suppliers[c.supplier], capC, n, capacityShed*capC))
	}
	if n > int64(capC) {
		st.capacityQueued.Add(1)
	}
	return 0
}

// capacityLatency is a seeded base latency (keyed like tail's: the same
// seed and requests give the same latencies), stretched by n/C when the
// supplier holds n > C calls with this one: n calls served C at a time
// take n/C times as long, so the supplier answers at most C calls per base
// latency however many it holds.
func capacityLatency(p *Provider, c *supplierCall) time.Duration {
	n := c.nth
	if c.id == "" {
		n = c.st.tailAnon.Add(1) - 1
	}
	_, frac := tailDraw(p.seed, c.supplier, c.id, n)
	base := capacityBaseMin + time.Duration(frac*float64(capacityBaseMax-capacityBaseMin))
	if c.inFlight > int64(c.capacity) {
		return time.Duration(float64(base) * float64(c.inFlight) / float64(c.capacity))
	}
	return base
}

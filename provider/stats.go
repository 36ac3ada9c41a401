package provider

import (
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
)

// counters are the lab's statistics. Every field is an atomic, so counting
// takes no lock on the hot path.
type counters struct {
	total       atomic.Int64
	active      atomic.Int64 // gauge: handlers running now; never zeroed
	maxActive   atomic.Int64
	perSupplier [len(Suppliers)]atomic.Int64
	partner     atomic.Int64
	perStatus   [600]atomic.Int64
	abandoned   atomic.Int64 // stopped at the X-Budget-Ms budget (504)
	resets      atomic.Int64 // connections reset on purpose (scenario reset)
	clientGone  atomic.Int64 // the client left before the answer
}

// A workHandler answers a supplier or partner request. It returns the
// status it wrote (0: none) and, when it hijacked the connection to reset
// it, that connection: counted closes it only after the request has left
// the counters, so a client that sees the reset also sees it in /stats.
type workHandler func(http.ResponseWriter, *http.Request) (status int, cut net.Conn)

// counted wraps a work handler so /stats sees it: total and active go up on
// entry, active goes down when it returns, and its status is tallied.
func (p *Provider) counted(h workHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status, cut := p.count(h, w, r)
		if status == 0 && cut == nil {
			// Interrupted (client gone, or cut at shutdown) before answering:
			// drop the connection, or net/http would send an empty 200.
			cut, _, _ = http.NewResponseController(w).Hijack()
		}
		if cut != nil {
			cut.Close() // after a reset's SetLinger(0), the client gets an RST
		}
	}
}

// count runs h between the counter updates.
func (p *Provider) count(h workHandler, w http.ResponseWriter, r *http.Request) (int, net.Conn) {
	s := &p.stats
	s.total.Add(1)
	raiseMax(&s.maxActive, s.active.Add(1))
	defer s.active.Add(-1)
	status, cut := h(w, r)
	if status > 0 && status < len(s.perStatus) {
		s.perStatus[status].Add(1)
	}
	if cut != nil {
		s.resets.Add(1)
	}
	return status, cut
}

// raiseMax sets peak to v if v is larger (a CAS loop: no lock).
func raiseMax(peak *atomic.Int64, v int64) {
	for {
		old := peak.Load()
		if v <= old || peak.CompareAndSwap(old, v) {
			return
		}
	}
}

// Stats is the body of GET /stats.
type Stats struct {
	Total       int64            `json:"total"`
	Active      int64            `json:"active"`
	MaxActive   int64            `json:"max_active"`
	PerSupplier PerSupplier      `json:"per_supplier"`
	Partner     int64            `json:"partner"`
	PerStatus   map[string]int64 `json:"per_status"`
	Abandoned   int64            `json:"abandoned"`
	Resets      int64            `json:"resets"`
	ClientGone  int64            `json:"client_gone"`
	TrackedKeys TrackedKeys      `json:"tracked_keys"`
}

// PerSupplier counts supplier requests (or one request ID's attempts) by supplier.
type PerSupplier struct {
	Atlas  int64 `json:"atlas"`
	Boreal int64 `json:"boreal"`
	Cedar  int64 `json:"cedar"`
}

// TrackedKeys reports how many keys each bounded per-key table remembers.
type TrackedKeys struct {
	Scenario int64 `json:"scenario"` // flaky and reset request IDs
	Partner  int64 `json:"partner"`  // /call keys
	Requests int64 `json:"requests"` // request IDs with attempts
	Max      int64 `json:"max_per_table"`
}

// RequestStats is the body of GET /stats/requests?id=.
type RequestStats struct {
	ID       string      `json:"id"`
	Attempts PerSupplier `json:"attempts"`
}

// Snapshot returns the current statistics (what GET /stats serves).
func (p *Provider) Snapshot() Stats {
	s := &p.stats
	out := Stats{
		Total:     s.total.Load(),
		Active:    s.active.Load(),
		MaxActive: s.maxActive.Load(),
		PerSupplier: PerSupplier{
			Atlas: s.perSupplier[0].Load(), Boreal: s.perSupplier[1].Load(), Cedar: s.perSupplier[2].Load(),
		},
		Partner:    s.partner.Load(),
		PerStatus:  map[string]int64{},
		Abandoned:  s.abandoned.Load(),
		Resets:     s.resets.Load(),
		ClientGone: s.clientGone.Load(),
		TrackedKeys: TrackedKeys{
			Scenario: int64(p.seen.len()), Partner: int64(p.partner.len()),
			Requests: int64(p.attempts.len()), Max: int64(p.maxKeys),
		},
	}
	for code := range s.perStatus {
		if n := s.perStatus[code].Load(); n > 0 {
			out.PerStatus[strconv.Itoa(code)] = n
		}
	}
	return out
}

// Reset zeroes every counter and forgets all per-key state. The active gauge
// is left alone (those handlers are still running) and max_active restarts
// from it.
func (p *Provider) Reset() {
	s := &p.stats
	s.total.Store(0)
	s.maxActive.Store(s.active.Load())
	for i := range s.perSupplier {
		s.perSupplier[i].Store(0)
	}
	s.partner.Store(0)
	for i := range s.perStatus {
		s.perStatus[i].Store(0)
	}
	s.abandoned.Store(0)
	s.resets.Store(0)
	s.clientGone.Store(0)
	p.seen.clear()
	p.partner.clear()
	p.attempts.clear()
}

// statsHandler serves GET /stats.
func (p *Provider) statsHandler(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, p.Snapshot())
}

// requestStats serves GET /stats/requests?id=: attempts per supplier for one X-Request-ID.
func (p *Provider) requestStats(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		writeError(w, http.StatusBadRequest, "bad_request", "query parameter id (an X-Request-ID) is required")
		return
	}
	a, _ := p.attempts.get(id)
	writeJSON(w, http.StatusOK, RequestStats{ID: id, Attempts: PerSupplier{Atlas: a[0], Boreal: a[1], Cedar: a[2]}})
}

// reset serves POST /reset.
func (p *Provider) reset(w http.ResponseWriter, r *http.Request) {
	p.Reset()
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// Package provider is the QuoteFlow provider lab: three simulated suppliers
// (atlas, boreal, cedar) whose faults are chosen per request with a scenario,
// a partner service for the time-budget lesson, control endpoints (/stats,
// /reset) and a blackhole listener whose connects time out.
//
// Everything is deterministic: the same requests in the same order give the
// same answers. Only boreal misbehaves; atlas and cedar always answer normally.
package provider

import (
	"encoding/json"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
)

// DefaultMaxKeys is the number of per-key entries (X-Request-ID, partner
// keys) remembered when Options.MaxKeys is zero.
const DefaultMaxKeys = 10000

// MaxKeyBytes is the longest X-Request-ID or partner key the lab accepts;
// a longer one is refused with 400. With MaxKeys it bounds the memory of
// every per-key table in size as well as in count.
const MaxKeyBytes = 128

// MaxLogPerKey is how many requests the lab logs per X-Request-ID (for
// /stats/requests) and per partner key (for /stats/partner); later ones are
// counted, not logged.
const MaxLogPerKey = 32

// MaxLatencyScale is the largest Options.LatencyScale: the slowest delay
// (1500 ms) becomes 150 s.
const MaxLatencyScale = 100

// Options configures a Provider. The zero value is valid but removes every
// artificial delay; `lab provider` passes LatencyScale 1.
type Options struct {
	// LatencyScale multiplies every artificial delay: 1 gives the documented
	// latencies, 0 removes them (for benchmarks). NaN and negative values
	// count as 0, values above MaxLatencyScale (infinity too) as
	// MaxLatencyScale.
	LatencyScale float64
	// MaxKeys caps the number of remembered keys in each per-key table
	// (flaky/reset request IDs, partner keys, the log per request ID).
	// When a table is full the oldest key is forgotten. Zero means DefaultMaxKeys.
	MaxKeys int
}

// Provider serves the suppliers, partner and control endpoints. Create it
// with New; it is safe for concurrent use.
type Provider struct {
	scale     float64
	maxKeys   int
	active    atomic.Int64          // gauge: handlers running now; survives resets
	state     atomic.Pointer[state] // counters and per-key state; Reset swaps in a new one
	normal    map[quoteKey][]byte   // pre-encoded normal bodies: the hot path allocates nothing for them
	blackhole *Blackhole            // set by Start before serving; nil when there is none
}

// New returns a Provider configured by opts.
func New(opts Options) *Provider {
	scale := opts.LatencyScale
	if !(scale > 0) { // NaN too
		scale = 0
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultMaxKeys
	}
	p := &Provider{
		scale:   min(scale, MaxLatencyScale),
		maxKeys: opts.MaxKeys,
		normal:  make(map[quoteKey][]byte),
	}
	p.state.Store(p.newState())
	for k, q := range catalog {
		p.normal[k] = mustJSON(q)
	}
	return p
}

// Routes returns every route of the lab: the table of contents of its API.
func (p *Provider) Routes() *mux.Router {
	r := mux.NewRouter()
	// Suppliers (lessons 12-14).
	r.HandleFunc("/quotes/{supplier}", p.counted(p.quote)).Methods(http.MethodGet)
	// Partner (lesson 15).
	r.HandleFunc("/health", p.health).Methods(http.MethodGet) // counted in partner_paths only
	r.HandleFunc("/call", p.counted(p.call)).Methods(http.MethodGet)
	r.HandleFunc("/budget", p.counted(p.budget)).Methods(http.MethodGet)
	// Control: loopback clients only.
	r.HandleFunc("/stats", loopbackOnly(p.statsHandler)).Methods(http.MethodGet)
	r.HandleFunc("/stats/requests", loopbackOnly(p.requestStats)).Methods(http.MethodGet)
	r.HandleFunc("/stats/partner", loopbackOnly(p.partnerStats)).Methods(http.MethodGet)
	r.HandleFunc("/reset", loopbackOnly(p.reset)).Methods(http.MethodPost)

	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no route "+r.URL.Path)
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed on "+r.URL.Path)
	})
	return r
}

// scaled returns d multiplied by the latency scale.
func (p *Provider) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * p.scale)
}

// errorBody is the JSON shape of every error the lab returns.
type errorBody struct {
	Error  string `json:"error"`
	Detail string `json:"detail"`
}

// writeError writes {"error": code, "detail": detail} with status.
func writeError(w http.ResponseWriter, status int, code, detail string) {
	writeJSON(w, status, errorBody{Error: code, Detail: detail})
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, status, mustJSON(v))
}

// jsonContentType is shared by every response: net/http only reads it, and
// not allocating it per request matters on the benchmark's hot path.
var jsonContentType = []string{"application/json"}

// writeBody writes an already encoded JSON body with status.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	w.Write(body)
}

// mustJSON encodes v; the lab only encodes its own types, so failure is a bug.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("provider: encoding JSON: " + err.Error())
	}
	return append(b, '\n')
}

// loopbackOnly answers 403 to clients whose address is not a loopback address.
func loopbackOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isLoopback(r.RemoteAddr) {
			writeError(w, http.StatusForbidden, "forbidden", "control endpoints answer loopback clients only")
			return
		}
		h(w, r)
	}
}

// isLoopback reports whether remoteAddr ("host:port") is a loopback address.
func isLoopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

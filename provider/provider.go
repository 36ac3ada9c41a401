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
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
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
	// Seed keys the tail scenario's latency draws: the same seed and the
	// same requests give the same latencies. `lab provider` passes --seed
	// (DefaultSeed unless given); zero is a seed like any other.
	Seed uint64
	// BrownoutShape is how boreal fails inside scenario brownout's window:
	// Brownout503 (also for "") or BrownoutHang. `lab provider` passes
	// --brownout-shape. Any other value is taken as Brownout503.
	BrownoutShape BrownoutShape
	// StreamWriteTimeout drops a /stats/stream client that stops reading:
	// a write that has not gone out within it ends the stream. Zero means
	// DefaultStreamWriteTimeout; tests of the drop set it shorter.
	StreamWriteTimeout time.Duration
}

// DefaultSeed is the seed `lab provider` uses without --seed.
const DefaultSeed = 1

// Provider serves the suppliers, partner and control endpoints. Create it
// with New; it is safe for concurrent use.
type Provider struct {
	scale   float64
	maxKeys int
	seed    uint64
	// brownoutShape is Options.BrownoutShape, Brownout503 or BrownoutHang.
	brownoutShape BrownoutShape
	active        atomic.Int64          // gauge: handlers running now; survives resets
	flights       flights               // the requests active counts, with their connections
	state         atomic.Pointer[state] // counters and per-key state; Reset swaps in a new one
	normal        map[quoteKey][]byte   // pre-encoded normal bodies: the hot path allocates nothing for them
	blackhole     *Blackhole            // set by Start before serving; nil when there is none

	// The dashboard's: a gauge per supplier of its requests running now
	// (it survives resets too), and the open /stats/stream connections.
	supplierActive     [len(Suppliers)]atomic.Int64
	streams            streamGate
	streamWriteTimeout time.Duration // see Options.StreamWriteTimeout
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
	if opts.StreamWriteTimeout <= 0 {
		opts.StreamWriteTimeout = DefaultStreamWriteTimeout
	}
	p := &Provider{
		scale:   min(scale, MaxLatencyScale),
		maxKeys: opts.MaxKeys,
		seed:    opts.Seed,

		brownoutShape: Brownout503,
		normal:        make(map[quoteKey][]byte),
		streams:       newStreamGate(),

		streamWriteTimeout: opts.StreamWriteTimeout,
	}
	if opts.BrownoutShape == BrownoutHang {
		p.brownoutShape = BrownoutHang
	}
	p.state.Store(p.newState())
	for k, q := range catalog {
		p.normal[k] = mustJSON(q)
	}
	return p
}

// Routes returns every route of the lab: the table of contents of its API.
func (p *Provider) Routes() http.Handler {
	quote := p.counted(p.quote)
	return supplierFirst{quote: quote, router: p.router(quote)}
}

// router is every route of the lab in gorilla/mux; quote serves
// /quotes/{supplier}.
func (p *Provider) router(quote http.HandlerFunc) *mux.Router {
	r := mux.NewRouter()
	// Suppliers (lessons 12-14). supplierFirst answers them before r does.
	r.HandleFunc("/quotes/{supplier}", quote).Methods(http.MethodGet)
	// Partner (lesson 15).
	r.HandleFunc("/health", p.health).Methods(http.MethodGet) // counted in partner_paths only
	r.HandleFunc("/call", p.counted(p.call)).Methods(http.MethodGet)
	r.HandleFunc("/budget", p.counted(p.budget)).Methods(http.MethodGet)
	// Control: loopback clients naming a loopback host only; a change of
	// state also from no other origin, and as JSON (see controlOnly).
	r.HandleFunc("/stats", controlOnly(p.statsHandler)).Methods(http.MethodGet)
	r.HandleFunc("/stats/requests", controlOnly(p.requestStats)).Methods(http.MethodGet)
	r.HandleFunc("/stats/partner", controlOnly(p.partnerStats)).Methods(http.MethodGet)
	r.HandleFunc("/reset", controlOnly(p.reset)).Methods(http.MethodPost)
	// The dashboard: one page, and the live feed it reads.
	r.HandleFunc("/ui", controlOnly(serveDashboard)).Methods(http.MethodGet)
	r.HandleFunc("/stats/stream", controlOnly(p.stream)).Methods(http.MethodGet)

	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", "no route "+r.URL.Path)
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed on "+r.URL.Path)
	})
	return r
}

// supplierFirst hands a GET /quotes/{supplier} straight to quote and
// everything else to the router. It answers exactly what the router's
// route would (TestSupplierFirstAnswersAsTheRouter): the router's match
// (a regexp per route tried, a map for {supplier}, two copies of the
// request to carry the map and the route) cost the lab about a tenth of its
// throughput on the benchmark's path (provider/README.md, "Performance").
type supplierFirst struct {
	quote  http.HandlerFunc
	router *mux.Router
}

func (s supplierFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, ok := supplierPath(r.URL.Path); ok && r.Method == http.MethodGet {
		s.quote(w, r)
		return
	}
	s.router.ServeHTTP(w, r)
}

// supplierPath returns the {supplier} of a path the router would send to
// /quotes/{supplier} as it is: one segment after /quotes/, not empty, and
// not "." or ".." (the router redirects a path it cleans).
func supplierPath(path string) (string, bool) {
	name, ok := strings.CutPrefix(path, "/quotes/")
	if !ok || name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 {
		return "", false
	}
	return name, true
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

// crossOrigin refuses a browser's request that changes state from another
// origin: its Sec-Fetch-Site says so, or (older browsers) its Origin names
// another host than its Host.
var crossOrigin = http.NewCrossOriginProtection()

// controlOnly guards a control endpoint. Its caller must be on this machine:
//   - the TCP peer is a loopback address (403 forbidden);
//   - the Host header names a loopback host: localhost, or a loopback IP
//     literal such as 127.0.0.1 or [::1], with any port (403
//     forbidden_host). A page whose own name was made to resolve to
//     127.0.0.1 (DNS rebinding) sends its own name, so it cannot read /stats
//     or /ui.
//
// A request that changes state (any method but GET and HEAD) must also
//   - come from no other origin: a browser's Sec-Fetch-Site, or its Origin,
//     must say same-origin (403 cross_origin);
//   - when it carries a browser's headers (Origin, Referer, any Sec-Fetch-*)
//     or a Content-Type, carry Content-Type: application/json (415
//     json_required). A page on another origin can send that only after a
//     CORS preflight, which the lab never grants; a form or a no-cors fetch
//     cannot send it at all. A program that sends none of these headers
//     (curl -X POST) is no web page: it needs no Content-Type.
func controlOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !isLoopback(r.RemoteAddr) {
			writeError(w, http.StatusForbidden, "forbidden", "control endpoints answer loopback clients only")
			return
		}
		if !isLoopbackHost(r.Host) {
			writeError(w, http.StatusForbidden, "forbidden_host", fmt.Sprintf(
				"control endpoints answer only requests for a loopback host (127.0.0.1, localhost or [::1], with any port); this one names %s",
				quoted(r.Host)))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := crossOrigin.Check(r); err != nil {
				writeError(w, http.StatusForbidden, "cross_origin",
					"a control request that changes state must come from the lab's own origin (Sec-Fetch-Site or Origin says it does not)")
				return
			}
			if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); (err != nil || mt != "application/json") && !bareClient(r) {
				writeError(w, http.StatusUnsupportedMediaType, "json_required", fmt.Sprintf(
					"%s %s with a Content-Type or a browser's headers needs Content-Type: application/json (the body may be empty; a bare curl -X POST needs neither); got %s",
					r.Method, r.URL.Path, quoted(r.Header.Get("Content-Type"))))
				return
			}
		}
		h(w, r)
	}
}

// bareClient reports whether r carries none of the headers a browser sends
// with a POST (Origin, Referer, Sec-Fetch-*) and no Content-Type: a program
// such as curl -X POST, not a web page. Every browser that runs pages today
// sends Origin (and Sec-Fetch-Site) with a POST, which crossOrigin checks;
// a form or a fetch with a body has a Content-Type.
func bareClient(r *http.Request) bool {
	for name := range r.Header {
		if name == "Origin" || name == "Referer" || name == "Content-Type" || strings.HasPrefix(name, "Sec-Fetch-") {
			return false
		}
	}
	return true
}

// fromOtherOrigin reports whether a browser says r comes from another origin,
// whatever its method: crossOrigin lets every GET through (a safe method
// changes nothing), but a /stats/stream holds one of MaxStreams slots for
// as long as it is open.
func fromOtherOrigin(r *http.Request) bool {
	probe := r.WithContext(r.Context()) // a shallow copy: r keeps its method
	probe.Method = http.MethodPost
	return crossOrigin.Check(probe) != nil
}

// isLoopbackHost reports whether a Host header ("name", "name:port",
// "[v6]:port") names a loopback host: localhost or a loopback IP literal.
func isLoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
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

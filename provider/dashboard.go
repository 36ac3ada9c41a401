package provider

import (
	"bytes"
	"context"
	_ "embed"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// The dashboard: GET /ui serves one self-contained page (HTML, CSS and
// script in one embedded file; it loads nothing else), and the page follows
// GET /stats/stream, a Server-Sent Events feed of the lab's counters, the
// calls in flight per supplier and the recent attempts.

//go:embed dashboard.html
var dashboardPage []byte

// dashboardCSP forbids the page every network access but its own stream
// and reset: no CDN, no web font, no image from elsewhere.
const dashboardCSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
	"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveDashboard serves GET /ui.
func serveDashboard(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", dashboardCSP)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(dashboardPage)
}

// Stream limits.
const (
	// MaxStreams is how many /stats/stream connections may be open at
	// once; one more is refused with 503 too_many_streams.
	MaxStreams = 8
	// StreamInterval is how often a stream looks for changes.
	StreamInterval = 100 * time.Millisecond
	// streamHeartbeat is the longest a stream stays silent: an unchanged
	// event is sent again this often, so a page can tell a quiet lab from
	// a dead feed.
	streamHeartbeat = time.Second
	// DefaultStreamWriteTimeout drops a client that stops reading: a write
	// of an event that has not gone out within it ends the stream (see
	// Options.StreamWriteTimeout).
	DefaultStreamWriteTimeout = 5 * time.Second
	// streamSendBuffer is the kernel send buffer of a stream's connection
	// (left to grow to megabytes, it would take minutes of events unread
	// before a write blocked).
	streamSendBuffer = 8 << 10
	// streamPadding is how much comment a stream opens with: more than a
	// client's receive buffer and the lab's send buffer hold together (about
	// 150 KB on Linux when the client never reads), so a client that never
	// reads blocks this first write, and is dropped the write timeout
	// after it connected, however quiet the lab.
	streamPadding = 256 << 10
)

// paddingLine is one comment line of the padding: ":" lines ended by a
// bare CR (an SSE line ending, which a terminal shows as one ":"), closed
// by a LF, 32 KiB in all, so a reader that splits on LF only sees comment
// lines well under its line limit.
var paddingLine = func() []byte {
	b := bytes.Repeat([]byte(":\r"), 32<<10/2)
	b[len(b)-1] = '\n'
	return b
}()

// connKey is the context key under which ConnContext stores a request's
// connection.
type connKey struct{}

// ConnContext is an http.Server's ConnContext that lets /stats/stream reach
// its connection, to keep the kernel's send buffer small (see
// streamSendBuffer): without it, a client that stops reading is dropped
// only once the buffer, which Linux lets grow to 4 MB, is full. Start sets
// it; set it on your own server (httptest.Server.Config) when serving
// Routes yourself.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// A StreamEvent is the data of one "stats" event on /stats/stream.
type StreamEvent struct {
	// Reset is true on a stream's first event and on the first event after
	// POST /reset: the receiver forgets the attempts it holds.
	Reset bool `json:"reset"`
	// Active is each supplier's requests running now; Peak their most at
	// once since the last reset (or start).
	Active PerSupplier `json:"active"`
	Peak   PerSupplier `json:"peak"`
	// Stats is what GET /stats answers at the same moment.
	Stats Stats `json:"stats"`
	// Attempts are the supplier attempts with an X-Request-ID that started,
	// ended or are still running since the previous event: at most FeedSize,
	// in arrival order.
	Attempts []FeedAttempt `json:"attempts"`
}

// streamGate counts open streams and ends them all at shutdown.
type streamGate struct {
	slots     chan struct{}
	closing   chan struct{}
	closeOnce sync.Once
}

func newStreamGate() streamGate {
	return streamGate{slots: make(chan struct{}, MaxStreams), closing: make(chan struct{})}
}

// A streamCursor is where one stream is: the state and feed revision its
// last event described, and the event it reuses.
type streamCursor struct {
	st  *state
	rev uint64
	ev  StreamEvent
}

// nextEvent fills c.ev with what changed since c's last event and returns
// its JSON (with mustJSON's newline).
func (p *Provider) nextEvent(c *streamCursor, now time.Time) []byte {
	ev := &c.ev
	if ev.Attempts == nil {
		ev.Attempts = make([]FeedAttempt, 0, 16) // [] rather than null when none
	}
	ev.Reset = false
	if st := p.state.Load(); st != c.st {
		c.st, c.rev, ev.Reset = st, 0, true
	}
	st := c.st
	ev.Attempts, c.rev = st.feed.since(c.rev, now, ev.Attempts[:0])
	// Not the calls whose client has hung up (see flights), as /stats.
	ev.Active = PerSupplier{p.flights.live(0), p.flights.live(1), p.flights.live(2)}
	ev.Peak = PerSupplier{ // at least active: a request between its two updates
		max(st.supplierPeak[0].Load(), ev.Active.Atlas),
		max(st.supplierPeak[1].Load(), ev.Active.Boreal),
		max(st.supplierPeak[2].Load(), ev.Active.Cedar),
	}
	ev.Stats = p.Snapshot()
	return mustJSON(ev)
}

// CloseStreams ends every open /stats/stream and refuses new ones: a
// server calls it when it starts shutting down, since a stream never goes
// idle by itself.
func (p *Provider) CloseStreams() { p.streams.closeOnce.Do(func() { close(p.streams.closing) }) }

// stream serves GET /stats/stream: an event at once, then one whenever
// something changed (looked at every StreamInterval), and at least one a
// second.
func (p *Provider) stream(w http.ResponseWriter, r *http.Request) {
	if fromOtherOrigin(r) { // before a slot is taken: a page elsewhere must not hold them
		writeError(w, http.StatusForbidden, "cross_origin",
			"/stats/stream is for the lab's own dashboard: a page on another origin (Sec-Fetch-Site or Origin says so) gets no stream")
		return
	}
	select {
	case <-p.streams.closing:
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "the lab is stopping")
		return
	case p.streams.slots <- struct{}{}:
		defer func() { <-p.streams.slots }()
	default:
		writeError(w, http.StatusServiceUnavailable, "too_many_streams",
			"at most 8 /stats/stream connections at once; close a dashboard tab")
		return
	}
	if tc, ok := r.Context().Value(connKey{}).(*net.TCPConn); ok {
		tc.SetWriteBuffer(streamSendBuffer)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	ticker := time.NewTicker(StreamInterval)
	defer ticker.Stop()

	var (
		cur      streamCursor
		last     []byte // the last event's data
		lastSent time.Time
		buf      bytes.Buffer
	)
	// Reconnect after a second if the feed drops; then the padding, which a
	// client that never reads cannot take (see streamPadding).
	rc.SetWriteDeadline(time.Now().Add(p.streamWriteTimeout))
	if _, err := io.WriteString(w, "retry: 1000\n\n"); err != nil {
		return
	}
	for range streamPadding / len(paddingLine) {
		if _, err := w.Write(paddingLine); err != nil {
			return
		}
	}
	for {
		now := time.Now()
		data := p.nextEvent(&cur, now)
		ev := &cur.ev
		if ev.Reset || len(ev.Attempts) > 0 || !bytes.Equal(data, last) || now.Sub(lastSent) >= streamHeartbeat {
			buf.WriteString("event: stats\ndata: ")
			buf.Write(data[:len(data)-1]) // without mustJSON's newline
			buf.WriteString("\n\n")
			rc.SetWriteDeadline(now.Add(p.streamWriteTimeout))
			if _, err := w.Write(buf.Bytes()); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
			buf.Reset()
			last, lastSent = data, now
		}
		select {
		case <-r.Context().Done():
			return
		case <-p.streams.closing:
			return
		case <-ticker.C:
		}
	}
}

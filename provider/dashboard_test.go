package provider_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

func TestDashboardPageIsOneFileThatLoadsNothingFromTheNetwork(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	r := s.get("/ui")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /ui: %d %s", r.status, r.header.Get("Content-Type"))
	}
	csp := r.header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q: the browser would let the page fetch from elsewhere", csp, want)
		}
	}
	// Nothing the browser would fetch: no external script, style sheet,
	// font, image or frame, and no absolute URL but the SVG namespace.
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<(script|img|iframe|link)[^>]*\s(src|href)=`),
		regexp.MustCompile(`(?i)@import|@font-face|url\(`),
		regexp.MustCompile(`(?i)https?://(?:[^w]|w[^w]|ww[^w])`), // anything but http://www.w3.org/…
	} {
		if m := bad.FindString(r.body); m != "" {
			t.Errorf("the page refers to something outside itself: %q", m)
		}
	}
	if n := strings.Count(r.body, "http://www.w3.org/2000/svg"); n != strings.Count(r.body, "http://") {
		t.Errorf("the page has absolute URLs other than the SVG namespace")
	}
	for _, want := range []string{`new EventSource("/stats/stream")`, `fetch("/reset", {method: "POST", headers: {"Content-Type": "application/json"}})`, `"inflight-" + s`, `id="limit"`} {
		if !strings.Contains(r.body, want) && !strings.Contains(r.body, strings.Trim(want, `"`)) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

func TestDashboardAndStreamAnswerLoopbackClientsOnly(t *testing.T) {
	t.Parallel()
	h := provider.New(provider.Options{}).Routes()
	for _, path := range []string{"/ui", "/stats/stream"} {
		for _, remote := range []string{"203.0.113.7:5555", "[2001:db8::1]:443"} {
			req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:9101"+path, nil)
			req.RemoteAddr = remote
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			wantError(t, recorded(rec), http.StatusForbidden, "forbidden")
		}
	}
}

// sseClient reads "stats" events from GET /stats/stream.
type sseClient struct {
	t      *testing.T
	cancel context.CancelFunc
	events chan provider.StreamEvent
	done   chan struct{}
}

// openStream connects to s's stream; it is closed when the test ends.
func openStream(t *testing.T, s *testServer) *sseClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/stats/stream", nil)
	resp, err := s.client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		cancel()
		resp.Body.Close()
		t.Fatalf("GET /stats/stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c := &sseClient{t: t, cancel: cancel, events: make(chan provider.StreamEvent, 1024), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && event == "stats":
				var ev provider.StreamEvent
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
					t.Errorf("stream data %q: %v", line, err)
					return
				}
				select {
				case c.events <- ev:
				case <-ctx.Done():
					return
				}
			case line == "":
				event = ""
			}
		}
	}()
	t.Cleanup(c.close)
	return c
}

func (c *sseClient) close() { c.cancel(); <-c.done }

// next returns the next event for which ok holds, failing after 5 s.
func (c *sseClient) next(what string, ok func(provider.StreamEvent) bool) provider.StreamEvent {
	c.t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, open := <-c.events:
			if !open {
				c.t.Fatalf("the stream ended while waiting for %s", what)
			}
			if ok(ev) {
				return ev
			}
		case <-c.done:
			c.t.Fatalf("the stream ended while waiting for %s", what)
		case <-timeout:
			c.t.Fatalf("no event with %s within 5 s", what)
		}
	}
}

func TestStreamSendsCountsInFlightAndAttempts(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{LatencyScale: 0.2}) // slow: 300 ms
	stream := openStream(t, s)
	first := stream.next("the first event", func(provider.StreamEvent) bool { return true })
	if !first.Reset || first.Stats.Total != 0 || len(first.Attempts) != 0 {
		t.Fatalf("first event %+v: want reset true and nothing counted", first)
	}

	// Three slow boreal calls at once: the stream shows them in flight and running.
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { s.get("/quotes/boreal?sku=KB-001&scenario=slow", "X-Request-ID", fmt.Sprintf("slow-%d", i)) })
	}
	ev := stream.next("boreal 3 in flight", func(ev provider.StreamEvent) bool { return ev.Active.Boreal == 3 })
	if ev.Active.Atlas != 0 || ev.Active.Cedar != 0 || ev.Peak.Boreal < 3 {
		t.Errorf("active %+v peak %+v, want boreal 3 only", ev.Active, ev.Peak)
	}
	wg.Wait()
	// A retried request with a budget: 503, then 200, both recorded with it.
	s.get("/quotes/boreal?sku=KB-001&scenario=flaky", "X-Request-ID", "retry-1", "X-Budget-Ms", "900")
	s.get("/quotes/boreal?sku=KB-001&scenario=flaky", "X-Request-ID", "retry-1", "X-Budget-Ms", "850")
	seen := map[uint64]provider.FeedAttempt{}
	stream.next("both attempts of retry-1 done", func(ev provider.StreamEvent) bool {
		for _, a := range ev.Attempts {
			seen[a.Seq] = a
		}
		n := 0
		for _, a := range seen {
			if a.ID == "retry-1" && a.End == "done" {
				n++
			}
		}
		return n == 2 && ev.Active.Boreal == 0
	})
	var retry []provider.FeedAttempt
	for seq := uint64(1); seq <= uint64(len(seen)); seq++ {
		if a := seen[seq]; a.ID == "retry-1" {
			retry = append(retry, a)
		}
	}
	if len(retry) != 2 || retry[0].Status != 503 || retry[1].Status != 200 || retry[0].Supplier != "boreal" ||
		retry[0].BudgetMs == nil || *retry[0].BudgetMs != 900 || retry[1].BudgetMs == nil || *retry[1].BudgetMs != 850 {
		t.Fatalf("retry-1 attempts %+v: want 503 then 200 on boreal with budgets 900, 850", retry)
	}
	if gap := retry[1].AtMs - (retry[0].AtMs + retry[0].Duration); gap < 0 {
		t.Errorf("second attempt at %.3f ms starts before the first ended (%.3f + %.3f)", retry[1].AtMs, retry[0].AtMs, retry[0].Duration)
	}
	for _, a := range seen {
		if strings.HasPrefix(a.ID, "slow-") && (a.End != "done" || a.Status != 200 || a.Duration < 250) {
			t.Errorf("slow attempt %+v: want done 200 after about 300 ms", a)
		}
	}

	// Reset: the next event says so and counts nothing.
	if r := s.do0(http.MethodPost, "/reset", "Content-Type", "application/json"); r.status != 200 {
		t.Fatalf("reset: %d", r.status)
	}
	ev = stream.next("the reset", func(ev provider.StreamEvent) bool { return ev.Reset })
	if ev.Stats.Total != 0 || len(ev.Attempts) != 0 || ev.Peak.Boreal != 0 {
		t.Errorf("after reset: total %d, %d attempts, peak %+v; want nothing", ev.Stats.Total, len(ev.Attempts), ev.Peak)
	}
}

func TestRequestLogRecordsTheBudgetOfEachAttempt(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{LatencyScale: 0.1})
	wantError(t, s.get("/quotes/boreal?sku=KB-001&scenario=slow", "X-Request-ID", "b-1", "X-Budget-Ms", "40"), 504, "budget_exhausted")
	s.get("/quotes/atlas?sku=KB-001", "X-Request-ID", "b-1")
	var rl provider.RequestStats
	decode(t, s.get("/stats/requests?id=b-1"), 200, &rl)
	b, a := rl.Log.Boreal, rl.Log.Atlas
	if len(b) != 1 || b[0].BudgetMs == nil || *b[0].BudgetMs != 40 || b[0].End != "abandoned" {
		t.Errorf("boreal log %+v: want one attempt with budget_ms 40, abandoned", b)
	}
	if len(a) != 1 || a[0].BudgetMs != nil {
		t.Errorf("atlas log %+v: want one attempt without budget_ms", a)
	}
	if r := s.get("/stats/requests?id=b-1"); strings.Count(r.body, `"budget_ms"`) != 1 {
		t.Errorf("body %s: budget_ms must appear only on the attempt that carried X-Budget-Ms", r.body)
	}
}

func TestStreamFeedIsBoundedToTheNewestAttempts(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	const n = provider.FeedSize*2 + 10
	for i := range n {
		s.get("/quotes/atlas?sku=KB-001", "X-Request-ID", fmt.Sprintf("id-%04d-%s", i, strings.Repeat("x", 100)))
	}
	ev := openStream(t, s).next("the first event", func(provider.StreamEvent) bool { return true })
	if len(ev.Attempts) != provider.FeedSize {
		t.Fatalf("first event holds %d attempts, want the newest %d", len(ev.Attempts), provider.FeedSize)
	}
	if first, last := ev.Attempts[0], ev.Attempts[len(ev.Attempts)-1]; first.Seq != n-provider.FeedSize+1 || last.Seq != n {
		t.Errorf("attempts %d..%d, want %d..%d in arrival order", first.Seq, last.Seq, n-provider.FeedSize+1, n)
	}
}

func TestStreamsAreCappedAndEndAtShutdown(t *testing.T) {
	t.Parallel()
	srv, err := provider.Start(provider.Options{}, "127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{t: t, p: srv.Provider, url: srv.URL, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	var streams []*sseClient
	for range provider.MaxStreams {
		c := openStream(t, s)
		c.next("the first event", func(provider.StreamEvent) bool { return true })
		streams = append(streams, c)
	}
	// One more is refused (read with a deadline: a stream that was let in
	// would never end).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	r, err := s.do(ctx, http.MethodGet, "/stats/stream")
	cancel()
	if err != nil {
		t.Fatalf("stream %d: %v; want 503 too_many_streams", provider.MaxStreams+1, err)
	}
	wantError(t, r, http.StatusServiceUnavailable, "too_many_streams")
	streams[0].close()
	// Its slot frees once its handler returns: the lab notices the client left.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/stats/stream", nil)
		resp, err := s.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		if err == nil && resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed stream's slot was not given back within 5 s")
		}
		time.Sleep(10 * time.Millisecond) // polling the lab from outside: no event to wait on
	}
	// Shutdown ends the open streams at once instead of waiting out the grace.
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown with streams open: %v (after %v)", err, time.Since(start))
	}
	for _, c := range streams[1:] {
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			t.Fatal("a stream was still open after Shutdown")
		}
	}
	s.client.CloseIdleConnections()
}

// do0 sends a request without a body and fails the test on a transport error.
func (s *testServer) do0(method, path string, headers ...string) response {
	s.t.Helper()
	r, err := s.do(context.Background(), method, path, headers...)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	return r
}

// Eight clients that open /stats/stream and never read a byte (a script
// that forgot its stream, a paused terminal) must not hold every slot:
// each is dropped the stream write timeout after it connected (5 s by
// default, as the README says; 1 s here, a setting of the lab), while a
// light trickle of traffic keeps events coming, and a dashboard gets in
// again.
func TestStreamDropsClientsThatNeverRead(t *testing.T) {
	t.Parallel()
	if provider.DefaultStreamWriteTimeout != 5*time.Second {
		t.Errorf("DefaultStreamWriteTimeout %v: the README says a client that stops reading is dropped after 5 s", provider.DefaultStreamWriteTimeout)
	}
	const drop = time.Second
	srv, err := provider.Start(provider.Options{StreamWriteTimeout: drop}, "127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{t: t, p: srv.Provider, url: srv.URL, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		s.client.CloseIdleConnections()
	})
	// Light traffic: a request every 50 ms, so the lab has events to send.
	trafficCtx, stopTraffic := context.WithCancel(context.Background())
	trafficDone := make(chan struct{})
	go func() {
		defer close(trafficDone)
		for i := 0; trafficCtx.Err() == nil; i++ {
			s.do(trafficCtx, http.MethodGet, "/quotes/atlas?sku=KB-001", "X-Request-ID", fmt.Sprintf("trickle-%d", i))
			select {
			case <-trafficCtx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	defer func() { stopTraffic(); <-trafficDone }()

	var dead []net.Conn
	for range provider.MaxStreams {
		c, err := net.Dial("tcp", srv.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "GET /stats/stream HTTP/1.1\r\nHost: "+srv.Addr+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		// Its status line, a byte at a time (so nothing past it is read):
		// the lab has let it in. Then it reads nothing more.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		var line []byte
		for !bytes.HasSuffix(line, []byte("\r\n")) {
			var b [1]byte
			if _, err := c.Read(b[:]); err != nil {
				t.Fatalf("silent client %d: reading its status line: %v (so far %q)", len(dead)+1, err, line)
			}
			line = append(line, b[0])
		}
		if string(line) != "HTTP/1.1 200 OK\r\n" {
			t.Fatalf("silent client %d: %q, want 200", len(dead)+1, line)
		}
		dead = append(dead, c)
	}
	connected := time.Now()
	// They hold every slot: one more is refused.
	open := func() (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodGet, s.url+"/stats/stream", nil)
		resp, err := s.client.Do(req)
		if err != nil {
			return nil, err.Error()
		}
		if resp.StatusCode == http.StatusOK {
			return resp, ""
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	if resp, why := open(); resp != nil || !strings.Contains(why, "too_many_streams") {
		if resp != nil {
			resp.Body.Close()
		}
		t.Fatalf("with %d silent clients in, a 9th stream got %q, want 503 too_many_streams", provider.MaxStreams, why)
	}
	// Within the timeout (and a generous margin for a busy machine) dashboards
	// that read get every slot back: all eight silent clients were dropped.
	const limit = 20 * time.Second
	var live []*http.Response
	defer func() {
		for _, r := range live {
			r.Body.Close()
		}
	}()
	for len(live) < provider.MaxStreams {
		resp, why := open()
		if resp != nil {
			live = append(live, resp)
			go io.Copy(io.Discard, resp.Body) // a reader, until closed
			continue
		}
		if time.Since(connected) > limit {
			t.Fatalf("%v after %d clients stopped reading, readers hold only %d slots (the next: %s); silent clients are dropped after %v",
				limit, provider.MaxStreams, len(live), why, drop)
		}
		time.Sleep(50 * time.Millisecond) // polling the lab from outside: no event to wait on
	}
	took := time.Since(connected)
	t.Logf("readers held all %d stream slots %v after %d clients stopped reading", provider.MaxStreams, took.Round(10*time.Millisecond), provider.MaxStreams)
	if took < drop*4/5 {
		t.Errorf("all slots free after %v: a client that never read was dropped before its %v", took, drop)
	}
	for _, r := range live {
		r.Body.Close()
	}
	live = nil
	// The lab hung up on every one of them: what they could read ends.
	for i, c := range dead {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := io.Copy(io.Discard, c)
		if err != nil {
			t.Errorf("silent client %d: reading what was sent (%d bytes): %v, want the end of the stream", i+1, n, err)
		}
	}
}

// A page on another origin can make a browser open /stats/stream (an
// EventSource, an <img>, a fetch in no-cors mode): the lab refuses it before
// it takes one of the MaxStreams slots, so eight such GETs leave the lab's
// own dashboard every slot. (They held all eight, and the dashboard got 503.)
func TestStreamFromAnotherOriginTakesNoSlot(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var held []*http.Response
	defer func() {
		for _, r := range held {
			r.Body.Close()
		}
	}()
	// open opens a stream with headers; a 200 is held open (the caller
	// counts it), anything else is read and returned.
	open := func(headers ...string) (ok bool, refused response) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/stats/stream", nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatalf("GET /stats/stream %q: %v", headers, err)
		}
		if resp.StatusCode == http.StatusOK {
			held = append(held, resp)
			return true, response{}
		}
		return false, readResponse(t, resp)
	}
	for i := range provider.MaxStreams + 2 {
		headers := []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors", "Origin", "http://attacker.example"}
		if i%2 == 1 {
			headers = []string{"Origin", "http://localhost:8000"} // an older browser: another port is another origin
		}
		if ok, r := open(headers...); ok {
			t.Errorf("cross-origin stream %d (%q) was let in", i+1, headers)
		} else {
			wantError(t, r, http.StatusForbidden, "cross_origin")
		}
	}
	// The dashboard (same origin), and a stream opened by hand (no browser
	// header, or typed in the address bar), get every slot.
	for i := range provider.MaxStreams {
		headers := [][]string{{"Sec-Fetch-Site", "same-origin"}, nil, {"Sec-Fetch-Site", "none"}}[i%3]
		if ok, r := open(headers...); !ok {
			t.Fatalf("same-origin stream %d (%q), after %d cross-origin ones: %d %s, want 200", i+1, headers, provider.MaxStreams+2, r.status, r.body)
		}
	}
}

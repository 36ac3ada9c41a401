package quoteflow

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"path"
	"sync"
	"time"
)

// reply answers one call to a supplier; attempt counts from 1 per supplier.
type reply func(r *http.Request, attempt int) (*http.Response, error)

// fakeProvider is an http.RoundTripper playing the three suppliers. It counts
// calls per supplier, remembers every X-Request-ID, tracks the peak number of
// calls in flight, and checks that every response body gets closed.
type fakeProvider struct {
	latency time.Duration    // before every answer; honours the request context
	replies map[string]reply // by supplier; missing: a normal quote

	mu       sync.Mutex
	calls    map[string]int
	ids      map[string][]string
	inFlight int
	peak     int
	open     int // response bodies not yet closed
}

func newFake(replies map[string]reply) *fakeProvider {
	return &fakeProvider{replies: replies, calls: map[string]int{}, ids: map[string][]string{}}
}

func (f *fakeProvider) RoundTrip(r *http.Request) (*http.Response, error) {
	supplier := path.Base(r.URL.Path)
	attempt := f.enter(supplier, r.Header.Get("X-Request-ID"))
	defer f.leave()
	if err := sleepCtx(r.Context(), f.latency); err != nil {
		return nil, err
	}
	answer := f.replies[supplier]
	if answer == nil {
		answer = normal
	}
	resp, err := answer(r, attempt)
	if resp != nil {
		resp.Body = &trackedBody{ReadCloser: resp.Body, f: f}
		f.mu.Lock()
		f.open++
		f.mu.Unlock()
	}
	return resp, err
}

func (f *fakeProvider) enter(supplier, id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[supplier]++
	f.ids[supplier] = append(f.ids[supplier], id)
	f.inFlight++
	f.peak = max(f.peak, f.inFlight)
	return f.calls[supplier]
}

func (f *fakeProvider) leave() {
	f.mu.Lock()
	f.inFlight--
	f.mu.Unlock()
}

func (f *fakeProvider) Calls(supplier string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[supplier]
}

func (f *fakeProvider) TotalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls["atlas"] + f.calls["boreal"] + f.calls["cedar"]
}

func (f *fakeProvider) IDs(supplier string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ids[supplier]...)
}

func (f *fakeProvider) Peak() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.peak
}

func (f *fakeProvider) InFlight() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inFlight
}

func (f *fakeProvider) OpenBodies() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.open
}

type trackedBody struct {
	io.ReadCloser
	f    *fakeProvider
	once sync.Once
}

func (b *trackedBody) Close() error {
	b.once.Do(func() {
		b.f.mu.Lock()
		b.f.open--
		b.f.mu.Unlock()
	})
	return b.ReadCloser.Close()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// prices are the normal quotes: for KB-001 x2 boreal is cheapest (2600),
// atlas next (2900), and cedar has stock 1, so it is filtered.
var prices = map[string][3]int{ // unit, shipping, stock
	"atlas":  {1200, 500, 10},
	"boreal": {1100, 400, 10},
	"cedar":  {900, 300, 1},
}

func quoteBody(supplier, sku string) string {
	p := prices[supplier]
	return fmt.Sprintf(`{"supplier":%q,"sku":%q,"unit_cents":%d,"shipping_cents":%d,"stock":%d}`,
		supplier, sku, p[0], p[1], p[2])
}

// normal answers like the provider's normal scenario.
func normal(r *http.Request, _ int) (*http.Response, error) {
	return respond(r, http.StatusOK, quoteBody(path.Base(r.URL.Path), r.URL.Query().Get("sku"))), nil
}

func respond(r *http.Request, status int, body string) *http.Response {
	return &http.Response{
		StatusCode: status,
		Status:     fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Body:    io.NopCloser(bytes.NewBufferString(body)),
		Request: r,
	}
}

// status answers with a status code and a JSON error body.
func status(code int) reply {
	return func(r *http.Request, _ int) (*http.Response, error) {
		return respond(r, code, `{"error":"x","detail":"fake"}`), nil
	}
}

// body answers 200 with a fixed body.
func body(s string) reply {
	return func(r *http.Request, _ int) (*http.Response, error) { return respond(r, http.StatusOK, s), nil }
}

// badGzip says gzip and sends bytes that are not gzip.
func badGzip(r *http.Request, _ int) (*http.Response, error) {
	resp := respond(r, http.StatusOK, "this is not gzip")
	resp.Header.Set("Content-Encoding", "gzip")
	return resp, nil
}

// fail returns a transport error.
func fail(err error) reply {
	return func(*http.Request, int) (*http.Response, error) { return nil, err }
}

// hang never answers: it waits for the request context to end.
func hang(r *http.Request, _ int) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// after delays another reply, honouring the request context.
func after(d time.Duration, next reply) reply {
	return func(r *http.Request, attempt int) (*http.Response, error) {
		if err := sleepCtx(r.Context(), d); err != nil {
			return nil, err
		}
		return next(r, attempt)
	}
}

// gzipped answers 200 with s, properly gzip-encoded.
func gzipped(s string) reply {
	return func(r *http.Request, _ int) (*http.Response, error) {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		io.WriteString(zw, s)
		zw.Close()
		resp := respond(r, http.StatusOK, "")
		resp.Header.Set("Content-Encoding", "gzip")
		resp.Body = io.NopCloser(&buf)
		return resp, nil
	}
}

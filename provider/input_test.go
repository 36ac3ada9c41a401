package provider_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

// serve runs one request through h in process, from a loopback client,
// with headers given as "Name", "value" pairs (a name given twice sends the
// header twice).
func serve(h http.Handler, method, target string, headers ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	req.RemoteAddr = "127.0.0.1:40000"
	req.Host = "127.0.0.1:9101" // what a loopback client names
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// recorded turns a recorder into a response for wantError and decode.
func recorded(rec *httptest.ResponseRecorder) response {
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

func TestKeysLongerThan128BytesAre400WithASentence(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	ok, long := strings.Repeat("k", 128), strings.Repeat("k", 129)

	strictQuote(t, s.get("/quotes/boreal?sku=KB-001&scenario=normal", "X-Request-ID", ok))
	r := s.get("/quotes/boreal?sku=KB-001&scenario=flaky", "X-Request-ID", long)
	wantError(t, r, http.StatusBadRequest, "bad_request_id")
	if !strings.Contains(r.body, "128") || strings.Contains(r.body, long) {
		t.Errorf("detail should name the 128-byte limit without echoing the key: %s", r.body)
	}
	if r := s.get("/call?fail=0&key=" + ok); r.status != 200 {
		t.Errorf("/call with a 128-byte key: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/call?key=" + long, "/budget?key=" + long, "/stats/requests?id=" + long, "/stats/partner?key=" + long} {
		r := s.get(path)
		code := "bad_parameter"
		wantError(t, r, http.StatusBadRequest, code)
		if strings.Contains(r.body, long) {
			t.Errorf("%s: the detail echoes the whole key", path[:14])
		}
	}
}

// heapAfterGC is the live heap once garbage is collected.
func heapAfterGC() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// Not parallel: it measures the heap, so nothing else may allocate meanwhile.
func TestMemoryStaysBoundedUnderLargeDistinctKeys(t *testing.T) {
	const mb = 1 << 20
	t.Run("oversized keys are refused and cost nothing", func(t *testing.T) {
		p := provider.New(provider.Options{})
		h := p.Routes()
		before := heapAfterGC()
		accepted := 0
		for i := range 50 {
			key := fmt.Sprintf("%06d", i) + strings.Repeat("x", 256<<10) // 256 KiB, distinct
			if rec := serve(h, "GET", "/quotes/boreal?sku=KB-001&scenario=flaky", "X-Request-ID", key); rec.Code != 400 {
				accepted++
			}
			if rec := serve(h, "GET", "/call?key="+key); rec.Code != 400 {
				accepted++
			}
		}
		if grew := heapAfterGC() - before; grew > 8*mb {
			t.Errorf("50 256 KiB keys of each kind left the heap %d MiB larger, want < 8 MiB", grew/mb)
		}
		if accepted > 0 {
			t.Errorf("%d of 100 requests with a 256 KiB key were not refused with 400", accepted)
		}
		runtime.KeepAlive(p)
	})
	t.Run("the largest allowed keys: growth flattens at the table caps", func(t *testing.T) {
		const maxKeys = 1000
		p := provider.New(provider.Options{MaxKeys: maxKeys})
		h := p.Routes()
		flood := func(from, to int) {
			for i := from; i < to; i++ {
				key := fmt.Sprintf("%08d", i) + strings.Repeat("y", 120) // 128 bytes
				serve(h, "GET", "/quotes/boreal?sku=KB-001&scenario=flaky", "X-Request-ID", key)
				serve(h, "GET", "/budget?key="+key, "X-Budget-Ms", "100")
			}
		}
		before := heapAfterGC()
		flood(0, maxKeys)
		full := heapAfterGC() - before
		flood(maxKeys, 5*maxKeys)
		later := heapAfterGC() - before
		if limit := int64(maxKeys) * 3 * 4096; later > limit {
			t.Errorf("heap grew %d KiB, want under %d KiB (3 tables × %d keys × 4 KiB)", later>>10, limit>>10, maxKeys)
		}
		if later > full+full/2+mb {
			t.Errorf("heap grew %d KiB after %d keys and %d KiB after %d: want it to stop growing at the caps",
				full>>10, maxKeys, later>>10, 5*maxKeys)
		}
		runtime.KeepAlive(p)
	})
	t.Run("reset gives the memory back", func(t *testing.T) {
		const maxKeys = 10000
		p := provider.New(provider.Options{MaxKeys: maxKeys})
		h := p.Routes()
		before := heapAfterGC()
		for i := range maxKeys {
			key := fmt.Sprintf("%08d", i) + strings.Repeat("z", 120)
			serve(h, "GET", "/quotes/boreal?sku=KB-001&scenario=flaky", "X-Request-ID", key)
			serve(h, "GET", "/call?key="+key)
		}
		full := heapAfterGC() - before
		p.Reset()
		kept := heapAfterGC() - before
		if kept > mb || kept > full/4 {
			t.Errorf("after reset the heap keeps %d KiB of the %d KiB the keys took; want it given back (< 1 MiB)", kept>>10, full>>10)
		}
		runtime.KeepAlive(p)
	})
}

func TestStrictBudgetHeader(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	paths := []string{"/quotes/atlas?sku=KB-001", "/budget?ms=0", "/call?ms=0"}
	bad := [][]string{
		{"X-Budget-Ms", "1_000"}, {"X-Budget-Ms", "+5"}, {"X-Budget-Ms", "5.5"}, {"X-Budget-Ms", "1e3"},
		{"X-Budget-Ms", "0x10"}, {"X-Budget-Ms", "5 5"}, {"X-Budget-Ms", "5, 70000"}, {"X-Budget-Ms", ""},
		{"X-Budget-Ms", "-0"}, {"X-Budget-Ms", "86400001"}, {"X-Budget-Ms", "99999999999999999999"},
		{"X-Budget-Ms", "5", "X-Budget-Ms", "70000"}, // repeated
	}
	for _, path := range paths {
		for _, h := range bad {
			req, _ := http.NewRequest(http.MethodGet, s.url+path, nil)
			for i := 0; i < len(h); i += 2 {
				req.Header.Add(h[i], h[i+1])
			}
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r := readResponse(t, resp)
			if r.status != 400 {
				t.Errorf("%s with %q: %d %s, want 400 bad_budget", path, h[1:], r.status, r.body)
				continue
			}
			wantError(t, r, 400, "bad_budget")
		}
		for _, good := range []string{"0", "5", "007", "86400000"} {
			if r := s.get(path, "X-Budget-Ms", good); r.status == 400 {
				t.Errorf("%s with X-Budget-Ms %q: 400 %s", path, good, r.body)
			}
		}
	}
	// Leading white space never survives the wire (HTTP strips it); in
	// process it reaches the parser and is refused too.
	h := provider.New(provider.Options{}).Routes()
	wantError(t, recorded(serve(h, "GET", "/budget", "X-Budget-Ms", " 5")), 400, "bad_budget")
	wantError(t, recorded(serve(h, "GET", "/quotes/atlas?sku=KB-001", "X-Request-ID", "a", "X-Request-ID", "b")), 400, "bad_request_id")
}

func TestStrictQueryParameters(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	for _, path := range []string{
		"/call?ms=%ZZ", "/call?ms=5&ms=70000", "/call?fail=1&fail=2", "/call?key=a&key=b", "/call?key=%ZZ",
		"/call?ms=+5", "/call?ms=", "/call?ms=05x", "/call?drip_ms=1&drip_ms=2", "/call?drip_ms=60001",
		"/call?drip_ms=-1", "/budget?ms=%ZZ", "/budget?ms=1&ms=2", "/budget?key=a&key=b",
		"/quotes/atlas?sku=KB-001&sku=KB-002", "/quotes/atlas?sku=KB-001&scenario=%ZZ",
		"/quotes/atlas?sku=KB-001&scenario=normal&scenario=slow", "/stats/requests?id=a&id=b",
		"/call?ms=1;fail=2",
	} {
		r := s.get(path)
		if r.status != 400 {
			t.Errorf("%s: %d %s, want 400 bad_parameter", path, r.status, strings.TrimSpace(r.body))
			continue
		}
		wantError(t, r, 400, "bad_parameter")
	}
	for _, path := range []string{"/call?ms=0&fail=0&key=&drip_ms=0", "/call?key=a%20b", "/budget?ms=1&key=x"} {
		if r := s.get(path); r.status != 200 {
			t.Errorf("%s: %d %s, want 200", path, r.status, r.body)
		}
	}
}

func TestAnInfiniteOrHugeLatencyScaleDoesNotRemoveTheDelays(t *testing.T) {
	t.Parallel()
	for _, scale := range []float64{math.Inf(1), 1e300} {
		p := provider.New(provider.Options{LatencyScale: scale})
		// The planned delay is long (at least the documented one), so a
		// 20 ms budget is exceeded: 504, never an instant 200.
		start := time.Now()
		rec := serve(p.Routes(), "GET", "/quotes/atlas?sku=KB-001", "X-Budget-Ms", "20")
		if rec.Code != http.StatusGatewayTimeout || time.Since(start) < 20*time.Millisecond {
			t.Errorf("scale %g: %d after %v, want 504 at the 20 ms budget", scale, rec.Code, time.Since(start))
		}
	}
	// NaN counts as 0, like a negative scale: no delay at all.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/quotes/boreal?sku=KB-001&scenario=slow", nil)
	rec := httptest.NewRecorder()
	provider.New(provider.Options{LatencyScale: math.NaN()}).Routes().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("scale NaN: %d, want 200 at once", rec.Code)
	}
}

// httptestRequest is a GET of target from remote.
func httptestRequest(target, remote string) *http.Request {
	req := httptest.NewRequest("GET", target, nil)
	req.RemoteAddr = remote
	return req
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

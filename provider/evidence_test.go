package provider_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/provider"
)

func TestDripSendsHeadersAfterMsThenSpreadsTheBodyOverDripMs(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	const ms, drip = 50 * time.Millisecond, 600 * time.Millisecond
	for _, path := range []string{"/call?ms=50&drip_ms=600&key=d", "/call?ms=50&drip_ms=600&fail=5&key=e", "/budget?ms=50&drip_ms=600"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			dripOnce(t, s, path, ms, drip)
		})
	}
	t.Run("a limit covering the body", func(t *testing.T) {
		t.Parallel()
		// A read limit covering headers and body, longer than the wait for
		// the headers but shorter than the drip: cut while reading the body.
		client := &http.Client{Timeout: 700 * time.Millisecond, Transport: &http.Transport{}}
		defer client.CloseIdleConnections()
		resp, err := client.Get(s.url + "/call?ms=20&drip_ms=1500&key=f")
		if err != nil {
			t.Fatalf("headers should arrive within the limit: %v", err)
		}
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("reading the dripped body with a 700 ms limit: %v, want a timeout", err)
		}
		// That client left during the drip: the partner logs it.
		var pl partnerLog
		s.waitJSON(t, "/stats/partner?key=f", &pl, func() bool { return len(pl.Calls) == 1 && pl.Calls[0].End != "running" })
		if c := pl.Calls[0]; c.Status != 200 || c.End != "client_gone" {
			t.Errorf("partner log of the cut call: %+v, want status 200 (headers were sent), end client_gone", c)
		}
	})
}

// dripOnce reads path with a read limit on the headers only (so it is not
// cut) and checks when the headers, the first and the last body byte came.
func dripOnce(t *testing.T, s *testServer, path string, ms, drip time.Duration) {
	{
		client := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 5 * time.Second}}
		start := time.Now()
		resp, err := client.Get(s.url + path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		headersAt := time.Since(start)
		first := make([]byte, 1)
		if _, err := io.ReadFull(resp.Body, first); err != nil {
			t.Fatal(err)
		}
		firstAt := time.Since(start)
		rest, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		lastAt := time.Since(start)
		client.CloseIdleConnections()
		body := string(first) + string(rest)
		if err != nil || !strings.HasPrefix(body, "{") || !strings.HasSuffix(body, "}\n") {
			t.Fatalf("%s: body %q, %v", path, body, err)
		}
		if headersAt < ms || lastAt-headersAt < drip/2 {
			t.Errorf("%s: headers after %v and the body's end after %v; want headers after %v, well before the end", path, headersAt, lastAt, ms)
		}
		if lastAt < ms+drip-20*time.Millisecond {
			t.Errorf("%s: whole body after %v, want about %v", path, lastAt, ms+drip)
		}
		if lastAt-firstAt < drip/2 {
			t.Errorf("%s: first body byte at %v, last at %v: want them spread over about %v", path, firstAt, lastAt, drip)
		}
	}
}

// The shape of /stats/partner?key=.
type partnerCall struct {
	ArrivalMs  float64  `json:"arrival_ms"`
	BudgetMs   *float64 `json:"budget_ms"`
	Path       string   `json:"path"`
	Status     int      `json:"status"`
	End        string   `json:"end"`
	DurationMs float64  `json:"duration_ms"`
}

type partnerLog struct {
	Key     string        `json:"key"`
	Calls   []partnerCall `json:"calls"`
	Dropped int64         `json:"dropped"`
}

// waitJSON polls a GET until ok holds after decoding it into v (capped).
func (s *testServer) waitJSON(t *testing.T, path string, v any, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := s.do(context.Background(), http.MethodGet, path)
		if err != nil {
			t.Fatal(err)
		}
		decode(t, r, 200, v)
		if ok() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s on %s: %+v", path, v)
		}
		time.Sleep(2 * time.Millisecond) // polling the lab's public record; there is no event to wait on
	}
}

func TestPartnerLogsWhatItReceivedPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := provider.New(provider.Options{})
		h := p.Routes()
		serve(h, "GET", "/budget?ms=100&key=K", "X-Budget-Ms", "300") // 0-100
		time.Sleep(50 * time.Millisecond)
		serve(h, "GET", "/budget?ms=20&key=K")                           // 150-170, no header
		serve(h, "GET", "/call?ms=10&fail=1&key=K", "X-Budget-Ms", "40") // 170-180: 503
		serve(h, "GET", "/budget?key=other")
		var pl partnerLog
		getJSON(t, h, "/stats/partner?key=K", &pl)
		b300, b40 := 300.0, 40.0
		want := []partnerCall{
			{0, &b300, "/budget", 200, "done", 100},
			{150, nil, "/budget", 200, "done", 20},
			{170, &b40, "/call", 503, "done", 10},
		}
		if pl.Key != "K" || len(pl.Calls) != len(want) {
			t.Fatalf("log %+v, want key K with %d calls", pl, len(want))
		}
		for i, w := range want {
			g := pl.Calls[i]
			if g.ArrivalMs != w.ArrivalMs || (g.BudgetMs == nil) != (w.BudgetMs == nil) || (g.BudgetMs != nil && *g.BudgetMs != *w.BudgetMs) ||
				g.Path != w.Path || g.Status != w.Status || g.End != w.End || g.DurationMs != w.DurationMs {
				t.Errorf("call %d: %+v, want %+v", i+1, g, w)
			}
		}
		// A key never seen: an empty log, not an error.
		getJSON(t, h, "/stats/partner?key=nobody", &pl)
		if pl.Key != "nobody" || pl.Calls == nil || len(pl.Calls) != 0 {
			t.Errorf("unknown key: %+v, want calls []", pl)
		}
		// Bounded: 32 calls kept per key, the rest counted.
		for range 40 {
			serve(h, "GET", "/call?key=many")
		}
		getJSON(t, h, "/stats/partner?key=many", &pl)
		if len(pl.Calls) != 32 || pl.Dropped != 8 {
			t.Errorf("40 calls: %d kept, dropped %d; want 32 and 8", len(pl.Calls), pl.Dropped)
		}
		wantError(t, recorded(serve(h, "GET", "/stats/partner")), 400, "bad_parameter")
		// Loopback only, like every control endpoint.
		req := httptestRequest("/stats/partner?key=K", "203.0.113.9:1")
		rec := newRecorder()
		h.ServeHTTP(rec, req)
		wantError(t, recorded(rec), 403, "forbidden")
		// Reset forgets it.
		p.Reset()
		getJSON(t, h, "/stats/partner?key=K", &pl)
		if len(pl.Calls) != 0 {
			t.Errorf("after reset: %+v", pl)
		}
	})
}

func TestStatsShowWhatAProbeContacted(t *testing.T) {
	t.Parallel()
	srv, err := provider.Start(provider.Options{}, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	get := func(path string, v any) {
		t.Helper()
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		r := readResponse(t, resp)
		if v != nil {
			decode(t, r, 200, v)
		}
	}
	get("/health", nil)
	get("/call?ms=1", nil)
	get("/call?ms=1", nil)
	get("/budget", nil)
	type stats struct {
		PartnerPaths map[string]int64 `json:"partner_paths"`
		Blackhole    *struct {
			Addr     string `json:"addr"`
			SYNDrops *int64 `json:"syn_drops"`
		} `json:"blackhole"`
	}
	if runtime.GOOS == "linux" {
		// On a machine so busy that a dial's deadline passed before its
		// connect was issued, no SYN went out: that dial is made again (at
		// most three times), so each of the three connects sent one.
		for i := int64(1); i <= 3; i++ {
			for try := 1; ; try++ {
				if _, err := net.DialTimeout("tcp", srv.BlackholeAddr, 300*time.Millisecond); err == nil {
					t.Fatal("the blackhole accepted a connection")
				}
				var now stats
				get("/stats", &now)
				if bh := now.Blackhole; bh != nil && bh.SYNDrops != nil && *bh.SYNDrops >= i {
					break
				}
				if try == 3 {
					t.Fatalf("connect %d: no SYN counted after %d tries", i, try)
				}
				t.Logf("connect %d: its SYN was not counted (a busy machine: the dial may have timed out before it connected); again", i)
			}
		}
	}
	var st stats
	get("/stats", &st)
	if p := st.PartnerPaths; p["/health"] != 1 || p["/call"] != 2 || p["/budget"] != 1 {
		t.Errorf("partner_paths %v, want /health 1, /call 2, /budget 1", p)
	}
	if runtime.GOOS != "linux" {
		if st.Blackhole != nil {
			t.Errorf("blackhole %+v where there is none, want null", st.Blackhole)
		}
		return
	}
	// Each 300 ms connect sent one SYN (the kernel's first retransmission
	// comes after about 1 s); the blackhole's listener dropped each.
	if st.Blackhole == nil || st.Blackhole.Addr != srv.BlackholeAddr || st.Blackhole.SYNDrops == nil ||
		*st.Blackhole.SYNDrops < 3 || *st.Blackhole.SYNDrops > 6 {
		drops := "none"
		if st.Blackhole != nil && st.Blackhole.SYNDrops != nil {
			drops = strconv.FormatInt(*st.Blackhole.SYNDrops, 10)
		}
		t.Fatalf("blackhole %+v (syn_drops %s), want addr %s and syn_drops 3 (up to 6 with retransmissions)", st.Blackhole, drops, srv.BlackholeAddr)
	}
	resp, err := client.Post(srv.URL+"/reset", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	readResponse(t, resp)
	get("/stats", &st)
	if *st.Blackhole.SYNDrops != 0 || len(st.PartnerPaths) != 3 || st.PartnerPaths["/call"] != 0 {
		t.Errorf("after reset: blackhole %+v, partner_paths %v; want 0 and all three paths at 0", *st.Blackhole, st.PartnerPaths)
	}
}

func TestRequestLogShowsAResetConnection(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, provider.Options{})
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, _ := http.NewRequest(http.MethodGet, s.url+"/quotes/boreal?sku=KB-001&scenario=reset", nil)
	req.Header.Set("X-Request-ID", "rst")
	if _, err := client.Do(req); err == nil {
		t.Fatal("the first reset request got an answer")
	}
	var rl requestLog
	decode(t, s.get("/stats/requests?id=rst"), 200, &rl)
	if b := rl.Log["boreal"]; len(b) != 1 || b[0].End != "reset" || b[0].Status != 0 {
		t.Errorf("log %+v, want one boreal attempt ending reset with no status", rl.Log)
	}
}

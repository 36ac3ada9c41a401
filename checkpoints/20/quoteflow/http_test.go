package quoteflow

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"testing"
)

// newTestServer is a provider on a free loopback port, answering with h.
func newTestServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// provider answers normally, except boreal's bytes say gzip and are not.
func provider(w http.ResponseWriter, r *http.Request) {
	supplier := path.Base(r.URL.Path)
	if supplier == "boreal" {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write([]byte("this is not gzip"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(quoteBody(supplier, r.URL.Query().Get("sku"))))
}

func TestOverRealHTTPBadGzipIsInvalidData(t *testing.T) {
	srv := newTestServer(t, provider)
	s := newService(t, Config{ProviderURL: srv.URL})
	res, err := s.Quote(testCtx(t), kb(1))
	if err != nil {
		t.Fatal(err)
	}
	if got := codes(res)["boreal"]; got != CodeInvalidData {
		t.Errorf("boreal = %q, want invalid_data", got)
	}
	if len(res.Quotes) != 2 {
		t.Errorf("quotes = %v, want atlas and cedar", quoted(res))
	}
}

func TestOverRealHTTPARefusedConnectionIsATransportError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connecting is refused
	s := newService(t, Config{ProviderURL: "http://" + addr})
	res, err := s.Quote(testCtx(t), kb(2))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range suppliers {
		if got := codes(res)[name]; got != CodeTransportError {
			t.Errorf("%s = %q, want transport_error", name, got)
		}
	}
}

// brokenBoreal answers normally, except boreal, which speaks HTTP wrongly in
// the way named by its scenario: a status line that is not HTTP, or a
// chunked body whose chunk size is not a number.
func brokenBoreal(w http.ResponseWriter, r *http.Request) {
	supplier := path.Base(r.URL.Path)
	if supplier != "boreal" {
		provider(w, r)
		return
	}
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	switch r.URL.Query().Get("scenario") {
	case "malformed":
		buf.WriteString("HTTP/1.1 OK\r\nContent-Length: 0\r\n\r\n")
	default:
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
	}
	buf.Flush()
}

func TestOverRealHTTPASupplierSpeakingBrokenHTTPIsATransportError(t *testing.T) {
	srv := newTestServer(t, brokenBoreal)
	for _, scenario := range []string{"malformed", "broken"} { // a bad status line; a bad chunk
		t.Run(scenario, func(t *testing.T) {
			s := newService(t, Config{ProviderURL: srv.URL})
			rec := post(t, s.Handler(), `{"quantity": 1, "scenario": "`+scenario+`"}`)
			if rec.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200: %s", rec.Code, rec.Body)
			}
			res := decodeJSON[QuoteResult](t, rec)
			if got := codes(res)["boreal"]; got != CodeTransportError {
				t.Errorf("boreal = %q, want transport_error", got)
			}
			if got := quoted(res); !slices.Equal(got, []string{"cedar", "atlas"}) {
				t.Errorf("quoted %v, want atlas and cedar kept: [cedar atlas]", got)
			}
		})
	}
}

func TestOverRealHTTPAnHTTPSURLToAPlainHTTPServerIsATransportError(t *testing.T) {
	srv := newTestServer(t, provider)
	s := newService(t, Config{ProviderURL: "https://" + srv.Listener.Addr().String()})
	rec := post(t, s.Handler(), `{}`)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200: %s", rec.Code, rec.Body)
	}
	res := decodeJSON[QuoteResult](t, rec)
	for _, name := range suppliers {
		if got := codes(res)[name]; got != CodeTransportError {
			t.Errorf("%s = %q, want transport_error", name, got)
		}
	}
}

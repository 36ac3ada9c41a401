package quoteflow

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path"
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

package quoteflow

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
}

var (
	errRefused     = opError("dial", syscall.ECONNREFUSED)
	errReset       = opError("read", syscall.ECONNRESET)
	errReadTimeout = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	// errMalformed is what net/http itself returns for a status line that is not HTTP.
	errMalformed = readResponseError("HTTP/1.1 OK\r\n\r\n")
)

// readResponseError is the error net/http gives when reading raw as a response.
func readResponseError(raw string) error {
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), nil)
	if err == nil {
		resp.Body.Close()
		panic("readResponseError: " + raw + " reads as a valid response")
	}
	return err
}

func TestEveryFailureShapeIsClassified(t *testing.T) {
	cases := []struct {
		name  string
		reply reply
		want  Code
	}{
		{"503", status(503), HTTPCode(503)},
		{"404", status(404), HTTPCode(404)},
		{"500", status(500), HTTPCode(500)},
		{"redirect is not followed", status(302), HTTPCode(302)},
		{"unit_cents as a string", body(`{"supplier":"boreal","sku":"KB-001","unit_cents":"1100","shipping_cents":400,"stock":10}`), CodeInvalidData},
		{"fractional amount", body(`{"supplier":"boreal","sku":"KB-001","unit_cents":11.5,"shipping_cents":400,"stock":10}`), CodeInvalidData},
		{"negative amount", body(`{"supplier":"boreal","sku":"KB-001","unit_cents":1100,"shipping_cents":-1,"stock":10}`), CodeInvalidData},
		{"another supplier's quote", body(quoteBody("atlas", "KB-001")), CodeInvalidData},
		{"another SKU", body(quoteBody("boreal", "KB-999")), CodeInvalidData},
		{"extra field", body(`{"supplier":"boreal","sku":"KB-001","unit_cents":1100,"shipping_cents":400,"stock":10,"discount":5}`), CodeInvalidData},
		{"missing field", body(`{"supplier":"boreal","sku":"KB-001","unit_cents":1100,"shipping_cents":400}`), CodeInvalidData},
		{"not JSON", body(`<html>oops</html>`), CodeInvalidData},
		{"trailing data", body(quoteBody("boreal", "KB-001") + `{}`), CodeInvalidData},
		{"bad gzip", badGzip, CodeInvalidData},
		{"connection refused", fail(errRefused), CodeTransportError},
		{"connection reset", fail(errReset), CodeTransportError},
		{"read timeout", fail(errReadTimeout), CodeTransportError},
		{"closed before answering", fail(io.EOF), CodeTransportError},
		{"cut mid-answer", fail(io.ErrUnexpectedEOF), CodeTransportError},
		{"malformed status line", fail(errMalformed), CodeTransportError},
		{"an error of no known kind", fail(errors.New("fake: something went wrong in the exchange")), CodeTransportError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake(map[string]reply{"boreal": c.reply})
			s := newService(t, Config{Transport: fake})
			res, err := s.Quote(testCtx(t), kb(1))
			if err != nil {
				t.Fatalf("Quote: %v", err)
			}
			if got := codes(res)["boreal"]; got != c.want {
				t.Errorf("boreal failed with %q, want %q", got, c.want)
			}
			if got := quoted(res); !slices.Equal(got, []string{"cedar", "atlas"}) {
				t.Errorf("quoted %v, want atlas and cedar kept: [cedar atlas]", got)
			}
			if n := fake.OpenBodies(); n != 0 {
				t.Errorf("%d response bodies left open", n)
			}
		})
	}
}

func TestAGoodGzipBodyIsDecoded(t *testing.T) {
	fake := newFake(map[string]reply{"boreal": gzipped(quoteBody("boreal", "KB-001"))})
	s := newService(t, Config{Transport: fake})
	res, err := s.Quote(testCtx(t), kb(2))
	if err != nil {
		t.Fatal(err)
	}
	if res.Best == nil || res.Best.Supplier != "boreal" {
		t.Errorf("best = %+v, want boreal", res.Best)
	}
}

// Whatever error the HTTP exchange returns, it is the supplier's failure:
// a 200 with transport_error and the other quotes kept, never a 500 of ours.
func TestAnyErrorFromTheExchangeIsATransportErrorInsideA200(t *testing.T) {
	odd := errors.New("fake: an error of no known kind")
	s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": fail(odd)})})
	rec := post(t, s.Handler(), `{"quantity": 1}`)
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
}

func TestAPanicWhileAskingASupplierIsReRaised(t *testing.T) {
	panicking := func(*http.Request, int) (*http.Response, error) { panic("fake: boom") }
	s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": panicking})})
	defer func() {
		if recover() == nil {
			t.Error("Quote returned normally; want the panic re-raised")
		}
	}()
	s.Quote(testCtx(t), kb(2))
}

package quoteflow

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
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
)

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

func TestAnUnexpectedErrorIsNotASupplierFailure(t *testing.T) {
	bug := errors.New("fake: a bug, not a network failure")
	s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": fail(bug)})})
	if _, err := s.Quote(testCtx(t), kb(2)); !errors.Is(err, bug) {
		t.Fatalf("err = %v, want the program error itself", err)
	}
	if rec := post(t, s.Handler(), `{}`); rec.Code != http.StatusInternalServerError {
		t.Errorf("handler status = %d, want 500", rec.Code)
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

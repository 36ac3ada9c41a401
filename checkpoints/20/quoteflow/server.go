package quoteflow

import (
	"io"
	"net/http"
	"time"
)

// The HTTP server's limits. Without them a client that sends its headers,
// or its body, a byte at a time, or that keeps an idle connection open, holds
// a connection and its goroutine for ever, before it ever reaches admission.
const (
	ReadHeaderTimeout = 5 * time.Second  // to send the request line and headers
	ReadTimeout       = 10 * time.Second // to send the whole request, body included
	IdleTimeout       = 60 * time.Second // a keep-alive connection waiting for its next request
)

// NewServer returns the HTTP server for h, every read bounded.
func NewServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		IdleTimeout:       IdleTimeout,
	}
}

// What is left of a request body after the handler is read and dropped, up
// to drainBytes within drainTime.
const (
	drainBytes = 4 << 20
	drainTime  = time.Second
)

// drainAfter is a lingering close, as nginx does one. A client that writes
// its whole body before reading the answer (Python's urllib and requests do)
// would otherwise get a connection reset instead of our 422: closing a
// connection with unread bytes in it makes the system reset it. A client
// that sends more than drainBytes, or takes longer than drainTime, is cut.
func drainAfter(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &watchedBody{ReadCloser: r.Body}
		r.Body = body
		h.ServeHTTP(w, r)
		if body.err != nil {
			return // read to the end, or failed (too slow: ReadTimeout): nothing to drain
		}
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(drainTime))
		io.CopyN(io.Discard, body, drainBytes)
	})
}

// watchedBody remembers the first error a read of the body returned, io.EOF included.
type watchedBody struct {
	io.ReadCloser
	err error
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.err == nil {
		b.err = err
	}
	return n, err
}

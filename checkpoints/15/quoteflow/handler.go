package quoteflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"
)

// Handler returns the HTTP API: all routes in one place. What a handler
// leaves unread of a request body is drained (server.go).
func (s *Service) Handler() http.Handler {
	r := mux.NewRouter()
	r.HandleFunc("/health", health).Methods(http.MethodGet)
	r.HandleFunc("/api/quotes", s.postQuote).Methods(http.MethodPost)
	r.NotFoundHandler = http.HandlerFunc(notFound)
	r.MethodNotAllowedHandler = methodNotAllowed(r)
	return drainAfter(r)
}

// notFound and methodNotAllowed answer the router's errors in JSON, like every other error of ours.
func notFound(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusNotFound, map[string]string{"detail": "no such path: " + r.URL.Path})
}

func methodNotAllowed(router *mux.Router) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allow []string
		for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
			http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			var m mux.RouteMatch
			probe := r.Clone(r.Context())
			probe.Method = method
			if router.Match(probe, &m) && m.MatchErr == nil {
				allow = append(allow, method)
			}
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{
			"detail": fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")),
		})
	})
}

func health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// postQuote validates the body before anything else: an invalid request is
// a 422 naming the field, and no supplier is contacted.
func (s *Service) postQuote(w http.ResponseWriter, r *http.Request) {
	req, err := DecodeQuoteRequest(r.Body)
	if err != nil {
		writeInvalid(w, err)
		return
	}
	res, err := s.Quote(r.Context(), req)
	if err != nil {
		writeQuoteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// writeInvalid answers 422 {"detail": "<field>: <reason>", "field", "reason"}:
// detail is a sentence like every other error of ours, and field names the
// offending field for a program.
func writeInvalid(w http.ResponseWriter, err error) {
	verr := &ValidationError{Field: "body", Reason: err.Error()}
	errors.As(err, &verr)
	writeJSON(w, http.StatusUnprocessableEntity, map[string]string{
		"detail": verr.Error(), "field": verr.Field, "reason": verr.Reason,
	})
}

// writeQuoteError maps an error from Quote to HTTP once, here.
func writeQuoteError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrInvalid):
		writeInvalid(w, err)
	case errors.Is(err, ErrBusy):
		// Our capacity, not a supplier's: a supplier's 503 is http_503 inside a 200.
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"detail": "capacity_exhausted"})
	case r.Context().Err() != nil:
		// The client has gone; nobody is left to read an answer.
	default:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"detail": "internal_error"})
	}
}

// writeJSON answers v as JSON with status. A value that cannot be encoded
// (a NaN, say) is answered 500 with the reason, never status with an empty
// body: the status goes out only once the body is known.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(map[string]string{"detail": "internal_error", "reason": "the answer could not be encoded as JSON: " + err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n')) // the client may have gone; nothing to do about it
}

package quoteflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gorilla/mux"

	"quoteflowlab.dev/checkpoints/20/queue"
)

// Handler returns the HTTP API: all routes in one place. What a handler
// leaves unread of a request body is drained (server.go).
func (s *Service) Handler() http.Handler {
	r := mux.NewRouter()
	r.HandleFunc("/health", health).Methods(http.MethodGet)
	r.HandleFunc("/api/quotes", s.postQuote).Methods(http.MethodPost)
	r.HandleFunc("/api/baskets", s.postBasket).Methods(http.MethodPost)
	r.HandleFunc("/api/baskets/{id}", s.getBasket).Methods(http.MethodGet)
	r.HandleFunc("/api/compensation", s.getCompensation).Methods(http.MethodGet)
	r.HandleFunc("/api/budget", s.getBudget).Methods(http.MethodGet)
	r.HandleFunc("/api/breakers", s.getBreakers).Methods(http.MethodGet)
	r.HandleFunc("/api/limits", s.getLimits).Methods(http.MethodGet)
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

// postBasket validates every line before any supplier is contacted, then
// answers by the basket deadline; what the deadline cut off is queued first.
func (s *Service) postBasket(w http.ResponseWriter, r *http.Request) {
	req, err := DecodeBasketRequest(r.Body)
	if err != nil {
		writeInvalid(w, err)
		return
	}
	// The IETF httpapi draft's header, as payment APIs use it: a retried POST
	// with the same key gets the same basket, never a second one.
	b, err := s.BasketOnce(r.Context(), req, r.Header.Get("Idempotency-Key"))
	if err != nil {
		writeQuoteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

func (s *Service) getBasket(w http.ResponseWriter, r *http.Request) {
	b, err := s.GetBasket(r.Context(), mux.Vars(r)["id"])
	if errors.Is(err, ErrNoBasket) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "no basket with that id"})
		return
	}
	if err != nil {
		writeQuoteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, b)
}

func (s *Service) getCompensation(w http.ResponseWriter, r *http.Request) {
	c, err := s.CompensationCounts(r.Context())
	if err != nil {
		writeQuoteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

// getBudget shows the budget that pays for retries and hedges.
func (s *Service) getBudget(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.ExtraStats())
}

// getBreakers shows each supplier's circuit breaker: its state and counts.
func (s *Service) getBreakers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.BreakerStats())
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
	var unconfirmed *UnconfirmedError
	switch {
	case errors.Is(err, ErrInvalid):
		writeInvalid(w, err)
	case errors.Is(err, ErrBusy):
		// Our capacity, not a supplier's: a supplier's 503 is http_503 inside a 200.
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"detail": "capacity_exhausted"})
	case errors.Is(err, queue.ErrFull):
		// Nothing of the basket was kept: the client may send it again later.
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"detail": "compensation_queue_full"})
	case errors.Is(err, ErrKeyReused):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"detail": "idempotency_key_reused",
			"field": "Idempotency-Key", "reason": "this key was used for a basket with other lines or scenario"})
	case errors.Is(err, ErrKeyInFlight):
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusConflict, map[string]string{"detail": "idempotency_key_in_flight"})
	case errors.As(err, &unconfirmed):
		// The store was sent the basket and did not confirm it in time: it
		// may have been kept, its calls queued. Say so, and how to ask again
		// without making a second one.
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"detail": "store_unavailable", "kept": "unknown",
			"basket_id": unconfirmed.BasketID, "idempotency_key": unconfirmed.IdempotencyKey,
			"reason": "the store did not confirm the basket in time: it may have been kept, with its queued calls. " +
				"Send the request again with this Idempotency-Key: you get the basket if it was kept, or it is made once."})
	case errors.Is(err, ErrStoreUnavailable), errors.Is(err, queue.ErrUnavailable):
		// The store could not keep the basket (a full disk, Redis out of
		// reach or too slow, a write it refused): nothing was kept; it may
		// be back in a moment.
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"detail": "store_unavailable", "kept": "nothing"})
	case errors.Is(err, ErrNoStore):
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"detail": "basket_store_unavailable"})
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

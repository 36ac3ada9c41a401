package provider

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Caps on the partner's query parameters.
const (
	maxPartnerMs   = 60000
	maxPartnerFail = 100
)

// health serves GET /health: {"ok": true}.
func (p *Provider) health(w http.ResponseWriter, r *http.Request) {
	writeBody(w, http.StatusOK, []byte(`{"ok":true}`+"\n"))
}

// call serves GET /call?ms=N&fail=K&key=S: after N ms (not scaled), 503 for
// the first K calls of key S, then 200 {"ok":true,"key":S,"call":n}.
func (p *Provider) call(w http.ResponseWriter, r *http.Request) (int, net.Conn) {
	p.stats.partner.Add(1)
	q := r.URL.Query()
	ms, err := intParam(q, "ms", maxPartnerMs)
	if err != nil {
		return badParam(w, err), nil
	}
	fail, err := intParam(q, "fail", maxPartnerFail)
	if err != nil {
		return badParam(w, err), nil
	}
	key := q.Get("key")
	n := incr(p.partner, key)
	if !p.pause(r.Context(), time.Duration(ms)*time.Millisecond) {
		return 0, nil
	}
	if n <= int64(fail) {
		writeError(w, http.StatusServiceUnavailable, "unavailable",
			fmt.Sprintf("call %d of key %q fails (fail=%d)", n, key, fail))
		return http.StatusServiceUnavailable, nil
	}
	writeJSON(w, http.StatusOK, struct {
		OK   bool   `json:"ok"`
		Key  string `json:"key"`
		Call int64  `json:"call"`
	}{true, key, n})
	return http.StatusOK, nil
}

// budget serves GET /budget?ms=N: after N ms (not scaled), {"received": X-Budget-Ms
// as a number, or null when absent}. It echoes the budget and never abandons.
func (p *Provider) budget(w http.ResponseWriter, r *http.Request) (int, net.Conn) {
	p.stats.partner.Add(1)
	ms, err := intParam(r.URL.Query(), "ms", maxPartnerMs)
	if err != nil {
		return badParam(w, err), nil
	}
	var received *float64
	if v := r.Header.Get("X-Budget-Ms"); v != "" {
		f, err := parseBudgetMs(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "bad_budget", errBadBudget.Error())
			return http.StatusBadRequest, nil
		}
		received = &f
	}
	if !p.pause(r.Context(), time.Duration(ms)*time.Millisecond) {
		return 0, nil
	}
	writeJSON(w, http.StatusOK, struct {
		Received *float64 `json:"received"`
	}{received})
	return http.StatusOK, nil
}

// A paramError is a bad partner query parameter.
type paramError struct{ name, value, want string }

func (e *paramError) Error() string {
	return fmt.Sprintf("query parameter %s=%q: want %s", e.name, e.value, e.want)
}

// intParam reads an optional integer parameter in [0, max] (absent means 0).
func intParam(q url.Values, name string, max int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > max {
		return 0, &paramError{name, v, fmt.Sprintf("an integer from 0 to %d", max)}
	}
	return n, nil
}

// badParam answers 400 for a bad query parameter.
func badParam(w http.ResponseWriter, err error) int {
	writeError(w, http.StatusBadRequest, "bad_parameter", err.Error())
	return http.StatusBadRequest
}

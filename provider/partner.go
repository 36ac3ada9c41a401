package provider

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Caps on the partner's query parameters.
const (
	maxPartnerMs   = 60000
	maxPartnerFail = 100
)

// The query parameters of /call and /budget.
var (
	callParams   = []string{"ms", "fail", "key", "drip_ms"}
	budgetParams = []string{"ms", "key", "drip_ms"}
)

// health serves GET /health: {"ok": true}.
func (p *Provider) health(w http.ResponseWriter, r *http.Request) {
	p.state.Load().partnerPaths[pathHealth].Add(1)
	writeBody(w, http.StatusOK, []byte(`{"ok":true}`+"\n"))
}

// A partnerCall is one /call or /budget request being answered.
type partnerCall struct {
	call
	path     int // pathCall or pathBudget
	key      string
	ms, drip time.Duration
	fail     int   // /call: calls of the key that fail
	calls    int64 // /call: this call's number for its key
	budgetMs int64 // X-Budget-Ms received, -1 for none
	rec      *partnerRecord
	entry    int // index in rec's log (-1: not logged)
}

// call serves GET /call?ms=N&fail=K&key=S&drip_ms=D: after N ms (not
// scaled), 503 for the first K calls of key S, then 200
// {"ok":true,"key":S,"call":n}; the body is spread over D ms.
func (p *Provider) call(st *state, w http.ResponseWriter, r *http.Request) (int, net.Conn) {
	c, status := p.partnerStart(st, w, r, pathCall)
	if c == nil {
		return status, nil
	}
	if c.calls <= int64(c.fail) {
		return c.finish(http.StatusServiceUnavailable, mustJSON(errorBody{"unavailable",
			fmt.Sprintf("call %d of key %s fails (fail=%d)", c.calls, quoted(c.key), c.fail)})), nil
	}
	return c.finish(http.StatusOK, mustJSON(struct {
		OK   bool   `json:"ok"`
		Key  string `json:"key"`
		Call int64  `json:"call"`
	}{true, c.key, c.calls})), nil
}

// budget serves GET /budget?ms=N&key=S&drip_ms=D: after N ms (not scaled),
// {"received": X-Budget-Ms as a number, or null when absent}. It echoes the
// budget and never abandons.
func (p *Provider) budget(st *state, w http.ResponseWriter, r *http.Request) (int, net.Conn) {
	c, status := p.partnerStart(st, w, r, pathBudget)
	if c == nil {
		return status, nil
	}
	var received *int64
	if c.budgetMs >= 0 {
		received = &c.budgetMs
	}
	return c.finish(http.StatusOK, mustJSON(struct {
		Received *int64 `json:"received"`
	}{received})), nil
}

// partnerStart counts and validates a partner request, logs it under its
// key and waits its ms. It returns nil and the status written when the
// request was refused or the client left during the wait.
func (p *Provider) partnerStart(st *state, w http.ResponseWriter, r *http.Request, path int) (*partnerCall, int) {
	st.partnerReqs.Add(1)
	st.partnerPaths[path].Add(1)
	c := &partnerCall{call: call{st: st, w: w, r: r, arrival: time.Now()}, path: path, entry: -1}
	if err := c.parse(); err != nil {
		code := "bad_parameter"
		if be := (*budgetError)(nil); errors.As(err, &be) {
			code = "bad_budget"
		}
		writeError(w, http.StatusBadRequest, code, err.Error())
		return nil, http.StatusBadRequest
	}
	st.partners.update(c.key, func(rec *partnerRecord) {
		if path == pathCall {
			rec.calls++
			c.calls = rec.calls
		}
		c.rec, c.entry = rec, rec.log.start(c.arrival, logEntry{where: uint8(path), budgetMs: c.budgetMs})
	})
	if !c.pause(c.ms) {
		c.logEnd(0)
		return nil, 0
	}
	return c, 0
}

// parse reads the query and X-Budget-Ms strictly.
func (c *partnerCall) parse() error {
	names := callParams
	if c.path == pathBudget {
		names = budgetParams
	}
	var v [4]string
	present, err := readQuery(c.r.URL.RawQuery, names, v[:])
	if err != nil {
		return err
	}
	get := func(name string) (string, bool) {
		for i, n := range names {
			if n == name {
				return v[i], present&(1<<i) != 0
			}
		}
		return "", false
	}
	msV, msOK := get("ms")
	ms, err := intParam("ms", msV, msOK, maxPartnerMs)
	if err != nil {
		return err
	}
	dripV, dripOK := get("drip_ms")
	drip, err := intParam("drip_ms", dripV, dripOK, maxPartnerMs)
	if err != nil {
		return err
	}
	if c.path == pathCall {
		failV, failOK := get("fail")
		if c.fail, err = intParam("fail", failV, failOK, maxPartnerFail); err != nil {
			return err
		}
	}
	c.key, _ = get("key")
	if err := keyParam("key", c.key); err != nil {
		return err
	}
	c.ms, c.drip = time.Duration(ms)*time.Millisecond, time.Duration(drip)*time.Millisecond
	budget, ok, err := budgetOf(c.r.Header)
	if err != nil {
		return err
	}
	c.budgetMs = -1
	if ok {
		c.budgetMs = budget
	}
	return nil
}

// finish writes the answer (dripped over drip_ms when asked), logs how the
// call ended and returns the status written.
func (c *partnerCall) finish(status int, body []byte) int {
	c.write(status, body)
	c.logEnd(status)
	return status
}

// write sends status and headers at once and, with drip_ms, spreads the
// body over that time in a few flushed pieces, the last at drip_ms: a
// client whose read limit covers only the headers gets the whole answer;
// one whose limit must cover the body as well is cut.
func (c *partnerCall) write(status int, body []byte) {
	if c.drip <= 0 {
		writeBody(c.w, status, body)
		return
	}
	h := c.w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	c.w.WriteHeader(status)
	rc := http.NewResponseController(c.w)
	if rc.Flush() != nil {
		c.leave()
		return
	}
	pieces := min(len(body), 8)
	var sent time.Duration
	for i := 1; i <= pieces; i++ {
		at := c.drip * time.Duration(i) / time.Duration(pieces)
		if !c.pause(at - sent) {
			return
		}
		sent = at
		if _, err := c.w.Write(body[len(body)*(i-1)/pieces : len(body)*i/pieces]); err != nil {
			c.leave()
			return
		}
		if rc.Flush() != nil {
			c.leave()
			return
		}
	}
}

// logEnd records how the call ended in its key's log.
func (c *partnerCall) logEnd(status int) {
	end := c.end(status, false)
	c.st.partners.view(c.key, func(rec *partnerRecord) {
		if rec == c.rec {
			rec.log.finish(c.entry, time.Now(), status, end)
		}
	})
}

// PartnerLog is the body of GET /stats/partner?key=.
type PartnerLog struct {
	Key   string            `json:"key"`
	Calls []PartnerLogEntry `json:"calls"` // the key's first MaxLogPerKey calls, in arrival order
	// Dropped counts the calls after the first MaxLogPerKey: not logged.
	Dropped int64 `json:"dropped"`
}

// A PartnerLogEntry is one /call or /budget request of a key, as received.
type PartnerLogEntry struct {
	ArrivalMs  float64 `json:"arrival_ms"`  // since the key's first call
	BudgetMs   *int64  `json:"budget_ms"`   // X-Budget-Ms received; null when absent
	Path       string  `json:"path"`        // "/call" or "/budget"
	Status     int     `json:"status"`      // 0: none written (client gone before, still running)
	End        string  `json:"end"`         // running, done or client_gone
	DurationMs float64 `json:"duration_ms"` // arrival to end (so far, while running)
}

// partnerStats serves GET /stats/partner?key=S: what the partner received
// for key S (key= for calls without one).
func (p *Provider) partnerStats(w http.ResponseWriter, r *http.Request) {
	var v [1]string
	present, err := readQuery(r.URL.RawQuery, []string{"key"}, v[:])
	if err == nil && present == 0 {
		err = badParamf("query parameter key is required: the key given to /call or /budget (key= for calls without one)")
	}
	if err == nil {
		err = keyParam("key", v[0])
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_parameter", err.Error())
		return
	}
	out := PartnerLog{Key: v[0], Calls: []PartnerLogEntry{}}
	now := time.Now()
	p.state.Load().partners.view(v[0], func(rec *partnerRecord) {
		out.Dropped = rec.log.dropped
		for _, e := range rec.log.entries {
			pe := PartnerLogEntry{Path: partnerPaths[e.where], Status: int(e.status), End: e.end.String()}
			if e.budgetMs >= 0 {
				b := e.budgetMs
				pe.BudgetMs = &b
			}
			pe.ArrivalMs, pe.DurationMs = rec.log.entryTimes(e, now)
			out.Calls = append(out.Calls, pe)
		}
	})
	writeJSON(w, http.StatusOK, out)
}

package provider

import (
	"fmt"
	"net/http"
	"time"
)

// Time and budget: what suppliers and partner share. Every request is a
// call; its delays go through pause, which ends early when the client
// leaves, and its X-Budget-Ms through budgetOf.

// maxBudgetMs is the largest X-Budget-Ms accepted: one day.
const maxBudgetMs = 24 * 3600 * 1000

// A call is one supplier or partner request being served.
type call struct {
	st        *state // the state the request arrived in; it counts there to the end
	w         http.ResponseWriter
	r         *http.Request
	arrival   time.Time
	gone      bool      // the client left before the answer was complete (counted once)
	leftAt    time.Time // when it left
	abandoned bool      // planned work was longer than X-Budget-Ms (counted once)
	budgetEnd time.Time // abandoned: when the budget runs out
}

// end says how the call ended, given the status written (0 for none).
func (c *call) end(status int, cut bool) endKind {
	switch {
	case cut:
		return endReset
	case c.abandoned && !c.leftEarly():
		return endAbandoned
	case c.gone || status == 0:
		return endClientGone
	}
	return endDone
}

// pause waits d, or until the client goes away (its request context ends;
// at shutdown too). It reports whether the whole d elapsed; when not, the
// call is counted once as client_gone.
func (c *call) pause(d time.Duration) bool {
	ctx := c.r.Context()
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
		}
	} else if ctx.Err() == nil {
		return true
	}
	c.leave()
	return false
}

// leftEarly reports whether the client of an abandoned call hung up well
// before the budget it sent ran out (a hedge's loser, cancelled when its
// sibling answered): its log says client_gone, though the call still
// counts as abandoned, its planned work being longer than the budget.
func (c *call) leftEarly() bool {
	return c.gone && c.leftAt.Before(c.budgetEnd.Add(-5*time.Millisecond))
}

// leave records that the client went away.
func (c *call) leave() {
	if !c.gone {
		c.gone = true
		c.leftAt = time.Now()
		c.st.clientGone.Add(1)
	}
}

// A budgetError is a bad X-Budget-Ms header (400 bad_budget).
type budgetError struct{ msg string }

func (e *budgetError) Error() string { return e.msg }

// budgetOf reads the X-Budget-Ms header: ok false when absent. Present, it
// must be given once and be a plain decimal integer of milliseconds from 0
// to one day: no sign, fraction, exponent, digit separator or blank, and not
// empty (HTTP itself strips blanks around a header value on the wire).
func budgetOf(h http.Header) (ms int64, ok bool, err error) {
	vals, present := h["X-Budget-Ms"]
	switch {
	case !present:
		return 0, false, nil
	case len(vals) != 1:
		return 0, false, &budgetError{fmt.Sprintf("X-Budget-Ms is given %d times; send it once", len(vals))}
	case vals[0] == "":
		return 0, false, &budgetError{"X-Budget-Ms is empty; send a whole number of milliseconds, or no header"}
	}
	ms, ok = plainInt(vals[0], maxBudgetMs)
	if !ok {
		return 0, false, &budgetError{fmt.Sprintf(
			"X-Budget-Ms %s is not a whole number of milliseconds from 0 to %d (digits only)", quoted(vals[0]), maxBudgetMs)}
	}
	return ms, true, nil
}

// work spends planned time on a supplier call, honouring the caller's
// budget and presence. It returns ok true when the work is done and the
// scenario should answer; otherwise it has already answered (or the client
// is gone) and status is what was written (0 for none):
//   - planned > X-Budget-Ms: the work cannot finish in time, so it is
//     abandoned (counted once): it stops at the budget and answers 504
//     budget_exhausted, or stops earlier if the client leaves first. A client
//     that sent its exact budget hangs up at that same instant, so either
//     order of the two events counts as abandoned;
//   - the client goes away: it stops at once, counted as client_gone.
func (p *Provider) work(c *supplierCall, planned time.Duration) (status int, ok bool) {
	if c.hasBudget {
		if budget := time.Duration(c.budgetMs) * time.Millisecond; planned > budget {
			c.abandoned = true
			c.budgetEnd = time.Now().Add(budget)
			c.st.abandoned.Add(1)
			if !c.pause(budget) {
				return 0, false
			}
			return c.fail(http.StatusGatewayTimeout, "budget_exhausted",
				fmt.Sprintf("%s needed %d ms but X-Budget-Ms allowed %d; stopped at the budget",
					Suppliers[c.supplier], planned.Milliseconds(), c.budgetMs)), false
		}
	}
	return 0, c.pause(planned)
}

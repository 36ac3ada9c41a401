package provider

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"
)

// quote serves GET /quotes/{supplier}?sku=&scenario= (scenario defaults to normal).
// Unknown supplier or SKU: 404; unknown scenario: 400.
func (p *Provider) quote(w http.ResponseWriter, r *http.Request) (int, net.Conn) {
	name := mux.Vars(r)["supplier"]
	idx := supplierIndex(name)
	if idx < 0 {
		writeError(w, http.StatusNotFound, "unknown_supplier", fmt.Sprintf("no supplier %q (have atlas, boreal, cedar)", name))
		return http.StatusNotFound, nil
	}
	p.stats.perSupplier[idx].Add(1)
	id := r.Header.Get("X-Request-ID")
	if id != "" {
		p.attempts.update(id, func(a *[3]int64) { a[idx]++ })
	}
	scenarioName := queryValue(r.URL.RawQuery, "scenario")
	if scenarioName == "" {
		scenarioName = "normal"
	}
	play, ok := scenarios[scenarioName]
	if !ok {
		writeError(w, http.StatusBadRequest, "unknown_scenario",
			fmt.Sprintf("no scenario %q (have normal, slow, broken, malformed, flaky, gzip, reset, mismatch)", scenarioName))
		return http.StatusBadRequest, nil
	}
	sku := queryValue(r.URL.RawQuery, "sku")
	if _, ok := catalog[quoteKey{name, sku}]; !ok {
		writeError(w, http.StatusNotFound, "unknown_sku", fmt.Sprintf("%s has no SKU %q", name, sku))
		return http.StatusNotFound, nil
	}
	if name != "boreal" {
		play = normal // only boreal misbehaves
	}
	c := &supplierCall{w: w, r: r, supplier: idx, sku: sku, id: id}
	return play(p, c), c.cut
}

// queryValue returns the first value of key in a raw query string, like
// url.Values.Get but without building the whole map: this is the hot path.
func queryValue(rawQuery, key string) string {
	for rawQuery != "" {
		var pair string
		pair, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, v, _ := strings.Cut(pair, "=")
		if strings.ContainsAny(k, "%+") {
			k, _ = url.QueryUnescape(k)
		}
		if k != key {
			continue
		}
		if strings.ContainsAny(v, "%+") {
			v, _ = url.QueryUnescape(v)
		}
		return v
	}
	return ""
}

// errBadBudget means the X-Budget-Ms header is not a non-negative number.
var errBadBudget = errors.New("X-Budget-Ms must be a number of milliseconds from 0 to 86400000")

// budgetOf returns the X-Budget-Ms header as a duration, or ok false when absent.
func budgetOf(r *http.Request) (d time.Duration, ok bool, err error) {
	v := r.Header.Get("X-Budget-Ms")
	if v == "" {
		return 0, false, nil
	}
	ms, err := parseBudgetMs(v)
	if err != nil {
		return 0, false, err
	}
	return time.Duration(ms * float64(time.Millisecond)), true, nil
}

// parseBudgetMs parses an X-Budget-Ms value: a finite number of
// milliseconds from 0 to one day (fractions allowed).
func parseBudgetMs(v string) (float64, error) {
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(ms) || ms < 0 || ms > 24*3600*1000 {
		return 0, errBadBudget
	}
	return ms, nil
}

// work spends planned time on c, honouring the caller's budget and presence.
// It returns ok true when the work is done and the scenario should answer;
// otherwise it has already answered (or the client is gone) and status is
// what was written (0 for none):
//   - X-Budget-Ms invalid: 400 at once;
//   - planned > X-Budget-Ms: the work cannot finish in time, so it is
//     abandoned (counted once): it stops at the budget and answers 504
//     budget_exhausted, or stops earlier if the client leaves first. A client
//     that sent its exact budget hangs up at that same instant, so either
//     order of the two events counts as abandoned;
//   - the client goes away: it stops at once, counted as client_gone.
func (p *Provider) work(c *supplierCall, planned time.Duration) (status int, ok bool) {
	budget, hasBudget, err := budgetOf(c.r)
	if err != nil {
		return c.fail(http.StatusBadRequest, "bad_budget", err.Error()), false
	}
	if hasBudget && planned > budget {
		p.stats.abandoned.Add(1)
		if !p.pause(c.r.Context(), budget) {
			return 0, false
		}
		return c.fail(http.StatusGatewayTimeout, "budget_exhausted",
			fmt.Sprintf("%s needed %d ms but X-Budget-Ms allowed %s; stopped at the budget",
				Suppliers[c.supplier], planned.Milliseconds(), c.r.Header.Get("X-Budget-Ms"))), false
	}
	if !p.pause(c.r.Context(), planned) {
		return 0, false
	}
	return 0, true
}

// pause waits d, or until ctx ends (the client went away). It reports
// whether the whole d elapsed.
func (p *Provider) pause(ctx context.Context, d time.Duration) bool {
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
	p.stats.clientGone.Add(1)
	return false
}

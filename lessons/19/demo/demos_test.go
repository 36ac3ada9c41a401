package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"quoteflowlab.dev/checkpoints/19/breaker"
	"quoteflowlab.dev/provider"
)

// A run of lesson 19's brownout demo, made by hand: the schedule began at
// t0, boreal was down from 6 s to 14 s.
func brownoutFixture(t0 time.Time, qs ...brownoutQuote) brownoutRun {
	r := brownoutRun{began: t0, quotes: qs}
	r.sched = provider.BrownoutSchedule{StartMs: 6000, EndMs: 14000}
	return r
}

// quoteAt is a quote that started ms after t0 and took 40 ms; boreal's
// line is answer ("" none, "fresh", or "stale": at price with age).
func quoteAt(t0 time.Time, ms int, asked bool, answer string, price int, age float64) brownoutQuote {
	q := brownoutQuote{start: t0.Add(time.Duration(ms) * time.Millisecond), status: http.StatusOK, asked: asked}
	q.end = q.start.Add(40 * time.Millisecond)
	body := `{"request_id":"r","quotes":[{"supplier":"atlas","total_cents":900}`
	switch answer {
	case "fresh":
		body += `,{"supplier":"boreal","total_cents":` + strconv.Itoa(price) + `}`
	case "stale":
		body += `,{"supplier":"boreal","total_cents":` + strconv.Itoa(price) + `,"stale":true,"age_ms":` + strconv.Itoa(int(age)) + `}`
	}
	if err := json.Unmarshal([]byte(body+`]}`), &q.ans); err != nil {
		panic(err)
	}
	return q
}

// The breaker closed, as the provider sees it, when its probes (the first
// breaker.DefaultProbes quotes after the last one that did not ask boreal)
// were answered: measured from the heal to the latest of their answers; a
// quote that was not answered 200 says nothing; with no refused quote
// there is no breaker to close, and a run that ends before its probes
// were answered never closed.
func TestBrownoutClosedByIsTheProbesOfTheLastRunThatAsked(t *testing.T) {
	if breaker.DefaultProbes != 3 {
		t.Fatalf("the fixture has 3 probes, checkpoint 19's default is %d", breaker.DefaultProbes)
	}
	t0 := time.Now()
	busy := quoteAt(t0, 14_650, false, "", 0, 0)
	busy.status = http.StatusServiceUnavailable
	r := brownoutFixture(t0,
		quoteAt(t0, 100, true, "fresh", 1000, 0),
		quoteAt(t0, 6_500, true, "stale", 1000, 500),
		quoteAt(t0, 7_000, false, "stale", 1000, 1000),
		quoteAt(t0, 14_100, true, "stale", 1000, 8000), // a failed probe
		quoteAt(t0, 14_300, false, "stale", 1000, 8200),
		quoteAt(t0, 14_600, true, "fresh", 1000, 0),
		busy,
		quoteAt(t0, 14_610, true, "fresh", 1000, 0),
		quoteAt(t0, 14_700, true, "fresh", 1000, 0), // the third probe, answered at 14.74 s
		quoteAt(t0, 14_800, true, "fresh", 1000, 0),
	)
	if got := r.closedAfter(); got != int64(740) {
		t.Errorf("closed by = %v, want 740 (ms from the heal at 14 s to the third probe's answer at 14.74 s)", got)
	}
	allAsked := brownoutFixture(t0, quoteAt(t0, 100, true, "fresh", 1000, 0), quoteAt(t0, 7_000, true, "", 0, 0), quoteAt(t0, 15_000, true, "fresh", 1000, 0))
	if got := allAsked.closedAfter(); got != "-" {
		t.Errorf("no quote refused: closed by = %v, want -", got)
	}
	stuck := brownoutFixture(t0, quoteAt(t0, 7_000, false, "stale", 1000, 1000),
		quoteAt(t0, 19_000, false, "stale", 1000, 13000), quoteAt(t0, 19_500, true, "fresh", 1000, 0), quoteAt(t0, 19_600, true, "fresh", 1000, 0))
	if got := stuck.closedAfter(); got != "never" {
		t.Errorf("two quotes after the last refused one: closed by = %v, want never", got)
	}
}

// A quote belongs to the phase its start falls in: at 6 s it is in the
// outage, at 14 s healed.
func TestBrownoutPhasesByStart(t *testing.T) {
	t0 := time.Now()
	r := brownoutFixture(t0, quoteAt(t0, 5_999, true, "fresh", 1, 0), quoteAt(t0, 6_000, true, "", 0, 0),
		quoteAt(t0, 13_999, true, "", 0, 0), quoteAt(t0, 14_000, true, "fresh", 1, 0))
	for _, c := range []struct {
		phase string
		n     int
	}{{"healthy", 1}, {"down", 2}, {"healed", 1}} {
		if got := len(r.phase(c.phase)); got != c.n {
			t.Errorf("%s: %d quotes, want %d", c.phase, got, c.n)
		}
	}
}

// The stale figures count the outage's stale boreal lines only, each
// against the last fresh price the client got before it: a stale line at
// another price, or with no fresh one before, is counted; the client's age
// runs from that fresh answer's end.
func TestBrownoutStaleFigures(t *testing.T) {
	t0 := time.Now()
	r := brownoutFixture(t0,
		quoteAt(t0, 5_900, true, "fresh", 1000, 0), // ends at 5.94 s
		quoteAt(t0, 7_000, true, "stale", 1000, 1100),
		quoteAt(t0, 13_900, false, "stale", 999, 7990),
		quoteAt(t0, 14_500, false, "stale", 1000, 8600), // healed: not the outage's
	)
	f := r.stale()
	if f.n != 2 || f.otherPrice != 1 || f.maxAge != 7990 || f.maxClientAge != 8000*time.Millisecond {
		t.Errorf("stale figures = %+v; want 2 stale, 1 at another price, max age_ms 7990, the client's 8s", f)
	}
	none := brownoutFixture(t0, quoteAt(t0, 7_000, true, "stale", 1000, 100))
	if f := none.stale(); f.n != 1 || f.otherPrice != 1 {
		t.Errorf("a stale line with no fresh one before it: %+v, want it counted at another price", f)
	}
}

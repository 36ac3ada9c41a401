package waterfall_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"quoteflowlab.dev/lab/internal/waterfall"
	"quoteflowlab.dev/provider"
)

// An element is what the tests read of an SVG element.
type element struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG decodes the whole document as XML (failing the test when it is
// not well-formed) and returns its elements in document order.
func parseSVG(t *testing.T, svg []byte) []element {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var out []element
	var open []int
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Space + " " + tok.Name.Local
			}
			e := element{name: tok.Name.Local, attrs: map[string]string{}}
			for _, a := range tok.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
			open = append(open, len(out)-1)
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(tok)
			}
		case xml.EndElement:
			open = open[:len(open)-1]
		}
	}
	if root != "http://www.w3.org/2000/svg svg" {
		t.Fatalf("root element %q, want svg in the SVG namespace", root)
	}
	return out
}

func num(t *testing.T, e element, attr string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[attr], 64)
	if err != nil {
		t.Fatalf("<%s> %s=%q: %v", e.name, attr, e.attrs[attr], err)
	}
	return v
}

func ms(v int64) *int64 { return &v }

// retried is a quote request as checkpoint 15 makes it: boreal fails once
// and is retried after a backoff, every attempt told the budget left.
func retried() provider.RequestStats {
	return provider.RequestStats{
		ID:       "a6f22aae",
		Attempts: provider.PerSupplier{Atlas: 1, Boreal: 2, Cedar: 1},
		Log: provider.AttemptLog{
			Atlas:  []provider.Attempt{{ArrivalMs: 0.31, Status: 200, End: "done", DurationMs: 40.52, BudgetMs: ms(800)}},
			Boreal: []provider.Attempt{{ArrivalMs: 0, Status: 503, End: "done", DurationMs: 30.2, BudgetMs: ms(800)}, {ArrivalMs: 57.4, Status: 200, End: "done", DurationMs: 30.11, BudgetMs: ms(741)}},
			Cedar:  []provider.Attempt{{ArrivalMs: 0.42, Status: 200, End: "done", DurationMs: 50.93, BudgetMs: ms(799)}},
		},
	}
}

func render(t *testing.T, rs provider.RequestStats, opt waterfall.Options) []element {
	t.Helper()
	var b bytes.Buffer
	if err := waterfall.Render(&b, rs, opt); err != nil {
		t.Fatal(err)
	}
	return parseSVG(t, b.Bytes())
}

// bars returns the attempt rects, and checks each is where and as wide as
// its recorded times say: x = x0 + arrival·k, width = duration·k, with the
// same x0 and k for all. It returns x0 and k.
func bars(t *testing.T, els []element, rs provider.RequestStats) (x0, k float64) {
	t.Helper()
	logs := map[string][]provider.Attempt{"atlas": rs.Log.Atlas, "boreal": rs.Log.Boreal, "cedar": rs.Log.Cedar}
	var rects []element
	for _, e := range els {
		if e.name == "rect" && e.attrs["class"] == "attempt" {
			rects = append(rects, e)
		}
	}
	want := len(rs.Log.Atlas) + len(rs.Log.Boreal) + len(rs.Log.Cedar)
	if len(rects) != want {
		t.Fatalf("%d attempt bars, want one per recorded attempt: %d", len(rects), want)
	}
	// Pair each bar with its attempt; the longest attempt fixes the scale
	// (coordinates are written to 0.001 px, so its ratio is the most exact).
	type pair struct {
		r element
		a provider.Attempt
		i int
	}
	var pairs []pair
	seen := map[string]int{}
	longest := -1
	for _, r := range rects {
		sup := r.attrs["data-supplier"]
		i := seen[sup]
		seen[sup]++
		if i >= len(logs[sup]) {
			t.Fatalf("more %s bars than %s attempts", sup, sup)
		}
		pairs = append(pairs, pair{r, logs[sup][i], i})
		if longest < 0 || logs[sup][i].DurationMs > pairs[longest].a.DurationMs {
			longest = len(pairs) - 1
		}
	}
	ref := pairs[longest]
	k = num(t, ref.r, "width") / ref.a.DurationMs
	x0 = num(t, ref.r, "x") - ref.a.ArrivalMs*k
	for _, p := range pairs {
		r, a, i, sup := p.r, p.a, p.i, p.r.attrs["data-supplier"]
		x, w := num(t, r, "x"), num(t, r, "width")
		if math.Abs(w-a.DurationMs*k) > 0.01 {
			t.Errorf("%s attempt %d: width %.3f for %.3f ms; at %.4f px/ms it should be %.3f", sup, i+1, w, a.DurationMs, k, a.DurationMs*k)
		}
		if math.Abs(x-(x0+a.ArrivalMs*k)) > 0.01 {
			t.Errorf("%s attempt %d: x %.3f for arrival %.3f ms; should be %.3f", sup, i+1, x, a.ArrivalMs, x0+a.ArrivalMs*k)
		}
		if r.attrs["data-status"] != strconv.Itoa(a.Status) || r.attrs["data-end"] != a.End {
			t.Errorf("%s attempt %d: drawn as %s/%s, recorded %d/%s", sup, i+1, r.attrs["data-status"], r.attrs["data-end"], a.Status, a.End)
		}
	}
	return x0, k
}

// deadlineX returns the x of the deadline line, and false when there is none.
func deadlineX(t *testing.T, els []element) (float64, bool) {
	t.Helper()
	for _, e := range els {
		if e.name == "line" && e.attrs["class"] == "deadline" {
			if num(t, e, "x1") != num(t, e, "x2") {
				t.Fatalf("the deadline line is not vertical: %v", e.attrs)
			}
			return num(t, e, "x1"), true
		}
	}
	return 0, false
}

func TestBarsAreProportionalAndTheBudgetLineIsAtTheEarliestArrivalPlusBudget(t *testing.T) {
	rs := retried()
	els := render(t, rs, waterfall.Options{})
	x0, k := bars(t, els, rs)
	if k <= 0 {
		t.Fatalf("scale %.4f px/ms", k)
	}
	// Deadline from X-Budget-Ms: the earliest arrival + budget is boreal's
	// retry, 57.4 + 741 (atlas 0.31 + 800, boreal 0 + 800, cedar 0.42 + 799).
	dx, ok := deadlineX(t, els)
	if !ok {
		t.Fatal("no deadline line, though every attempt carried X-Budget-Ms")
	}
	if want := x0 + 798.4*k; math.Abs(dx-want) > 0.02 {
		t.Errorf("deadline line at x %.3f, want %.3f (798.4 ms)", dx, want)
	}
	// The backoff: one gap, from boreal's first end to its second arrival.
	var gaps []element
	for _, e := range els {
		if e.name == "line" && e.attrs["class"] == "gap" {
			gaps = append(gaps, e)
		}
	}
	if len(gaps) != 1 {
		t.Fatalf("%d gaps drawn, want 1 (boreal's backoff)", len(gaps))
	}
	if x1, x2 := num(t, gaps[0], "x1"), num(t, gaps[0], "x2"); math.Abs(x1-(x0+30.2*k)) > 0.01 || math.Abs(x2-(x0+57.4*k)) > 0.01 {
		t.Errorf("gap from x %.3f to %.3f, want %.3f to %.3f", x1, x2, x0+30.2*k, x0+57.4*k)
	}
	var outcomes []string
	for _, e := range els {
		if e.attrs["class"] == "outcome" {
			outcomes = append(outcomes, e.text)
		}
	}
	if strings.Join(outcomes, "|") != "200 after 1 attempt|200 after 2 attempts|200 after 1 attempt" {
		t.Errorf("outcomes %q", outcomes)
	}
}

func TestDeadlineFlagWinsAndNoBudgetMeansNoLine(t *testing.T) {
	rs := retried()
	els := render(t, rs, waterfall.Options{DeadlineMs: 120})
	x0, k := bars(t, els, rs)
	if dx, ok := deadlineX(t, els); !ok || math.Abs(dx-(x0+120*k)) > 0.02 {
		t.Errorf("deadline line at %.3f (drawn %v), want %.3f (--deadline-ms 120)", dx, ok, x0+120*k)
	}
	for _, l := range [][]provider.Attempt{rs.Log.Atlas, rs.Log.Boreal, rs.Log.Cedar} {
		for i := range l {
			l[i].BudgetMs = nil
		}
	}
	if _, ok := deadlineX(t, render(t, rs, waterfall.Options{})); ok {
		t.Error("a deadline line without X-Budget-Ms or --deadline-ms")
	}
}

func TestAbandonedAttemptAndTheBudgetItRanInto(t *testing.T) {
	// Checkpoint 15, slow: boreal is told 799 ms, stops there with 504.
	rs := provider.RequestStats{ID: "slow-1", Log: provider.AttemptLog{
		Atlas:  []provider.Attempt{{ArrivalMs: 0.2, Status: 200, End: "done", DurationMs: 40.1, BudgetMs: ms(800)}},
		Boreal: []provider.Attempt{{ArrivalMs: 0.3, Status: 504, End: "abandoned", DurationMs: 799.4, BudgetMs: ms(799)}},
		Cedar:  []provider.Attempt{},
	}}
	els := render(t, rs, waterfall.Options{})
	x0, k := bars(t, els, rs)
	dx, ok := deadlineX(t, els)
	if want := x0 + 799.3*k; !ok || math.Abs(dx-want) > 0.02 {
		t.Errorf("deadline at %.3f, want %.3f (boreal's arrival 0.3 + 799)", dx, want)
	}
	var texts []string
	for _, e := range els {
		texts = append(texts, e.text)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"504 at the budget, 1 attempt", "not asked", "budget 799 ms (X-Budget-Ms)"} {
		if !strings.Contains(all, want) {
			t.Errorf("the picture does not say %q", want)
		}
	}
}

func TestTextIsEscaped(t *testing.T) {
	rs := retried()
	rs.ID = `<a href="x">&'`
	render(t, rs, waterfall.Options{}) // parseSVG fails on a bad escape
}

// A hedged pair whose first copy answered: the outcome is that answer, not
// the hedge that lost and was hung up on.
func TestOutcomeOfAHedgeThatLost(t *testing.T) {
	l := waterfall.Lane{Attempts: []provider.Attempt{
		{ArrivalMs: 0, Status: 200, End: "done", DurationMs: 60},
		{ArrivalMs: 58, End: "client_gone", DurationMs: 3, Hedged: true, LostCancelled: true},
	}}
	if got, want := waterfall.Outcome(l), "200 after 2 attempts (the hedge lost and was cancelled)"; got != want {
		t.Errorf("Outcome = %q, want %q", got, want)
	}
	l.Attempts[1].LostCancelled = false // a caller that gave up on both copies
	if got, want := waterfall.Outcome(l), "client gave up, 2 attempts"; got != want {
		t.Errorf("without lost_cancelled: Outcome = %q, want %q", got, want)
	}
}

// Package waterfall draws one request's supplier attempts, as the provider
// lab recorded them (GET /stats/requests?id=), as an SVG: per supplier, a
// bar per attempt from arrival to end coloured by how it ended, the gap
// before each retry, the deadline line, and the final outcome.
package waterfall

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"quoteflowlab.dev/provider"
)

// Options changes what is drawn.
type Options struct {
	// DeadlineMs, when positive, draws the deadline this many ms after the
	// request ID's first attempt. When zero the deadline comes from the
	// X-Budget-Ms the attempts carried (the earliest arrival + budget); with
	// neither there is no deadline line.
	DeadlineMs float64
}

// Layout, in SVG user units (px).
const (
	width     = 960
	plotLeft  = 96  // where time zero is
	plotWidth = 600 // plotLeft+plotWidth: the right end of the time axis
	barHeight = 18
	top       = 88 // first lane's top (room for two line labels above)
)

// A Lane is one supplier's attempts.
type Lane struct {
	Supplier string
	Attempts []provider.Attempt
}

// Deadline is the line drawn: where, and where it comes from.
type Deadline struct {
	Ms     float64 // after the ID's first attempt
	Source string  // "X-Budget-Ms" or "--deadline-ms"
	Name   string  // "budget" (from X-Budget-Ms) or "deadline" (--deadline-ms)
	Set    bool
}

// lanes returns the suppliers in the lab's order.
func lanes(rs provider.RequestStats) []Lane {
	return []Lane{{"atlas", rs.Log.Atlas}, {"boreal", rs.Log.Boreal}, {"cedar", rs.Log.Cedar}}
}

// deadlines are the lines drawn: the deadline, and the budget the attempts
// carried when the deadline came from --deadline-ms.
func deadlines(rs provider.RequestStats, opt Options) []Deadline {
	var out []Deadline
	if d := DeadlineOf(rs, opt); d.Set {
		out = append(out, d)
	}
	if b := DeadlineOf(rs, Options{}); opt.DeadlineMs > 0 && b.Set {
		out = append(out, b)
	}
	return out
}

// DeadlineOf returns the deadline to draw for rs.
func DeadlineOf(rs provider.RequestStats, opt Options) Deadline {
	if opt.DeadlineMs > 0 {
		return Deadline{Ms: opt.DeadlineMs, Source: "--deadline-ms", Name: "deadline", Set: true}
	}
	d := Deadline{Ms: math.Inf(1), Source: "X-Budget-Ms", Name: "budget"}
	for _, l := range lanes(rs) {
		for _, a := range l.Attempts {
			if a.BudgetMs != nil {
				d.Ms = min(d.Ms, a.ArrivalMs+float64(*a.BudgetMs))
				d.Set = true
			}
		}
	}
	if !d.Set {
		return Deadline{}
	}
	return d
}

// span is the ms the time axis covers: the last end (or the deadline, if
// later) rounded up to a round number.
func span(rs provider.RequestStats, opt Options) float64 {
	end := 0.0
	for _, l := range lanes(rs) {
		for _, a := range l.Attempts {
			end = max(end, a.ArrivalMs+a.DurationMs)
		}
	}
	if d := DeadlineOf(rs, opt); d.Set {
		end = max(end, d.Ms)
	}
	return niceCeil(max(end*1.04, 10))
}

// niceCeil rounds ms up to a round number for the end of the time axis.
func niceCeil(ms float64) float64 { return roundUp(ms, 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) }

// roundUp rounds v up to the first of steps (ascending, from 1 to 10) times
// a power of ten.
func roundUp(v float64, steps ...float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range steps {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// kind says how an attempt ended, for its colour and the legend.
func kind(a provider.Attempt) string {
	switch {
	case a.End == "done" && a.Status == 429:
		return "limited"
	case a.End == "done" && a.Status >= 200 && a.Status < 300:
		return "ok"
	case a.End == "done":
		return "error"
	}
	return a.End // running, client_gone, abandoned, reset
}

var colours = map[string]string{
	"ok": "#2e9d5b", "error": "#d64545", "limited": "#8a4fd3", "abandoned": "#e08a12",
	"client_gone": "#98a2b3", "reset": "#222222", "running": "#3b82f6",
}

var legend = []struct{ kind, text string }{
	{"ok", "done 2xx"}, {"error", "done, error status"}, {"limited", "429"},
	{"abandoned", "abandoned (X-Budget-Ms)"}, {"client_gone", "client gone"}, {"reset", "connection reset"},
	{"running", "running"},
}

// Outcome is one line saying how a supplier's attempts ended.
func Outcome(l Lane) string {
	n := len(l.Attempts)
	if n == 0 {
		return "not asked"
	}
	last := l.Attempts[n-1]
	tries := "1 attempt"
	if n > 1 {
		tries = fmt.Sprintf("%d attempts", n)
	}
	// A hedged pair whose last copy lost: the copy that answered is the outcome.
	if last.LostCancelled {
		for _, a := range l.Attempts[:n-1] {
			if kind(a) == "ok" {
				return fmt.Sprintf("%d after %s (the hedge lost and was cancelled)", a.Status, tries)
			}
		}
	}
	switch last.End {
	case "done":
		return fmt.Sprintf("%d after %s", last.Status, tries)
	case "abandoned":
		if last.Status != 0 {
			return fmt.Sprintf("%d at the budget, %s", last.Status, tries)
		}
		return "stopped at the budget, " + tries
	case "client_gone":
		return "client gave up, " + tries
	case "reset":
		return "connection reset, " + tries
	}
	return "still running, " + tries
}

// A label is a text placed in a row above or below a lane's bars, so that
// labels of attempts close in time do not overlap.
type label struct {
	x      float64 // anchor
	anchor string  // start, middle
	text   string
	fill   string
	row    int
}

// extent returns the label's left and right x (10 px text, estimated).
func (l label) extent() (float64, float64) {
	w := 5.8 * float64(len([]rune(l.text)))
	if l.anchor == "middle" {
		return l.x - w/2, l.x + w/2
	}
	return l.x, l.x + w
}

// placeRows gives each label the first row where it overlaps no other,
// and returns how many rows were used.
func placeRows(ls []label) int {
	var rows [][][2]float64
	for i := range ls {
		a, b := ls[i].extent()
		overlaps := func(r [2]float64) bool { return a < r[1]+6 && r[0] < b+6 }
		row := slices.IndexFunc(rows, func(placed [][2]float64) bool { return !slices.ContainsFunc(placed, overlaps) })
		if row < 0 {
			row = len(rows)
			rows = append(rows, nil)
		}
		rows[row] = append(rows[row], [2]float64{a, b})
		ls[i].row = row
	}
	return len(rows)
}

// A lanePlan is one lane laid out: its labels and its height.
type lanePlan struct {
	above, below []label
	nAbove       int
	height       int
}

const rowHeight = 12

func planLane(l Lane, x func(float64) float64, k float64) lanePlan {
	var p lanePlan
	prevEnd := -1.0
	for _, a := range l.Attempts {
		kd := kind(a)
		if prevEnd >= 0 && a.ArrivalMs > prevEnd {
			p.above = append(p.above, label{x: (x(prevEnd) + x(a.ArrivalMs)) / 2, anchor: "middle",
				text: "wait " + fmtMs(a.ArrivalMs-prevEnd), fill: "#475467"})
		}
		if w := a.DurationMs * k; w < inlineMin(a) {
			p.below = append(p.below, label{x: x(a.ArrivalMs) + w/2, anchor: "middle", text: barLabel(a), fill: colours[kd]})
		}
		if a.RetryAfterMs > 0 {
			p.below = append(p.below, label{x: x(a.ArrivalMs+float64(a.RetryAfterMs)) - 3, anchor: "start",
				text: fmt.Sprintf("↑ Retry-After-Ms %d", a.RetryAfterMs), fill: colours["limited"]})
		}
		prevEnd = max(prevEnd, a.ArrivalMs+a.DurationMs)
	}
	p.nAbove = max(1, placeRows(p.above))
	nBelow := max(1, placeRows(p.below))
	p.height = p.nAbove*rowHeight + 8 + barHeight + nBelow*rowHeight + 14
	return p
}

// barLabel is the text of an attempt's bar: its status, or how it ended
// when it has none.
func barLabel(a provider.Attempt) string {
	if a.Status == 0 {
		return strings.ReplaceAll(a.End, "_", " ") // abandoned, client gone, reset, running
	}
	return statusText(a)
}

// inlineMin is the narrowest bar that holds its label inside.
func inlineMin(a provider.Attempt) float64 { return 6.5*float64(len(barLabel(a))) + 8 }

// Render writes the SVG of rs to w.
func Render(w io.Writer, rs provider.RequestStats, opt Options) error {
	full := span(rs, opt)
	k := plotWidth / full
	ls := lanes(rs)
	x := func(ms float64) float64 { return plotLeft + ms*k }
	plans := make([]lanePlan, len(ls))
	axisY := top
	for i, l := range ls {
		plans[i] = planLane(l, x, k)
		axisY += plans[i].height
	}
	height := axisY + 70

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	total := len(rs.Log.Atlas) + len(rs.Log.Boreal) + len(rs.Log.Cedar)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc("attempts of X-Request-ID "+rs.ID))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="16" y="24" font-size="15" font-weight="600">%s</text>`+"\n", esc("X-Request-ID "+rs.ID))
	sub := fmt.Sprintf("%d attempts, as the provider lab recorded them; time from the first attempt", total)
	if rs.LogDropped > 0 {
		sub += fmt.Sprintf(" (%d more not logged)", rs.LogDropped)
	}
	fmt.Fprintf(&b, `<text x="16" y="42" fill="#667085">%s</text>`+"\n", esc(sub))

	// Time axis: grid lines and labels.
	step := roundUp(full/6, 1, 2, 2.5, 5, 10)
	for t := 0.0; t <= full+step/1000; t += step {
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%d" x2="%s" y2="%d" stroke="#eef0f4"/>`+"\n", f(x(t)), top-6, f(x(t)), axisY)
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle" fill="#667085" font-size="11">%s</text>`+"\n", f(x(t)), axisY+14, esc(fmtMs(t)))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#98a2b3"/>`+"\n", plotLeft, axisY, plotLeft+plotWidth, axisY)

	y := top
	for i, l := range ls {
		p := plans[i]
		barY := y + p.nAbove*rowHeight + 8
		mid := barY + barHeight/2
		fmt.Fprintf(&b, `<g class="lane" data-supplier="%s">`+"\n", l.Supplier)
		fmt.Fprintf(&b, `<text x="16" y="%d" font-weight="600">%s</text>`+"\n", mid+4, l.Supplier)
		prevEnd := -1.0
		for j, a := range l.Attempts {
			kd := kind(a)
			if prevEnd >= 0 && a.ArrivalMs > prevEnd {
				fmt.Fprintf(&b, `<line class="gap" x1="%s" y1="%d" x2="%s" y2="%d" stroke="#667085" stroke-dasharray="3 2"/>`+"\n",
					f(x(prevEnd)), mid, f(x(a.ArrivalMs)), mid)
			}
			fmt.Fprintf(&b, `<rect class="attempt" data-supplier="%s" data-attempt="%d" data-arrival-ms="%s" data-duration-ms="%s" data-end="%s" data-status="%d" x="%s" y="%d" width="%s" height="%d" fill="%s" stroke="%s" stroke-width="1">`,
				l.Supplier, j+1, f(a.ArrivalMs), f(a.DurationMs), esc(a.End), a.Status, f(x(a.ArrivalMs)), barY, f(a.DurationMs*k), barHeight, colours[kd], colours[kd])
			tip := fmt.Sprintf("%s attempt %d at +%s: %s, %s, %s", l.Supplier, j+1, fmtMs(a.ArrivalMs), statusText(a), a.End, fmtMs(a.DurationMs))
			if a.BudgetMs != nil {
				tip += fmt.Sprintf(", X-Budget-Ms %d", *a.BudgetMs)
			}
			if a.RetryAfterMs > 0 {
				tip += fmt.Sprintf(", Retry-After-Ms %d", a.RetryAfterMs)
			}
			fmt.Fprintf(&b, "<title>%s</title></rect>\n", esc(tip))
			if a.DurationMs*k >= inlineMin(a) {
				fmt.Fprintf(&b, `<text x="%s" y="%d" fill="#ffffff" font-size="11">%s</text>`+"\n", f(x(a.ArrivalMs)+3), mid+4, esc(barLabel(a)))
			}
			if a.RetryAfterMs > 0 {
				ra := x(a.ArrivalMs + float64(a.RetryAfterMs))
				fmt.Fprintf(&b, `<path class="retry-after" d="M %s %d v %d" stroke="%s" stroke-width="1.5"/>`+"\n", f(ra), barY-2, barHeight+4, colours["limited"])
			}
			prevEnd = max(prevEnd, a.ArrivalMs+a.DurationMs)
		}
		for _, lb := range p.above {
			fmt.Fprintf(&b, `<text class="gap-label" x="%s" y="%d" text-anchor="%s" fill="%s" font-size="10">%s</text>`+"\n",
				f(lb.x), barY-5-lb.row*rowHeight, lb.anchor, lb.fill, esc(lb.text))
		}
		for _, lb := range p.below {
			fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="%s" fill="%s" font-size="10">%s</text>`+"\n",
				f(lb.x), barY+barHeight+11+lb.row*rowHeight, lb.anchor, lb.fill, esc(lb.text))
		}
		out := Outcome(l)
		fill := "#667085"
		if n := len(l.Attempts); n > 0 {
			fill = colours[kind(l.Attempts[n-1])]
		}
		fmt.Fprintf(&b, `<text class="outcome" x="%d" y="%d" fill="%s" font-weight="600">%s</text>`+"\n", plotLeft+plotWidth+24, mid+4, fill, esc(out))
		fmt.Fprintln(&b, "</g>")
		y += p.height
	}

	// The lines: the deadline, and the budget when the deadline came from
	// --deadline-ms (labels on two rows, in case they are close).
	for row, d := range deadlines(rs, opt) {
		class, colour := "deadline", "#d64545"
		if row == 1 {
			class, colour = "budget", "#e08a12"
		}
		dx := x(d.Ms)
		fmt.Fprintf(&b, `<line class="%s" x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="6 3"/>`+"\n",
			class, f(dx), top-10-row*rowHeight, f(dx), axisY, colour)
		anchor := "middle"
		if dx > plotLeft+plotWidth-60 {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text x="%s" y="%d" fill="%s" font-size="11" text-anchor="%s">%s</text>`+"\n",
			f(dx), top-14-row*rowHeight, colour, anchor, esc(fmt.Sprintf("%s %s (%s)", d.Name, fmtMs(d.Ms), d.Source)))
	}

	// Legend.
	lx, ly := 16, height-22
	for _, e := range legend {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="9" rx="2" fill="%s"/>`, lx, ly-8, colours[e.kind])
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#667085" font-size="11">%s</text>`+"\n", lx+18, ly, esc(e.text))
		lx += 34 + 31*len(e.text)/5
	}
	fmt.Fprintln(&b, "</svg>")
	_, err := w.Write(b.Bytes())
	return err
}

// Summary describes the picture in text, one line per supplier with
// attempts: what `lab waterfall` prints.
func Summary(rs provider.RequestStats, opt Options) []string {
	var out []string
	for _, l := range lanes(rs) {
		if len(l.Attempts) == 0 {
			continue
		}
		var parts []string
		prevEnd := -1.0
		for _, a := range l.Attempts {
			if prevEnd >= 0 {
				parts = append(parts, "wait "+fmtMs(max(0, a.ArrivalMs-prevEnd)))
			}
			p := fmt.Sprintf("%s %s %s", statusText(a), a.End, fmtMs(a.DurationMs))
			if a.RetryAfterMs > 0 {
				p += fmt.Sprintf(" (Retry-After-Ms %d)", a.RetryAfterMs)
			}
			parts = append(parts, p)
			prevEnd = max(prevEnd, a.ArrivalMs+a.DurationMs)
		}
		out = append(out, fmt.Sprintf("%-7s %s → %s", l.Supplier, strings.Join(parts, ", "), Outcome(l)))
	}
	for _, d := range deadlines(rs, opt) {
		out = append(out, fmt.Sprintf("%s %s (%s)", d.Name, fmtMs(d.Ms), d.Source))
	}
	return out
}

func statusText(a provider.Attempt) string {
	if a.Status == 0 {
		return "no status"
	}
	return fmt.Sprint(a.Status)
}

// fmtMs formats a duration in ms for a label.
func fmtMs(ms float64) string {
	switch {
	case ms == 0:
		return "0"
	case ms >= 1000:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", ms/1000), "0"), ".") + " s"
	case ms >= 10:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.1f ms", ms)
	}
	return fmt.Sprintf("%.2f ms", ms)
}

// f formats a coordinate.
func f(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }

// esc escapes text for XML.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

package load

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Named target is a QuoteFlow base URL and the name a sweep shows it by.
type Named struct {
	Name string `json:"name"`
	URL  string `json:"url"`
}

// Limits of a sweep.
const (
	MaxSteps   = 20
	MaxTargets = 8
	MaxStep    = 10 * time.Minute
)

// ParseRates reads "10,20,40" as rates, each from MinRate to MaxRate,
// rising.
func ParseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v >= MinRate && v <= MaxRate) {
			return nil, fmt.Errorf("--rate %q: want requests per second from %g to %d, comma-separated for steps (10,20,40)", s, MinRate, MaxRate)
		}
		if len(out) > 0 && v <= out[len(out)-1] {
			return nil, fmt.Errorf("--rate %q: steps must rise, from light to heavy", s)
		}
		out = append(out, v)
	}
	if len(out) > MaxSteps {
		return nil, fmt.Errorf("--rate %q: at most %d steps", s, MaxSteps)
	}
	return out, nil
}

// ParseTargets reads "URL,URL" or "name=URL,name=URL" (a bare URL is
// named by its host:port).
func ParseTargets(s string) ([]Named, error) {
	var out []Named
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n := Named{URL: f}
		if name, u, ok := strings.Cut(f, "="); ok {
			n = Named{Name: name, URL: u}
		}
		if err := CheckBase(n.URL); err != nil {
			return nil, err
		}
		if n.Name == "" {
			n.Name = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(n.URL, "http://"), "https://"), "/")
		}
		if strings.ContainsAny(n.Name, " \t") || len(n.Name) > 24 {
			return nil, fmt.Errorf("target name %q: want a short name without spaces (24 characters at most)", n.Name)
		}
		if slices.ContainsFunc(out, func(o Named) bool { return o.Name == n.Name }) {
			return nil, fmt.Errorf("target name %q given twice", n.Name)
		}
		out = append(out, n)
	}
	switch {
	case len(out) == 0:
		return nil, errors.New("no target: give one or more QuoteFlow base URLs")
	case len(out) > MaxTargets:
		return nil, fmt.Errorf("%d targets: at most %d side by side", len(out), MaxTargets)
	}
	return out, nil
}

// SweepConfig is a sweep: every target gets each rate at once, side by
// side, for Step, the rates one after the other.
type SweepConfig struct {
	Base      Config // Request, Lines, Scenario, Timeout, Deadline
	Rates     []float64
	Step      time.Duration
	Targets   []Named
	Providers []string // with Reset: each POSTed /reset before each step
	Reset     bool
	// Progress, when set, is told each step as it starts.
	Progress func(step int, rate float64)
}

// Validate reports the first problem with c, for a usage error.
func (c SweepConfig) Validate() error {
	switch {
	case len(c.Rates) < 2:
		return errors.New("a sweep needs two rates or more")
	case c.Step <= 0 || c.Step > MaxStep:
		return fmt.Errorf("--duration %s: want each step from 1ms to %s", c.Step, MaxStep)
	case c.Base.Deadline <= 0:
		return fmt.Errorf("--deadline %s: want a positive duration (a good answer's limit)", c.Base.Deadline)
	case c.Reset && len(c.Providers) == 0:
		return errors.New("--reset needs --provider URL")
	case len(c.Targets) == 0:
		return errors.New("no target: give one or more QuoteFlow base URLs")
	}
	for _, r := range c.Rates {
		cfg := c.Base
		cfg.Targets, cfg.Rate, cfg.Duration = []string{c.Targets[0].URL}, r, c.Step
		if err := cfg.Validate(); err != nil {
			return err
		}
	}
	for _, p := range c.Providers {
		if err := CheckBase(p); err != nil {
			return err
		}
	}
	return nil
}

// A Point is one target at one step.
type Point struct {
	Target      string         `json:"target"`
	Rate        float64        `json:"offered_per_s"`
	Requests    int            `json:"requests"`
	Good        int            `json:"good"`
	GoodputPerS float64        `json:"goodput_per_s"`
	P99Ms       float64        `json:"p99_ms"`
	Statuses    map[string]int `json:"statuses"`
}

// Sweep is what a sweep saw: Points[step][target].
type Sweep struct {
	Request    string    `json:"request"`
	Scenario   string    `json:"scenario"`
	StepS      float64   `json:"step_s"`
	DeadlineMs float64   `json:"deadline_ms"`
	Targets    []Named   `json:"targets"`
	Rates      []float64 `json:"offered_per_s"`
	Points     [][]Point `json:"points"`
}

// RunSweep runs c: step by step, every target at the step's rate at once.
func RunSweep(ctx context.Context, c SweepConfig) (Sweep, error) {
	if err := c.Validate(); err != nil {
		return Sweep{}, err
	}
	sw := Sweep{Request: c.Base.Request, Scenario: c.Base.Scenario, StepS: c.Step.Seconds(),
		DeadlineMs: ms(c.Base.Deadline), Targets: c.Targets, Rates: c.Rates}
	if sw.Scenario == "" {
		sw.Scenario = "normal"
	}
	for i, rate := range c.Rates {
		if c.Progress != nil {
			c.Progress(i, rate)
		}
		if c.Reset {
			for _, p := range c.Providers {
				if err := ResetStats(ctx, p); err != nil {
					return sw, fmt.Errorf("provider: %w", err)
				}
			}
		}
		points := make([]Point, len(c.Targets))
		errs := make([]error, len(c.Targets))
		var wg sync.WaitGroup
		for j, t := range c.Targets {
			wg.Go(func() {
				cfg := c.Base
				cfg.Targets, cfg.Rate, cfg.Duration, cfg.Requests = []string{t.URL}, rate, c.Step, 0
				cfg.Concurrency, cfg.Provider, cfg.Reset, cfg.Progress = 0, "", false, nil
				rep, err := Run(ctx, cfg)
				errs[j] = err
				points[j] = Point{Target: t.Name, Rate: rate, Requests: rep.Requests, Good: rep.Good,
					GoodputPerS: round(float64(rep.Good)/c.Step.Seconds(), 1), P99Ms: rep.LatencyMs.P99, Statuses: rep.Statuses}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return sw, err
		}
		if err := ctx.Err(); err != nil {
			return sw, err
		}
		sw.Points = append(sw.Points, points)
	}
	return sw, nil
}

// Text writes the sweep as a table: a row a step, per target its goodput,
// p99 and refusals (503).
func (s Sweep) Text(w io.Writer) {
	fmt.Fprintf(w, "%s at %s, %g s a step, every target at the offered rate at once; goodput: answers 200, complete\n", s.Request, s.Scenario, s.StepS)
	fmt.Fprintf(w, "(no failure, no stale price, every line complete), within %g ms, a second; p99 over every answer (ms)\n", s.DeadlineMs)
	head := []string{"offered/s"}
	for _, t := range s.Targets {
		head = append(head, t.Name+" goodput/s", "p99", "503")
	}
	rows := [][]string{head}
	for i, pts := range s.Points {
		row := []string{strconv.FormatFloat(s.Rates[i], 'f', -1, 64)}
		for _, p := range pts {
			row = append(row, fmt.Sprintf("%.1f", p.GoodputPerS), fmt.Sprintf("%.0f", p.P99Ms), strconv.Itoa(p.Statuses["503"]))
		}
		rows = append(rows, row)
	}
	widths := make([]int, len(head))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			fmt.Fprintf(&b, "%*s", widths[i], c)
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// palette colours the targets' curves, in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"}

// SVG draws the sweep: goodput and p99 against offered load, side by side,
// one curve per target, with a legend.
func (s Sweep) SVG(w io.Writer) error {
	const pw, ph, ml, mt, mb, gap = 380, 260, 56, 40, 46, 70
	width := ml + pw + gap + ml + pw + 20
	height := mt + ph + mb + 18*len(s.Targets) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	xmax := niceMax(s.Rates[len(s.Rates)-1])
	panel := func(x0 int, title, ylabel string, value func(Point) float64) {
		ymax := 0.0
		for _, pts := range s.Points {
			for _, p := range pts {
				ymax = max(ymax, value(p))
			}
		}
		ymax = niceMax(ymax)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", x0, mt-16, html.EscapeString(title))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", x0, mt, pw, ph)
		for k := 0; k <= 4; k++ {
			y := float64(mt+ph) - float64(ph)*float64(k)/4
			x := float64(x0) + float64(pw)*float64(k)/4
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", x0, y, x0+pw, y)
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, y+4, tick(ymax*float64(k)/4))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, mt+ph+16, tick(xmax*float64(k)/4))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">offered load (requests/s)</text>`+"\n", x0+pw/2, mt+ph+34)
		fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", x0-42, mt+ph/2, html.EscapeString(ylabel))
		for j := range s.Targets {
			var pts []string
			for i, step := range s.Points {
				x := float64(x0) + float64(pw)*s.Rates[i]/xmax
				y := float64(mt+ph) - float64(ph)*value(step[j])/ymax
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x, y, palette[j%len(palette)])
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", palette[j%len(palette)], strings.Join(pts, " "))
		}
	}
	panel(ml, "goodput", fmt.Sprintf("good answers/s (200, complete, within %g ms)", s.DeadlineMs), func(p Point) float64 { return p.GoodputPerS })
	panel(ml+pw+gap+ml, "p99 latency", "p99 (ms)", func(p Point) float64 { return p.P99Ms })
	for j, t := range s.Targets {
		y := mt + ph + mb + 18*j + 8
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", ml, y, ml+24, y, palette[j%len(palette)])
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", ml+30, y+4, html.EscapeString(t.Name))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#555">%s at %s, %g s a step</text>`+"\n",
		width-20, mt+ph+mb+8, html.EscapeString(s.Request), html.EscapeString(s.Scenario), s.StepS)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceMax rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceMax(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func tick(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }

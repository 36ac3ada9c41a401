package demo

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// A Marker is a page's promise about a figure block: the block of `lab demo`
// output right above it, and which of its figures a fresh run must
// reproduce, within what. In the page it is an HTML comment (not rendered):
//
//	<!-- figures: lab demo 16 slow-basket
//	active right after the answer | checkpoint ~ exact
//	answered after (s) | checkpoint ~ 1.9..2.4   # the 2 s deadline, plus the answer's way back
//	-->
//
// Each line is "ROW | COLUMN ~ TOLERANCE", then an optional "# why". A
// tolerance is exact (same text), ±N (numbers within N), ±P% (within P % of
// the page's number), or a bound (<= X, >= X, X..Y) both the page's figure
// and the fresh one must keep.
type Marker struct {
	Page    string
	Line    int // of the marker, 1-based
	Lesson  int
	Name    string
	Block   string // the figure block above the marker
	Figures []Figure
}

// A Figure is one marker line: a figure of the block, and its tolerance.
type Figure struct {
	Key, Tol, Why string
}

var (
	markerRE = regexp.MustCompile(`(?s)<!-- figures: lab demo (\d+) ([a-z0-9-]+)\n(.*?)-->`)
	demoRE   = regexp.MustCompile("```text\n\\$ go run \\./lab demo (\\d+) ([a-z0-9-]+)\n")
)

// Markers reads a page's markers. Every block of `lab demo` output must be
// followed by a marker for the same demo.
func Markers(page, text string) ([]Marker, error) {
	var out []Marker
	locs := markerRE.FindAllStringSubmatchIndex(text, -1)
	covered := map[int]bool{}
	for _, loc := range locs {
		m := Marker{Page: page, Line: 1 + strings.Count(text[:loc[0]], "\n")}
		m.Lesson, _ = strconv.Atoi(text[loc[2]:loc[3]])
		m.Name = text[loc[4]:loc[5]]
		before := text[:loc[0]]
		starts := demoRE.FindAllStringSubmatchIndex(before, -1)
		var body string
		if len(starts) > 0 {
			b := starts[len(starts)-1]
			rest := before[b[0]+len("```text\n"):]
			if end := strings.Index(rest, "```"); end >= 0 && strings.TrimSpace(rest[end+3:]) == "" {
				body = rest[:end]
				if before[b[2]:b[3]] != strconv.Itoa(m.Lesson) || before[b[4]:b[5]] != m.Name {
					return nil, fmt.Errorf("%s:%d: the marker names lab demo %d %s, the block above it shows lab demo %s %s", page, m.Line, m.Lesson, m.Name, before[b[2]:b[3]], before[b[4]:b[5]])
				}
				covered[b[0]] = true
			}
		}
		if body == "" {
			return nil, fmt.Errorf("%s:%d: no ```text block of `go run ./lab demo %d %s` output right above the marker", page, m.Line, m.Lesson, m.Name)
		}
		m.Block = body
		for i, line := range strings.Split(text[loc[6]:loc[7]], "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			c := Figure{}
			line, c.Why, _ = strings.Cut(line, "#")
			key, tol, ok := strings.Cut(line, " ~ ")
			if !ok {
				return nil, fmt.Errorf("%s:%d: %q is not ROW | COLUMN ~ TOLERANCE", page, m.Line+1+i, line)
			}
			c.Key, c.Tol, c.Why = strings.TrimSpace(key), strings.TrimSpace(tol), strings.TrimSpace(c.Why)
			if _, err := Within(c.Tol, "1", "1"); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", page, m.Line+1+i, err)
			}
			m.Figures = append(m.Figures, c)
		}
		if len(m.Figures) == 0 {
			return nil, fmt.Errorf("%s:%d: a marker with no figure to check", page, m.Line)
		}
		out = append(out, m)
	}
	for _, loc := range demoRE.FindAllStringIndex(text, -1) {
		if !covered[loc[0]] {
			return nil, fmt.Errorf("%s:%d: a block of lab demo output with no <!-- figures: ... --> marker after it", page, 1+strings.Count(text[:loc[0]], "\n"))
		}
	}
	return out, nil
}

// Compare checks a fresh run's output against the marker's block and
// returns one line per figure that is off (none: the page holds).
func (m Marker) Compare(fresh string) []string {
	page, now := Figures(m.Block), Figures(fresh)
	var bad []string
	for _, c := range m.Figures {
		p, ok := page[c.Key]
		if !ok {
			bad = append(bad, fmt.Sprintf("%q: not in the page's block", c.Key))
			continue
		}
		f, ok := now[c.Key]
		if !ok {
			bad = append(bad, fmt.Sprintf("%q: not in the fresh output", c.Key))
			continue
		}
		if ok, err := Within(c.Tol, p, f); err != nil || !ok {
			why := ""
			if err != nil {
				why = ": " + err.Error()
			}
			bad = append(bad, fmt.Sprintf("%q: page %s, fresh run %s, want %s%s", c.Key, p, f, c.Tol, why))
		}
	}
	return bad
}

var boundRE = regexp.MustCompile(`^(<=|>=)\s*(-?[0-9.]+)$|^(-?[0-9.]+)\.\.(-?[0-9.]+)$`)

// Within reports whether fresh matches page under tol.
func Within(tol, page, fresh string) (bool, error) {
	if tol == "exact" {
		return page == fresh, nil
	}
	num := func(s string) (float64, error) {
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number (tolerance %s)", s, tol)
		}
		return f, nil
	}
	if m := boundRE.FindStringSubmatch(tol); m != nil {
		for _, s := range []string{page, fresh} {
			v, err := num(s)
			if err != nil {
				return false, err
			}
			switch {
			case m[1] == "<=":
				b, _ := strconv.ParseFloat(m[2], 64)
				if v > b {
					return false, nil
				}
			case m[1] == ">=":
				b, _ := strconv.ParseFloat(m[2], 64)
				if v < b {
					return false, nil
				}
			default:
				lo, _ := strconv.ParseFloat(m[3], 64)
				hi, _ := strconv.ParseFloat(m[4], 64)
				if v < lo || v > hi {
					return false, nil
				}
			}
		}
		return true, nil
	}
	if rest, ok := strings.CutPrefix(tol, "±"); ok {
		pct := strings.HasSuffix(rest, "%")
		n, err := strconv.ParseFloat(strings.TrimSuffix(rest, "%"), 64)
		if err != nil {
			return false, fmt.Errorf("tolerance %q: want exact, ±N, ±P%%, <= X, >= X or X..Y", tol)
		}
		p, err := num(page)
		if err != nil {
			return false, err
		}
		f, err := num(fresh)
		if err != nil {
			return false, err
		}
		if pct {
			n = math.Abs(p) * n / 100
		}
		return math.Abs(f-p) <= n+1e-9, nil
	}
	return false, fmt.Errorf("tolerance %q: want exact, ±N, ±P%%, <= X, >= X or X..Y", tol)
}

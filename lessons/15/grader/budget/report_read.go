package budget

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// Reading the report as a teacher reads it. A report is prose: a sum is
// written "2 × 300 ms + 1 × 100 ms = 700 ms", but also "2 attempts × 275
// ms + one wait with a cap of 50 ms = 600 ms", with words between the
// numbers, a number written as a word, an aside in parentheses. The reader
// finds each "=" that a number follows, takes what stands before it back to
// the start of its clause (a line's start, ":", ";", ",", the end of a
// sentence, another "=" or "≤"), splits that into terms at "+", and reads
// each term several ways: the product of all its numbers, its first chain
// of numbers joined by "×", its last such chain; an aside in parentheses
// is left out or read as part of the sum. A sum is wrong only when no
// reading adds up: a correct report is never failed for its wording.

// A token of a sum: a number, an operator, or a break that ends a clause.
type token struct {
	kind byte // 'n' number, '*' times, '+' plus, '=' equals, '|' clause break, '(' and ')'
	num  float64
}

// numberWords are the numbers a report may write as words ("one wait").
var numberWords = map[string]float64{
	"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}

// tokenize reads text into the tokens of sums; every other word is dropped
// (units, names, "attempts", "wait cap"), but a word never joins two
// numbers into one.
func tokenize(text string) []token {
	var out []token
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case unicode.IsDigit(r):
			j := i
			for j < len(rs) && (unicode.IsDigit(rs[j]) || rs[j] == '.' && j+1 < len(rs) && unicode.IsDigit(rs[j+1])) {
				j++
			}
			v, _ := strconv.ParseFloat(string(rs[i:j]), 64)
			out = append(out, token{kind: 'n', num: v})
			i = j - 1
		case unicode.IsLetter(r) || r == '_':
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || rs[j] == '_' || rs[j] == '-' || rs[j] == '\'') {
				j++
			}
			w := strings.ToLower(string(rs[i:j]))
			switch {
			case w == "x":
				out = append(out, token{kind: '*'})
			case numberWords[w] != 0:
				out = append(out, token{kind: 'n', num: numberWords[w]})
			}
			i = j - 1
		case r == '×' || r == '*' || r == '·' || r == '⋅':
			out = append(out, token{kind: '*'})
		case r == '+':
			out = append(out, token{kind: '+'})
		case r == '=':
			out = append(out, token{kind: '='})
		case r == '(' || r == ')':
			out = append(out, token{kind: byte(r)})
		case r == '≤' || r == '<' || r == '≥' || r == '>' || r == ':' || r == ';' || r == ',' || r == '|' || r == '—' || r == '!' || r == '?' || r == '→':
			out = append(out, token{kind: '|'})
		case r == '.':
			// The end of a sentence (a decimal point is read with its number).
			out = append(out, token{kind: '|'})
		}
	}
	return out
}

// A term of a sum: its numbers, and whether each is joined to the one
// before it by "×".
type term struct {
	nums   []float64
	joined []bool
}

// readings are the values a teacher may read in a term: the product of
// all its numbers; for the first term of a sum also its last chain joined
// by "×" (prose may lead into a sum: "calls of 300 ms that fail, so 2 ×
// 300 ms + ..."), for the last term also its first chain (prose may trail
// after it: "+ 100 ms wait before attempt 2 = ..."). A term in the middle
// is read whole.
func (t term) readings(first, last bool) []float64 {
	if len(t.nums) == 0 {
		return nil
	}
	all := 1.0
	for _, n := range t.nums {
		all *= n
	}
	firstChain, i := t.nums[0], 1
	for ; i < len(t.nums) && t.joined[i]; i++ {
		firstChain *= t.nums[i]
	}
	lastChain, j := t.nums[len(t.nums)-1], len(t.nums)-1
	for ; j > 0 && t.joined[j]; j-- {
		lastChain *= t.nums[j-1]
	}
	out := []float64{all}
	if last && firstChain != all {
		out = append(out, firstChain)
	}
	if first && lastChain != all && lastChain != firstChain {
		out = append(out, lastChain)
	}
	return out
}

// chains are the products of numbers joined by "×" in the term, each with
// its factors: "2 attempts × 275 ms" is one chain [2 275].
func (t term) chains() [][]float64 {
	var out [][]float64
	for i, n := range t.nums {
		if i > 0 && t.joined[i] {
			out[len(out)-1] = append(out[len(out)-1], n)
			continue
		}
		out = append(out, []float64{n})
	}
	return out
}

// An equation of the report: the terms before "=" and the number after it.
type equation struct {
	text   string // as written, for the report
	terms  []term
	result float64
}

// sums returns the totals the equation's readings give, at most a few
// thousand (a sum of many terms is read in fewer ways).
func (e equation) sums() []float64 {
	totals := []float64{0}
	for i, t := range e.terms {
		rs := t.readings(i == 0, i == len(e.terms)-1)
		if len(rs) == 0 {
			continue
		}
		if len(totals)*len(rs) > 4096 {
			rs = rs[:1]
		}
		var next []float64
		for _, s := range totals {
			for _, r := range rs {
				next = append(next, s+r)
			}
		}
		totals = next
	}
	return totals
}

// addsUp reports whether some reading of the equation gives its result.
func (e equation) addsUp() bool {
	for _, s := range e.sums() {
		if math.Abs(s-e.result) < 0.5 {
			return true
		}
	}
	return false
}

// equations finds the sums written out in text, each read with its asides
// in parentheses left out and, when an aside holds a "+" or a "×" (it is
// part of the sum: "2 × 300 ms + (100 + 200 ms)"), with them read in.
func equations(text string) []equation {
	var out []equation
	for _, line := range sentencesWithEquals(text) {
		dropped := equationsIn(line, false)
		inlined := equationsIn(line, true)
		for i, e := range dropped {
			// The same "=" read with its asides in: one equation, both readings.
			if i < len(inlined) {
				e = merge(e, inlined[i])
			}
			out = append(out, e)
		}
	}
	return out
}

// merge makes one equation that adds up when either reading does.
func merge(a, b equation) equation {
	if a.addsUp() || !b.addsUp() {
		return a
	}
	b.text = a.text
	return b
}

// sentencesWithEquals splits text into paragraphs (a sum may wrap a line;
// it never crosses a blank line or a list item) that hold an "=".
func sentencesWithEquals(text string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if strings.Contains(cur.String(), "=") {
			out = append(out, cur.String())
		}
		cur.Reset()
	}
	for line := range strings.Lines(text) {
		trim := strings.TrimSpace(line)
		if trim == "" || strings.HasPrefix(trim, "- ") || strings.HasPrefix(trim, "* ") || strings.HasPrefix(trim, "|") || strings.HasPrefix(trim, "#") {
			flush()
		}
		cur.WriteString(strings.TrimRight(line, "\r\n"))
		cur.WriteString(" ")
	}
	flush()
	return out
}

var spaceRE = regexp.MustCompile(`\s+`)

// equationsIn reads the equations of one paragraph. With inline, an aside
// in parentheses is read as part of the sum; without, it is left out.
func equationsIn(para string, inline bool) []equation {
	toks := tokenize(para)
	// Asides: dropped, or their brackets removed (and their clause breaks
	// with them: "(100 + 200 ms, the caps)" stays in its sum) when one
	// holds an operator or is a term of its own; an aside of words and
	// numbers after a term ("the cap before attempt 2, base 100 ms") is
	// never read into a sum.
	if inline {
		toks = keepArithmeticAsides(toks)
	}
	var flat []token
	depth := 0
	for _, t := range toks {
		switch {
		case t.kind == '(':
			depth++
			continue
		case t.kind == ')':
			depth = max(depth-1, 0)
			continue
		case depth > 0 && !inline:
			continue
		case depth > 0 && t.kind == '|':
			continue
		}
		flat = append(flat, t)
	}
	var out []equation
	for i, t := range flat {
		if t.kind != '=' || i+1 >= len(flat) || flat[i+1].kind != 'n' {
			continue
		}
		// The left side: back to the clause's start or the last "=".
		j := i
		for j > 0 && flat[j-1].kind != '|' && flat[j-1].kind != '=' {
			j--
		}
		e := equation{result: flat[i+1].num}
		cur := term{}
		joinNext := false
		for _, lt := range flat[j:i] {
			switch lt.kind {
			case 'n':
				cur.nums = append(cur.nums, lt.num)
				cur.joined = append(cur.joined, joinNext && len(cur.nums) > 1)
				joinNext = false
			case '*':
				joinNext = true
			case '+':
				e.terms = append(e.terms, cur)
				cur, joinNext = term{}, false
			}
		}
		e.terms = append(e.terms, cur)
		numbers := 0
		for _, t := range e.terms {
			numbers += len(t.nums)
		}
		if numbers == 0 {
			continue // "worst_case_ms = 250 + ...": a name, not a sum
		}
		e.text = equationText(e)
		out = append(out, e)
	}
	return out
}

// keepArithmeticAsides drops the asides that hold no "+" or "×" and do
// not stand as a term of their own.
func keepArithmeticAsides(toks []token) []token {
	var out []token
	for i := 0; i < len(toks); i++ {
		if toks[i].kind != '(' {
			out = append(out, toks[i])
			continue
		}
		depth, j, ops := 0, i, false
		for ; j < len(toks); j++ {
			switch toks[j].kind {
			case '(':
				depth++
			case ')':
				depth--
			case '+', '*':
				ops = true
			}
			if depth == 0 {
				break
			}
		}
		// An aside that stands as a term of its own ("+ (one wait, cap 50
		// ms)") is part of the sum too.
		term := i > 0 && toks[i-1].kind == '+' || j+1 < len(toks) && toks[j+1].kind == '+'
		if ops || term {
			out = append(out, toks[i:min(j+1, len(toks))]...)
		}
		i = j
	}
	return out
}

// equationText writes an equation back, for the report.
func equationText(e equation) string {
	var terms []string
	for _, t := range e.terms {
		var fs []string
		for i, n := range t.nums {
			s := strconv.FormatFloat(n, 'f', -1, 64)
			if i > 0 && t.joined[i] {
				s = "× " + s
			}
			fs = append(fs, s)
		}
		terms = append(terms, strings.Join(fs, " "))
	}
	return spaceRE.ReplaceAllString(strings.Join(terms, " + ")+" = "+strconv.FormatFloat(e.result, 'f', -1, 64), " ")
}

// worstCaseFor reports whether the equation gives the worst case of a call
// with attempts attempts and a budget of budget ms: one term is attempts ×
// a limit (a chain of two numbers, one of them attempts), the others hold
// the waits' caps, one per wait (attempts − 1 of them, as terms of their
// own, or one term that counts them: 2 × 200 ms), the sum adds up and fits
// in the budget.
func (e equation) worstCaseFor(attempts, budget float64) bool {
	if !e.addsUp() || e.result > budget+0.5 {
		return false
	}
	waits := attempts - 1
	for i, t := range e.terms {
		for _, c := range t.chains() {
			if len(c) != 2 || c[0] != attempts && c[1] != attempts {
				continue
			}
			caps := 0.0 // the waits' caps the other terms count
			for k, o := range e.terms {
				if k == i || len(o.nums) == 0 {
					continue
				}
				counted := 1.0
				for _, oc := range o.chains() {
					if len(oc) == 2 && (oc[0] == waits || oc[1] == waits) && waits > 1 {
						counted = waits
					}
				}
				caps += counted
			}
			// Other numbers in the attempts' own term beside its chain
			// ("3 × 200 ms with 100 and 200 ms of waits") are not waits
			// read into the sum: only terms count.
			if caps >= waits && caps > 0 {
				return true
			}
		}
	}
	return false
}

// checkRetryShare checks the arithmetic of the retries' share: every sum
// the section writes out must add up, and each call of the plan that
// retries (max_attempts above 1) must have its worst case written as
// attempts × per-attempt limit plus the wait caps — one cap for each wait,
// attempts − 1 of them — no larger than the call's budget_ms. "attempts ×
// wait cap" alone is not a worst case: it leaves out the attempts
// themselves; nor is a three-attempt call with one wait's cap.
func (g *grader) checkRetryShare(p plan, text string) {
	var v verdict
	eqs := equations(text)
	var seen []string
	for _, e := range eqs {
		seen = append(seen, e.text)
		v.need(e.addsUp(), "%q does not add up (it makes %v)", e.text, e.sums()[0])
	}
	retrying := 0
	for _, c := range p.Calls {
		attempts := *c.MaxAttempts
		if attempts <= 1 {
			continue
		}
		retrying++
		v.need(strings.Contains(text, c.Name), "the section does not name %s, which retries (max_attempts %v)", c.Name, attempts)
		found := false
		for _, e := range eqs {
			found = found || e.worstCaseFor(attempts, *c.BudgetMS)
		}
		v.need(found, "no sum gives %s's worst case as attempts × per-attempt limit + the wait caps (%v × a limit, plus %v wait cap%s, within its budget_ms %v)",
			c.Name, attempts, attempts-1, plural(attempts-1), *c.BudgetMS)
	}
	detail := fmt.Sprintf("%d calls retry; sums found: %s", retrying, joinOr(seen, "none"))
	if retrying == 0 {
		detail = "no call of the plan retries (every max_attempts is 1); sums found: " + joinOr(seen, "none")
	}
	g.judge("report_retry_share", v, "%s", detail)
}

func plural(n float64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// msHeaderRE is a table column whose header gives its unit as ms:
// elapsed_ms, ms, elapsed (ms), time [ms], milliseconds.
var msHeaderRE = regexp.MustCompile(`(?i)(^|[^a-z])ms($|[^a-z])|_ms\b|millisecond`)

// tableLines rewrites the rows of every markdown table in text whose
// header gives a column's unit as ms: each number of such a column is
// written with its unit, "refused | 0.2 ms", as a teacher reads it.
func tableLines(text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i+1 < len(lines); i++ {
		header, sep := cells(lines[i]), cells(lines[i+1])
		if header == nil || sep == nil || !isSeparator(sep) {
			continue
		}
		msCols := map[int]bool{}
		for k, h := range header {
			if msHeaderRE.MatchString(h) {
				msCols[k] = true
			}
		}
		j := i + 2
		for ; j < len(lines); j++ {
			row := cells(lines[j])
			if row == nil {
				break
			}
			if len(msCols) == 0 {
				continue
			}
			for k := range row {
				if msCols[k] && numberCellRE.MatchString(row[k]) {
					row[k] += " ms"
				}
			}
			out = append(out, strings.Join(row, " | "))
		}
		i = j - 1
	}
	return out
}

var numberCellRE = regexp.MustCompile(`^[~≈]?\s*\d+(\.\d+)?$`)

// cells splits a markdown table row into its trimmed cells; nil when the
// line is not a table row.
func cells(line string) []string {
	s := strings.TrimSpace(line)
	if !strings.HasPrefix(s, "|") {
		return nil
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "|"), "|")
	var out []string
	for _, c := range strings.Split(s, "|") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

var sepCellRE = regexp.MustCompile(`^:?-{3,}:?$`)

func isSeparator(cs []string) bool {
	for _, c := range cs {
		if !sepCellRE.MatchString(c) {
			return false
		}
	}
	return len(cs) > 0
}

// quotedWithMS reports whether some line matching kind also holds a time
// in ms, the unit written beside the number or in its table column's
// header.
func quotedWithMS(text string, kind *regexp.Regexp) bool {
	for line := range strings.Lines(text) {
		if kind.MatchString(line) && msRE.MatchString(line) {
			return true
		}
	}
	for _, line := range tableLines(text) {
		if kind.MatchString(line) && msRE.MatchString(line) {
			return true
		}
	}
	return false
}

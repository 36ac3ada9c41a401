package course

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"quoteflowlab.dev/kit/msg"
)

// The Chinese edition: every English page (README.md, lessons/NN/README.md)
// has a twin (README.zh-CN.md) with the same sections, the same code and
// commands, and the same figures. A figure block is a ```text block whose
// first line is a command ("$ go run ./lab demo 16 outage"); it holds that
// command's real output. Blocks of lab's own sentences (check, list,
// hint, watch, show: lab speaks the reader's language) are run with
// LANG=zh_CN.UTF-8 in the Chinese edition: their command lines and their
// figures (every number but a duration, which no two runs share, or a
// line of the answer's own output that lab check quotes ("> ..."), which is
// its run's) are the same as the English edition's. A diagram (```mermaid) and
// a sketch in words (a ```text block with no command, in Chinese where the English has
// none) are translated: their figures are the same. Every other block is
// the same byte for byte.

// Twin is the Chinese edition's path of an English page.
func Twin(page string) string { return msg.ZhPath(page) }

// A Block is one fenced block of a page.
type Block struct {
	Line int    // of the opening fence, 1-based
	Lang string // the fence's info string: text, sh, go, ...
	Body string
}

// Command is the block's first line when it is a command ("$ go run ./lab
// check E14"), without the "$ ".
func (b Block) Command() string {
	first, _, _ := strings.Cut(b.Body, "\n")
	if c, ok := strings.CutPrefix(first, "$ "); ok && b.Lang == "text" {
		return c
	}
	return ""
}

// Localized reports whether the block is the output of a lab command that
// speaks the reader's language.
func (b Block) Localized() bool {
	f := strings.Fields(b.Command())
	for i, w := range f {
		if w == "./lab" || w == "lab" {
			return i+1 < len(f) && localizedCommands[f[i+1]]
		}
	}
	return false
}

var localizedCommands = map[string]bool{"check": true, "list": true, "hint": true, "watch": true, "show": true}

// Blocks returns a page's fenced blocks (``` at the start of a line opens
// and closes one).
func Blocks(text string) []Block {
	var out []Block
	var cur *Block
	var body []string
	for i, line := range strings.Split(text, "\n") {
		fence, ok := strings.CutPrefix(line, "```")
		switch {
		case !ok && cur != nil:
			body = append(body, line)
		case ok && cur == nil:
			cur, body = &Block{Line: i + 1, Lang: strings.TrimSpace(fence)}, nil
		case ok:
			cur.Body = strings.Join(body, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		}
	}
	return out
}

// Sections returns a page's headings' levels ("##", "###", ...), in order,
// outside fenced blocks.
func Sections(text string) []string {
	var out []string
	in := false
	for line := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if in {
			continue
		}
		if level, _, ok := strings.Cut(line, " "); ok && level != "" && strings.Trim(level, "#") == "" {
			out = append(out, level)
		}
	}
	return out
}

// Markers returns the figure markers of a page (<!-- figures: ... -->),
// which a twin repeats word for word.
func Markers(text string) []string { return markerRE.FindAllString(text, -1) }

var markerRE = regexp.MustCompile(`(?s)<!-- figures: .*?-->`)

var (
	durationRE = regexp.MustCompile(`[0-9]+(\.[0-9]+)?\s*(ns|µs|ms|s|m)\b|\d{2}:\d{2}:\d{2}`)
	numberRE   = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
)

// Figures returns the numbers of a block of lab's sentences, durations
// left out, in increasing order: a translated sentence may give the same
// numbers in another order.
func Figures(body string) []string {
	f := numberRE.FindAllString(durationRE.ReplaceAllString(body, " "), -1)
	slices.SortFunc(f, func(a, b string) int {
		x, _ := strconv.ParseFloat(a, 64)
		y, _ := strconv.ParseFloat(b, 64)
		return cmp.Or(cmp.Compare(x, y), cmp.Compare(a, b))
	})
	return f
}

// CompareTwins says how a Chinese page (zh) differs from its English twin
// (en) where it must not: its sections, its blocks, its markers. No line:
// they are twins.
func CompareTwins(en, zh string) []string {
	var bad []string
	if a, b := Sections(en), Sections(zh); strings.Join(a, " ") != strings.Join(b, " ") {
		bad = append(bad, fmt.Sprintf("sections differ: English %d headings %v, Chinese %d headings %v", len(a), a, len(b), b))
	}
	if a, b := Markers(en), Markers(zh); strings.Join(a, "\n") != strings.Join(b, "\n") {
		bad = append(bad, fmt.Sprintf("figure markers differ: English has %d, Chinese %d, or their words differ", len(a), len(b)))
	}
	eb, zb := Blocks(en), Blocks(zh)
	if len(eb) != len(zb) {
		bad = append(bad, fmt.Sprintf("English has %d fenced blocks, Chinese %d", len(eb), len(zb)))
	}
	for i := range min(len(eb), len(zb)) {
		e, z := eb[i], zb[i]
		where := fmt.Sprintf("block %d (English line %d, Chinese line %d)", i+1, e.Line, z.Line)
		switch {
		case e.Lang != z.Lang:
			bad = append(bad, fmt.Sprintf("%s: ```%s in English, ```%s in Chinese", where, e.Lang, z.Lang))
		case e.Command() != z.Command():
			bad = append(bad, fmt.Sprintf("%s: the command differs: %q, %q", where, e.Command(), z.Command()))
		case e.Localized():
			if a, b := Figures(reportLines(e.Body)), Figures(reportLines(z.Body)); strings.Join(a, " ") != strings.Join(b, " ") {
				bad = append(bad, fmt.Sprintf("%s, `%s`: the figures differ:\n\tEnglish %v\n\tChinese %v", where, e.Command(), a, b))
			}
		case e.Lang == "mermaid" || e.Lang == "text" && e.Command() == "" && isProse(e.Body, z.Body):
			// a sketch in words (a timeline, a table drawn in text): translated
			if a, b := Figures(e.Body), Figures(z.Body); strings.Join(a, " ") != strings.Join(b, " ") {
				bad = append(bad, fmt.Sprintf("%s: a text sketch whose figures differ:\n\tEnglish %v\n\tChinese %v", where, a, b))
			}
		case e.Body != z.Body:
			bad = append(bad, fmt.Sprintf("%s: ```%s blocks differ (code, commands and program output are the same in both editions)", where, e.Lang))
		}
	}
	return bad
}

// reportLines is a block of lab's sentences without the lines that quote
// the answer's own output: on a mutant ("> E16 failed (deadline): ...") and
// on the unbroken checkpoint (the lines indented by four spaces under the
// checkpoint's line, before the first mutant: "    E19 passed: ...",
// "    | ..."; a note's wrapped lines, at the end, stay). The answer speaks
// English in both editions, and what it measured (a request ID, an elapsed
// time in a struct, a count under contention, a stale quote's age_ms) is
// its run's, which no two runs share, like a duration.
func reportLines(body string) string {
	var keep []string
	quoting, quoted := false, false
	for line := range strings.SplitSeq(body, "\n") {
		indent := len(line) - len(strings.TrimLeft(line, " "))
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "> "):
			continue
		case indent == 4 && !quoted:
			quoting = true
			continue
		case quoting || indent == 2: // past the answer's output, or at a mutant's row
			quoting, quoted = false, true
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// isProse reports whether a text block without a command is words rather
// than a program's output: the Chinese twin has CJK in it where the
// English has none.
func isProse(en, zh string) bool {
	return !hasCJK(en) && hasCJK(zh)
}

func hasCJK(s string) bool {
	for _, r := range s {
		if r >= 0x2e80 && r <= 0x9fff || r >= 0xff00 && r <= 0xff60 {
			return true
		}
	}
	return false
}

package mutation

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/lab/internal/mutagen"
)

// Generated returns the lesson's generated mutants that an answer must
// catch (required in generated.txt, and breaking a stated property by the
// messages table of properties.md), as checks like the hand-written ones,
// made from the checkpoint as it is now (see Set.recorded).
func Generated(root string, l course.Lesson) ([]check.Check, error) {
	es, ms, err := Mutants.recorded(root, l, mutagen.Required)
	if err != nil || es == nil {
		return nil, err
	}
	rows, _, err := Messages(root, l)
	if err != nil {
		return nil, err
	}
	zh, err := PropertiesZh(root, l)
	if err != nil {
		return nil, err
	}
	var vs []check.Check
	for i, e := range es {
		e.Property = PropertyOf(rows, e)
		if !Stated(e.Property) {
			continue // beyond what the exercise states: not required of an answer
		}
		m, propertyZh := ms[i], zh[e.Property]
		v := m.Check
		v.Exercise, v.Required, v.Kind, v.Def = l.Exercise(), true, report.Mutant, Mutants.File(l)
		v.Generated = &check.Generated{Op: m.Op, Where: m.Where(l.Checkpoint()), Edit: m.Edit(), Property: e.Property, PropertyZh: propertyZh}
		v.Story = msg.In(msg.English, "gen.story", m.Op, v.Generated.Where, m.Edit(), e.Property)
		if propertyZh != "" {
			v.StoryZh = msg.In(msg.Chinese, "gen.story", m.Op, v.Generated.Where, m.Edit(), propertyZh)
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// GeneratedWheats returns the lesson's generated wheats an answer must
// pass (status wheat in wheats.txt), made from the checkpoint as it is now.
// A lesson with no wheats.txt has none.
func GeneratedWheats(root string, l course.Lesson) ([]check.Check, error) {
	_, ws, err := Wheats.recorded(root, l, mutagen.Wheat)
	if err != nil {
		return nil, err
	}
	var vs []check.Check
	for _, w := range ws {
		v := w.Check
		v.Exercise, v.Required, v.Kind, v.Def = l.Exercise(), true, report.Wheat, Wheats.File(l)
		v.Generated = &check.Generated{Op: w.Op, Where: w.Where(l.Checkpoint()), Edit: w.Edit()}
		v.Story = msg.In(msg.English, "gen.wheat_story", w.Op, v.Generated.Where, w.Edit(), Wheats.From(l))
		v.StoryZh = msg.In(msg.Chinese, "gen.wheat_story", w.Op, v.Generated.Where, w.Edit(), Wheats.From(l))
		vs = append(vs, v)
	}
	return vs, nil
}

// normalizeSays makes a failure's line comparable from run to run: ports,
// durations, pointers, hex identifiers and decimal figures vary.
func normalizeSays(line string) string {
	line = portRE.ReplaceAllString(line, "LOOPBACK") // before decimals: 127.0.0.1 is no figure
	line = durationRE.ReplaceAllString(line, "DUR")
	line = pointerRE.ReplaceAllString(line, "PTR")
	line = hexRE.ReplaceAllString(line, "HEX")
	line = decimalRE.ReplaceAllString(line, "NUM")
	return strings.TrimSpace(line)
}

var (
	durationRE = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|us|ms|s|m|h)([0-9]+(\.[0-9]+)?(ns|µs|us|ms|s))*\b`)
	hexRE      = regexp.MustCompile(`\b[0-9a-f]{8,}\b`)
	pointerRE  = regexp.MustCompile(`\b0x[0-9a-f]+\b`)
	decimalRE  = regexp.MustCompile(`\b[0-9]+\.[0-9]+\b`) // a measured figure: elapsed_ms 0.256`
)

// A MessageRow maps what the reference says on a mutant to the property of
// properties.md the mutant breaks: the second table of properties.md,
// under a heading that starts "## The reference's messages".
type MessageRow struct {
	Line     int
	Contains string // a part of the reference's failure line
	Property string // a row of the first table
}

// Messages reads properties.md's table of messages, and the names of the
// first table's properties.
func Messages(root string, l course.Lesson) (rows []MessageRow, props []string, err error) {
	name := l.Checks() + "/properties.md"
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		return nil, nil, err
	}
	section := 0 // 0: before the first table, 1: properties, 2: messages
	header := false
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "## The reference's messages") {
			section, header = 2, true
			continue
		}
		if !strings.HasPrefix(t, "|") {
			continue
		}
		if section == 0 {
			section, header = 1, true
		}
		cells := strings.Split(strings.Trim(t, "|"), "|")
		if header || strings.Trim(cells[0], " -:") == "" {
			header = false
			continue
		}
		switch section {
		case 1:
			props = append(props, strings.TrimSpace(cells[0]))
		case 2:
			if len(cells) != 2 {
				return nil, nil, fmt.Errorf("%s:%d: want 2 cells (the reference's message holds | property)", name, i+1)
			}
			m := regexp.MustCompile("`([^`]+)`").FindStringSubmatch(cells[0])
			if m == nil {
				return nil, nil, fmt.Errorf("%s:%d: the message part must be in backticks", name, i+1)
			}
			rows = append(rows, MessageRow{Line: i + 1, Contains: m[1], Property: strings.TrimSpace(cells[1])})
		}
	}
	return rows, props, nil
}

// NotStated starts a messages row's property cell when what the reference
// says on a mutant breaks no property the exercise states (a control of the
// reference's own, a check beyond the starter's list): such a mutant is not
// required, however reliably the reference catches it, since an answer
// that checks exactly what is stated passes it. The rest of the cell says
// why; the lesson's page or starter may state it later.
const NotStated = "not stated:"

// Crash starts a messages row's property cell for a mutant that makes the
// service panic (or the runtime stop) on a scenario every answer must run:
// every answer fails on it, whatever it checks, so it is required without
// a row of the properties table. The rest of the cell says on what.
const Crash = "crash:"

// Stated reports whether a messages row's property cell names a stated
// property (not NotStated).
func Stated(property string) bool { return property != "" && !strings.HasPrefix(property, NotStated) }

// PropertyOf is the property of the first row whose part the entry's
// message, or its place ("... @ queue/stream.go:230 (Stream.Lease)"),
// holds, or "". A place lets two mutants that fail with the same words in
// different functions (a panic's line) map apart.
func PropertyOf(rows []MessageRow, e mutagen.Entry) string {
	key := strings.ToLower(e.Says + " @ " + e.Where)
	for _, r := range rows {
		if strings.Contains(key, strings.ToLower(r.Contains)) {
			return r.Property
		}
	}
	return ""
}

// GeneratedMutant returns the generated mutant or wheat named name (any
// of the lesson's scope or allowed.txt, required or not), its set, and its
// entry in the set's File when it has one.
func GeneratedMutant(root string, l course.Lesson, name string) (mutagen.Mutant, Set, *mutagen.Entry, error) {
	for _, set := range Sets {
		ms, err := set.Generate(root, l)
		if err != nil {
			return mutagen.Mutant{}, set, nil, err
		}
		for _, m := range ms {
			if m.Name != name {
				continue
			}
			m.Exercise = l.Exercise()
			res, err := set.Read(root, l)
			if err != nil || res == nil {
				return m, set, nil, err
			}
			if e, ok := res.Entry(name); ok {
				return m, set, &e, nil
			}
			return m, set, nil, nil
		}
	}
	return mutagen.Mutant{}, Mutants, nil, fmt.Errorf("%s has no generated mutant or wheat %q", l.Exercise(), name)
}

// PropertiesZhFile is the Chinese wording of a lesson's properties: one
// table row per row of properties.md's first table, | English | 中文 |.
func PropertiesZhFile(l course.Lesson) string { return l.Checks() + "/properties.zh-CN.md" }

// PropertiesZh reads PropertiesZhFile: each property of properties.md (in
// English, as there) → its Chinese wording. No file: an empty map.
func PropertiesZh(root string, l course.Lesson) (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(PropertiesZhFile(l))))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| property |") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 2 {
			return nil, fmt.Errorf("%s:%d: want 2 cells (property | 中文)", PropertiesZhFile(l), i+1)
		}
		out[strings.TrimSpace(cells[0])] = strings.TrimSpace(cells[1])
	}
	return out, nil
}

package coursetest_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/lab/internal/mutagen"
	"quoteflowlab.dev/lab/internal/mutation"
)

// A property is one row of a lesson's lessons/NN/checks/properties.md.
type property struct {
	line    int
	name    string   // the property, in a few words
	stated  []string // phrases (in backticks) found in the starter, the hint or the page
	mutants []string // the mutants that violate it by the smallest step
}

// Every property a mutant-graded exercise states has its smallest violation
// as a mutant. Each lesson's mutants folder holds properties.md, a table
// property -> where it is stated -> its mutants; this test fails when
//
//   - an item of the starter's "show that" list (or a clause of its
//     "Bonus:" paragraph) is quoted by no row: a stated property nobody
//     listed;
//   - a row lists no mutant, or a mutant that does not exist (a generated
//     mutant counts when generated.txt has it required);
//   - a row quotes a phrase that the starter, hint and page do not hold;
//   - a mutant of the folder is in no row.
//
// CONTRIBUTING.md ("Add a mutant") says how to add a row.
func TestEveryPropertyHasItsSmallestViolation(t *testing.T) {
	eachMutantLesson(t, func(t *testing.T, root string, l course.Lesson) {
		table := l.Checks() + "/properties.md"
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(table)))
		if err != nil {
			t.Fatalf("%s: no property table: %v", l.Exercise(), err)
		}
		props, err := parseProperties(string(data))
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		checks, err := check.Load(root, l.Checks(), l.Exercise())
		if err != nil {
			t.Fatal(err)
		}
		mutants := map[string]bool{}
		for _, v := range checks {
			if v.Kind == report.Mutant {
				mutants[v.Name] = false
			}
		}
		// A generated required mutant may be a row's smallest violation
		// too (it need not be in a row: its message maps it to one).
		generated := map[string]bool{}
		if res, err := mutation.Mutants.Read(root, l); err == nil && res != nil {
			for _, e := range res.Entries {
				if e.Status == mutagen.Required {
					generated[e.Name] = true
				}
			}
		}
		starter := commentText(t, root, l.Starter())
		said := normalize(starter + "\n" + read(t, root, l.Hint()) + "\n" + read(t, root, l.Page()))
		for _, p := range props {
			if len(p.mutants) == 0 {
				t.Errorf("%s:%d: %q has no mutant: add its smallest violation", table, p.line, p.name)
			}
			for _, m := range p.mutants {
				if generated[m] {
					continue
				}
				if _, ok := mutants[m]; !ok {
					t.Errorf("%s:%d: %q lists %s, which is not a mutant in %s", table, p.line, p.name, m, l.Checks())
					continue
				}
				mutants[m] = true
			}
			if len(p.stated) == 0 {
				t.Errorf("%s:%d: %q quotes no phrase of the starter, hint or page (`...`)", table, p.line, p.name)
			}
			for _, s := range p.stated {
				if !strings.Contains(said, normalize(s)) {
					t.Errorf("%s:%d: %q quotes `%s`, which the starter, hint and page do not say", table, p.line, p.name, s)
				}
			}
		}
		for m, listed := range mutants {
			if !listed {
				t.Errorf("%s: mutant %s is in no row: say which stated property it violates", table, m)
			}
		}
		for _, item := range statedItems(starter) {
			n := normalize(item)
			if !slices.ContainsFunc(props, func(p property) bool {
				return slices.ContainsFunc(p.stated, func(s string) bool { return strings.Contains(n, normalize(s)) })
			}) {
				t.Errorf("%s: the starter states %q, and no row of %s quotes it", l.Exercise(), short(item), table)
			}
		}
	})
}

// parseProperties reads the rows of the table: | property | `stated`... | mutant, mutant |.
func parseProperties(text string) ([]property, error) {
	var props []property
	header := true
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "## The reference's messages") {
			break // the generated mutants' table (TestGeneratedMutantsAreCurrentAndReviewed)
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			return nil, fmt.Errorf("line %d: want 3 cells (property | stated as | mutants), got %d", i+1, len(cells))
		}
		if header || strings.Trim(cells[0], " -:") == "" {
			header = false
			continue
		}
		p := property{line: i + 1, name: strings.TrimSpace(cells[0])}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			p.stated = append(p.stated, m[1])
		}
		for _, m := range strings.Split(cells[2], ",") {
			if m = strings.Trim(strings.TrimSpace(m), "`"); m != "" {
				p.mutants = append(p.mutants, m)
			}
		}
		props = append(props, p)
	}
	if len(props) == 0 {
		return nil, fmt.Errorf("no rows")
	}
	return props, nil
}

// commentText is the text of the starter's // comments (its statement).
func commentText(t *testing.T, root, dir string) string {
	t.Helper()
	// The starter as committed: the folder may hold a student's answer (CI
	// runs the suite with every exercise written).
	text, err := exec.Command("git", "-C", root, "show", "HEAD:"+dir+"/main.go").Output()
	if err != nil {
		text = []byte(read(t, root, dir+"/main.go"))
	}
	var b strings.Builder
	for _, line := range strings.Split(string(text), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "//"); ok {
			b.WriteString(rest + "\n")
		}
	}
	return b.String()
}

var itemRE = regexp.MustCompile(`^\s*(\d+\.|-)\s`)

// statedItems are the properties the starter lists: the items after its
// last "show that" (or "proves this") line, and each clause of a paragraph
// that starts "Bonus:".
func statedItems(comment string) []string {
	lines := strings.Split(comment, "\n")
	start := -1
	for i, line := range lines {
		if strings.Contains(line, "show that") || (start < 0 && strings.Contains(line, "proves this")) {
			start = i + 1
		}
	}
	var items []string
	in := false
	for i := max(start, 0); i < len(lines); i++ {
		line := lines[i]
		switch {
		case itemRE.MatchString(line):
			items = append(items, line)
			in = true
		case strings.TrimSpace(line) == "":
			in = false
		case in:
			items[len(items)-1] += " " + strings.TrimSpace(line)
		}
	}
	for i := 0; i < len(lines); i++ {
		rest, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "Bonus:")
		if !ok {
			continue
		}
		for i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
			i++
			rest += " " + strings.TrimSpace(lines[i])
		}
		for _, clause := range splitOutsideParens(rest) {
			if strings.TrimSpace(clause) != "" {
				items = append(items, clause)
			}
		}
	}
	return items
}

// splitOutsideParens splits at each ";" that is not inside parentheses.
func splitOutsideParens(s string) []string {
	var parts []string
	depth, from := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ';':
			if depth == 0 {
				parts = append(parts, s[from:i])
				from = i + 1
			}
		}
	}
	return append(parts, s[from:])
}

// normalize folds whitespace (comment lines wrap anywhere) and case.
func normalize(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 90 {
		return s[:90] + "..."
	}
	return s
}

package demo_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/demo"
)

const page = "# A page\n\n```text\n$ go run ./lab demo 16 slow-basket\nsome words\n" +
	"                               checkpoint  deadline_without_cancel\n" +
	"answered after (s)                   2.02                     2.01\n" +
	"line statuses                   partial 3                partial 3\n" +
	"active right after the answer           0                        3\n" +
	"```\n\n<!-- figures: lab demo 16 slow-basket\n" +
	"active right after the answer | checkpoint ~ exact\n" +
	"active right after the answer | deadline_without_cancel ~ exact   # the one figure that tells them apart\n" +
	"answered after (s) | checkpoint ~ 1.9..2.5\n" +
	"line statuses | checkpoint ~ exact\n-->\n"

func fresh(active, after string) string {
	var sb strings.Builder
	t := demo.Table{Columns: []string{"checkpoint", "deadline_without_cancel"}}
	t.Add("answered after (s)", after, "2.00")
	t.Add("line statuses", "partial 3", "partial 3")
	t.Add("active right after the answer", "0", active)
	sb.WriteString("words first\n")
	t.Print(&sb)
	sb.WriteString("\n  0-9   ###\n")
	return sb.String()
}

func TestAPageThatHoldsPasses(t *testing.T) {
	ms, err := demo.Markers("p.md", page)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || len(ms[0].Figures) != 4 || ms[0].Figures[1].Why != "the one figure that tells them apart" {
		t.Fatalf("markers = %+v", ms)
	}
	if bad := ms[0].Compare(fresh("3", "2.11")); len(bad) != 0 {
		t.Errorf("a run that matches the page: %q", bad)
	}
}

func TestAFigureOffThePageFails(t *testing.T) {
	ms, err := demo.Markers("p.md", page)
	if err != nil {
		t.Fatal(err)
	}
	if bad := ms[0].Compare(fresh("0", "2.11")); len(bad) != 1 || !strings.Contains(bad[0], "page 3, fresh run 0") {
		t.Errorf("mutant's active 0 against the page's 3: %q", bad)
	}
	if bad := ms[0].Compare(fresh("3", "2.9")); len(bad) != 1 {
		t.Errorf("2.9 s against the bound 1.9..2.5: %q", bad)
	}
	edited := strings.Replace(page, "                        3\n", "                        2\n", 1)
	ms, err = demo.Markers("p.md", edited)
	if err != nil {
		t.Fatal(err)
	}
	if bad := ms[0].Compare(fresh("3", "2.11")); len(bad) != 1 {
		t.Errorf("a page edited to a wrong figure: %q", bad)
	}
}

func TestMarkersAreRequiredAndWellFormed(t *testing.T) {
	for name, text := range map[string]string{
		"block without marker": "```text\n$ go run ./lab demo 16 outage\nx\n```\n",
		"marker without block": "text\n<!-- figures: lab demo 16 outage\na | b ~ exact\n-->\n",
		"other demo's block":   strings.Replace(page, "<!-- figures: lab demo 16 slow-basket", "<!-- figures: lab demo 16 outage", 1),
		"bad tolerance":        strings.Replace(page, "~ 1.9..2.5", "~ roughly", 1),
	} {
		if _, err := demo.Markers("p.md", text); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, c := range []struct {
		tol, page, fresh string
		ok               bool
	}{
		{"exact", "6", "6", true}, {"exact", "6", "7", false},
		{"±1", "18", "17", true}, {"±1", "18", "16", false},
		{"±10%", "1000", "1099", true}, {"±10%", "1000", "1101", false},
		{"<= 2.4", "1.94", "2.3", true}, {"<= 2.4", "1.94", "2.5", false}, {"<= 2.4", "2.5", "1.9", false},
		{">= 1", "15", "1", true}, {">= 1", "15", "0", false},
	} {
		if got, err := demo.Within(c.tol, c.page, c.fresh); got != c.ok || err != nil {
			t.Errorf("Within(%q, %q, %q) = %v, %v; want %v", c.tol, c.page, c.fresh, got, err, c.ok)
		}
	}
}

// Every marker of the course's pages holds for the page's own block: a
// bound the pasted run breaks (a page figure of 6 where the marker says
// 0..1) is a page that contradicts itself.
func TestEveryPageKeepsItsOwnBars(t *testing.T) {
	root := filepath.Join("..", "..")
	lessons, err := course.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lessons {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(l.Page())))
		if err != nil {
			continue
		}
		markers, err := demo.Markers(l.Page(), string(data))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, m := range markers {
			for _, bad := range m.Compare(m.Block) {
				t.Errorf("%s:%d: the page's own figure breaks its bar: %s", m.Page, m.Line, bad)
			}
		}
	}
}

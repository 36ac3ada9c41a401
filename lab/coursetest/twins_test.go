package coursetest_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/testenv"
	"quoteflowlab.dev/lab/internal/mutation"
)

// notYetInChinese are the pages whose Chinese twin is still to be written,
// with the lesson's hint, stories and properties. Translating one means
// writing its twin (README.zh-CN.md beside it), its hint.zh-CN.md, a
// story.zh-CN line in each of its checks/*.txtar, and
// checks/properties.zh-CN.md, then deleting its line here: the tests
// below then hold it to all of that. A page that has its twin must not be
// listed (the list only shrinks).
var notYetInChinese = map[string]bool{
	"lessons/20/README.md": true,
}

// pages are the course's English pages: the README and every lesson folder's
// page, whether or not the manifest lists its lesson yet.
func pages(t *testing.T, root string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(root, "lessons", "*", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, f := range found {
		rel, _ := filepath.Rel(root, f)
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// Every page has its Chinese twin, and links to it at the top, and the
// twin links back.
func TestEveryPageHasItsChineseTwin(t *testing.T) {
	root := testenv.Root(t)
	for _, page := range pages(t, root) {
		twin := course.Twin(page)
		if notYetInChinese[page] {
			if exists(root, twin) {
				t.Errorf("%s has its twin %s now: delete its line from notYetInChinese (twins_test.go)", page, twin)
			}
			continue
		}
		if !exists(root, twin) {
			t.Errorf("%s has no Chinese twin: write %s (same sections, code, commands and figures; see docs/glossary.md)", page, twin)
			continue
		}
		en, zh := read(t, root, page), read(t, root, twin)
		if !strings.Contains(top(en), filepath.Base(twin)) {
			t.Errorf("%s does not link its twin %s at the top", page, filepath.Base(twin))
		}
		if !strings.Contains(top(zh), "("+filepath.Base(page)+")") {
			t.Errorf("%s does not link its twin %s at the top", twin, filepath.Base(page))
		}
	}
}

// top is a page's first lines, where the link to its twin belongs.
func top(page string) string {
	lines := strings.SplitN(page, "\n", 6)
	return strings.Join(lines[:min(5, len(lines))], "\n")
}

// Twins have the same sections, the same code and commands, and the same
// figures (course.CompareTwins says what may differ).
func TestTwinsHaveTheSameSectionsBlocksAndFigures(t *testing.T) {
	root := testenv.Root(t)
	for _, page := range pages(t, root) {
		twin := course.Twin(page)
		if !exists(root, twin) {
			continue
		}
		for _, d := range course.CompareTwins(read(t, root, page), read(t, root, twin)) {
			t.Errorf("%s vs %s: %s", page, twin, d)
		}
	}
}

// CompareTwins itself: each difference it must find.
func TestCompareTwinsFindsWhatDiffers(t *testing.T) {
	en := "# T\n\n## A\n\n```sh\ngo run ./lab check E14\n```\n\n```text\n$ go run ./lab check E14\nverdict: PASSED: catches 12/12 (18 ms)\n```\n\n### B\n\n```text\n$ go run ./lab demo 16 outage\nactive 3\n```\n\n<!-- figures: lab demo 16 outage\nactive | x ~ exact\n-->\n"
	zh := "# T\n\n## 甲\n\n```sh\ngo run ./lab check E14\n```\n\n```text\n$ go run ./lab check E14\n结论：通过：抓住 12/12（25 ms）\n```\n\n### 乙\n\n```text\n$ go run ./lab demo 16 outage\nactive 3\n```\n\n<!-- figures: lab demo 16 outage\nactive | x ~ exact\n-->\n"
	if d := course.CompareTwins(en, zh); len(d) != 0 {
		t.Fatalf("twins that differ only where they may: %q", d)
	}
	// the answer's own output, quoted by lab check, is its run's: two runs
	// measure other request IDs and elapsed times
	enq := strings.Replace(en, "verdict", "                       > E16 failed: arrivals [35bfe26a#1] ElapsedMS:96.385\nverdict", 1)
	zhq := strings.Replace(zh, "结论", "                       > E16 failed: arrivals [ffbaa826#1] ElapsedMS:0.14\n结论", 1)
	if d := course.CompareTwins(enq, zhq); len(d) != 0 {
		t.Errorf("twins whose quoted answer output differs (two runs): %q", d)
	}
	for name, bad := range map[string]string{
		"a section less":        strings.Replace(zh, "### 乙\n", "", 1),
		"a section's level":     strings.Replace(zh, "### 乙", "## 乙", 1),
		"a figure of lab check": strings.Replace(zh, "12/12", "11/12", 1),
		"a command":             strings.Replace(zh, "$ go run ./lab check E14", "$ go run ./lab check E13", 1),
		"a code block":          strings.Replace(zh, "```sh\ngo run ./lab check E14", "```sh\ngo run ./lab check E15", 1),
		"a demo's output":       strings.Replace(zh, "active 3", "active 4", 1),
		"a block less":          strings.Replace(zh, "```sh\ngo run ./lab check E14\n```\n", "", 1),
		"a marker's tolerance":  strings.Replace(zh, "~ exact", "~ ±1", 1),
	} {
		if d := course.CompareTwins(en, bad); len(d) == 0 {
			t.Errorf("%s: not found", name)
		}
	}
}

// Every message of lab's catalog has its Chinese text, and the Chinese
// catalog has no message the English one lacks.
func TestEveryMessageHasChineseText(t *testing.T) {
	en, err := msg.IDs(msg.English)
	if err != nil {
		t.Fatal(err)
	}
	zh, err := msg.IDs(msg.Chinese)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range en {
		if !msg.Has(msg.Chinese, id) {
			t.Errorf("message %s has no Chinese text: add it to kit/msg/catalog/zh-CN.toml", id)
		}
	}
	for _, id := range zh {
		if !slices.Contains(en, id) {
			t.Errorf("message %s is in zh-CN.toml only: add its English text to en.toml, or delete it", id)
		}
	}
}

// A translated lesson's hint, stories and property wordings are in Chinese
// too: what lab hint and lab check print.
func TestTranslatedLessonsHaveChineseHintsStoriesAndProperties(t *testing.T) {
	root := testenv.Root(t)
	for _, l := range lessons(t, root) {
		if notYetInChinese[l.Page()] {
			continue
		}
		t.Run(l.Exercise(), func(t *testing.T) {
			if !exists(root, course.Twin(l.Hint())) {
				t.Errorf("no Chinese hint %s", course.Twin(l.Hint()))
			}
			checks, err := check.Load(root, l.Checks(), l.Exercise())
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range checks {
				if v.StoryZh == "" {
					t.Errorf("%s: no story.zh-CN line", v.Def)
				}
			}
			zh, err := mutation.PropertiesZh(root, l)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range propertyRows(t, root, l) {
				if zh[p] == "" {
					t.Errorf("%s: property %q has no Chinese wording", mutation.PropertiesZhFile(l), p)
				}
			}
		})
	}
}

// propertyRows are the properties of the first table of a lesson's
// properties.md (none for a lesson without one).
func propertyRows(t *testing.T, root string, l course.Lesson) []string {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(l.Checks()+"/properties.md")))
	if err != nil {
		return nil
	}
	var out []string
	in := false
	for line := range strings.SplitSeq(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "| property |"):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "| "):
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
			out = append(out, strings.TrimSpace(cell))
		case in:
			return out
		}
	}
	return out
}

package cli

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/report"
)

// lab verify --docs judges a demo's figures as lab check judges a timed
// check: a drift is run again (after a wait for a quieter machine when the
// machine was busy), the second run decides, and figures that drift in a
// second run the machine held back are inconclusive: neither a pass nor a
// failure of the code (exit 3).
func TestDocsFiguresOnABusyMachineAreInconclusive(t *testing.T) {
	ok := itemResult{OK: true, Summary: "9 figures as on the page"}
	drift := itemResult{Summary: "1 of 9 figures drifted from the page"}
	busy, quiet := report.Machine{Busy: true, LagP99MS: 80, LagMaxMS: 120}, report.Machine{LagP99MS: 2, LagMaxMS: 4}
	type run struct {
		res     itemResult
		drifted bool
		m       report.Machine
	}
	for _, tc := range []struct {
		name             string
		runs             []run
		ok, inconclusive bool
		waited           bool
		runsMade         int
		summaryHas       string
	}{
		{"on the page", []run{{ok, false, quiet}}, true, false, false, 1, "as on the page"},
		{"on the page on a busy machine", []run{{ok, false, busy}}, true, false, false, 1, "as on the page"},
		{"drifted once", []run{{drift, true, quiet}, {ok, false, quiet}}, true, false, false, 2, "in a second run"},
		{"drifted twice, quiet", []run{{drift, true, quiet}, {drift, true, quiet}}, false, false, false, 2, "in two runs"},
		{"drifted twice, the second busy", []run{{drift, true, quiet}, {drift, true, busy}}, false, true, false, 2, "inconclusive: "},
		{"drifted on a busy machine, then held", []run{{drift, true, busy}, {ok, false, quiet}}, true, false, true, 2, "in a second run"},
		{"drifted busy, then drifted quiet", []run{{drift, true, busy}, {drift, true, quiet}}, false, false, true, 2, "in two runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			made, waited := 0, false
			next := func() (itemResult, bool, report.Machine) {
				r := tc.runs[made]
				made++
				return r.res, r.drifted, r.m
			}
			got := decideFigures(context.Background(), next, func() { waited = true })
			if got.OK != tc.ok || got.Inconclusive != tc.inconclusive || made != tc.runsMade || waited != tc.waited ||
				!strings.Contains(got.Summary, tc.summaryHas) {
				t.Errorf("got ok %v, inconclusive %v, %d runs, waited %v, %q; want ok %v, inconclusive %v, %d runs, waited %v, %q",
					got.OK, got.Inconclusive, made, waited, got.Summary, tc.ok, tc.inconclusive, tc.runsMade, tc.waited, tc.summaryHas)
			}
			res := verifyResult{Items: []itemResult{got}, OK: got.OK}
			if want := tc.inconclusive; res.inconclusive() != want {
				t.Errorf("verify's verdict inconclusive = %v, want %v", res.inconclusive(), want)
			}
		})
	}
	mixed := verifyResult{Items: []itemResult{{Inconclusive: true}, {}}}
	if mixed.inconclusive() {
		t.Error("a failed item beside an inconclusive one: verify must say FAILED, not inconclusive")
	}
}

// lab verify --docs reads a page's Chinese twin too: a twin's marker is
// checked like the English page's (here, one that names no figure).
func TestDocsReadsTheChineseTwin(t *testing.T) {
	root := t.TempDir()
	block := "```text\n$ go run ./lab demo 16 outage\nactive 3\n```\n\n"
	good := block + "<!-- figures: lab demo 16 outage\nactive | x ~ exact\n-->\n"
	bad := block + "<!-- figures: lab demo 16 outage\n-->\n"
	for name, text := range map[string]string{"lessons/16/README.md": good, "lessons/16/README.zh-CN.md": bad} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, it := range docsItems(root, []course.Lesson{{Number: 16}}) {
		names = append(names, it.name)
	}
	if !slices.Contains(names, "docs: lessons/16/README.zh-CN.md markers") {
		t.Errorf("items %q: the twin's bad marker is not reported", names)
	}
}

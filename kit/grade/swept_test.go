package grade

import (
	"strings"
	"testing"

	"quoteflowlab.dev/kit/report"
)

// What the sweep at the end of a check still finds (processes that hid
// behind a running run's mark until every run had ended) is said in a note
// with its count, and a PASSED check becomes FAILED; a check it finds
// nothing after is left as it was.
func TestWhatTheLastSweepFindsFailsTheCheck(t *testing.T) {
	passed := report.Report{Verdict: report.Passed, OK: true, Summary: "all good."}

	r := passed
	Swept(&r, "lab check E12", 0, 0)
	if r.Verdict != report.Passed || !r.OK || len(r.Notes) != 0 {
		t.Fatalf("nothing found, yet the report became %s, %v, %q", r.Verdict, r.OK, r.Notes)
	}

	r = passed
	Swept(&r, "lab check E12", 3, 1)
	if r.Verdict != report.Failed || r.OK {
		t.Fatalf("4 processes found after the check, yet the verdict is %s (ok %v)", r.Verdict, r.OK)
	}
	if len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "4 process(es)") || !strings.Contains(r.Notes[0], "lab killed 3, and 1 still ran") {
		t.Fatalf("notes %q; want the count of 4, 3 killed and 1 still running", r.Notes)
	}

	r = report.Report{Verdict: report.Failed, Summary: "the answer does not compile."}
	Swept(&r, "lab check E12", 2, 0)
	if r.Summary != "the answer does not compile." || len(r.Notes) != 1 {
		t.Fatalf("a FAILED check keeps its own sentence and gets the note: %q, %q", r.Summary, r.Notes)
	}
}

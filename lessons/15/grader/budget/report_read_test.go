package budget

import (
	"testing"
)

// TestRetryShareReadsWhatATeacherReads: sums written the way earlier
// correct reports wrote them (words between the numbers, a number as a
// word, an aside in parentheses) are read as sums, never as their last
// figure alone ("one wait with a cap of 50 ms = 600 ms" is not "50 = 600").
// And a call of three attempts needs two waits' caps in its worst case.
func TestRetryShareReadsWhatATeacherReads(t *testing.T) {
	p := plan{Calls: []planCall{
		{Name: "profile", BudgetMS: ptr(250.0), MaxAttempts: ptr(1.0)},
		{Name: "search", BudgetMS: ptr(600.0), MaxAttempts: ptr(2.0)},
	}}
	three := plan{Calls: []planCall{
		{Name: "stock", BudgetMS: ptr(250.0), MaxAttempts: ptr(3.0)},
	}}
	for _, tc := range []struct {
		p    plan
		text string
		ok   bool
	}{
		// The five false rejections of the last round wrote it this way.
		{p, "search retries once: 2 attempts × 275 ms + one wait with a cap of 50 ms = 600 ms", true},
		{p, "search retries once:\n2 attempts × 275 ms + one wait with a cap of 50 ms = 600 ms,\nwhich is its budget.", true},
		{p, "search: 275 ms × 2 attempts + a 50 ms wait cap = 600 ms.", true},
		{p, "search: 2 × 275 ms + 1 × 50 ms (the wait cap before attempt 2, base 50 ms) = 600 ms.", true},
		{p, "search: 2 × 275 ms + (one wait, cap 50 ms) = 600 ms.", true},
		{p, "search: 2 × 275 ms + 50 ms = 600 ms; raising it to 3 attempts would add 275 ms + a 100 ms wait cap = 375 ms.", true},
		// Still wrong, read any way.
		{p, "search retries once: 2 attempts × 275 ms + one wait with a cap of 50 ms = 650 ms", false},
		{p, "search: attempts × wait cap = 2 × 50 ms = 100 ms.", false},
		{p, "search: 2 × 275 ms = 550 ms, plus its wait.", false},
		// Three attempts: two waits, two caps.
		{three, "stock retries twice: 3 × 60 ms + 20 ms + 40 ms (the caps before attempts 2 and 3) = 240 ms.", true},
		{three, "stock: 3 attempts × 60 ms + two waits × 20 ms = 220 ms.", true},
		{three, "stock retries twice: 3 × 60 ms + 40 ms (one wait cap) = 220 ms.", false},
		// An aside's numbers are never read into a sum: this adds up to 240.
		{three, "stock: 3 × 60 ms + 20 ms + 40 ms (the caps before attempts 2 and 3, base 20 ms) = 220 ms.", false},
		{three, "stock retries twice: 3 attempts × 60 ms + one wait with a cap of 40 ms = 220 ms.", false},
	} {
		g := &grader{findings: map[string]finding{}}
		g.checkRetryShare(tc.p, tc.text)
		if f := g.findings["report_retry_share"]; f.ok != tc.ok {
			t.Errorf("%q: ok %v, want %v (%s: %s)", tc.text, f.ok, tc.ok, f.detail, f.but)
		}
	}
}

// TestProbeQuotedWithItsUnitInTheHeader: a table whose column header
// gives the unit (elapsed_ms over 500.7) quotes the time in ms.
func TestProbeQuotedWithItsUnitInTheHeader(t *testing.T) {
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{"| kind | elapsed_ms |\n|---|---|\n| refused | 0.2 |\n| connect_timeout | 500.7 |\n| read_timeout | 501.8 |\n", true},
		{"| kind | target | elapsed (ms) |\n|:---|---|---:|\n| refused | closed port | 0.2 |\n| connect timeout | blackhole | 500.7 |\n| read timeout | /call | 501.8 |\n", true},
		{"refused after 0.2 ms, connect timeout after 500.7 ms, read timeout after 501.8 ms", true},
		// No unit anywhere: a number alone is not a time in ms.
		{"| kind | elapsed |\n|---|---|\n| refused | 0.2 |\n| connect_timeout | 500.7 |\n| read_timeout | 501.8 |\n", false},
		// The unit column is another one: the count, not the time.
		{"| kind | runs | elapsed_ms |\n|---|---|---|\n| refused | 3 | n/a |\n| connect_timeout | 3 | n/a |\n| read_timeout | 3 | n/a |\n", false},
	} {
		ok := true
		for _, kind := range []string{"refused", "connect timeout", "read timeout"} {
			ok = ok && quotedWithMS(tc.text, probeRE[kind])
		}
		if ok != tc.ok {
			t.Errorf("%q: quoted %v, want %v", tc.text, ok, tc.ok)
		}
	}
}

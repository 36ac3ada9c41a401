package load

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A sweep sends each step's rate to every target at once, and counts as
// good only complete 200s within the deadline: "good" answers a complete
// quote at once; "late" the same after 60 ms (past a 40 ms deadline);
// "partial" at once with a supplier failed; "stale" with a stale price;
// "busy" refuses with 503.
func TestSweepCountsGoodAnswersPerTargetAndStep(t *testing.T) {
	complete := `{"quotes":[{"supplier":"atlas"}],"failures":[]}`
	handlers := map[string]http.HandlerFunc{
		"good": func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, complete) },
		"late": func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(60 * time.Millisecond)
			io.WriteString(w, complete)
		},
		"partial": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"quotes":[],"failures":[{"supplier":"boreal","code":"shed"}]}`)
		},
		"stale": func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `{"quotes":[{"stale":true}],"failures":[]}`)
		},
		"busy": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(503)
			io.WriteString(w, `{"detail":"capacity_exhausted"}`)
		},
	}
	names := []string{"good", "late", "partial", "stale", "busy"}
	var targets []Named
	for _, n := range names {
		srv := httptest.NewServer(handlers[n])
		defer srv.Close()
		targets = append(targets, Named{Name: n, URL: srv.URL})
	}
	sw, err := RunSweep(context.Background(), SweepConfig{Rates: []float64{20, 40}, Step: 500 * time.Millisecond, Targets: targets,
		Base: Config{Request: "quote", Deadline: 40 * time.Millisecond, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Points) != 2 || len(sw.Points[0]) != len(names) {
		t.Fatalf("points %d x %d, want 2 steps x %d targets", len(sw.Points), len(sw.Points[0]), len(names))
	}
	for i, want := range []int{10, 20} { // the rate times the step
		for j, p := range sw.Points[i] {
			if p.Target != names[j] || p.Requests != want {
				t.Errorf("step %d, %s: %s got %d requests, want %d", i, names[j], p.Target, p.Requests, want)
			}
			good := 0
			if p.Target == "good" {
				good = want
			}
			if p.Good != good || p.GoodputPerS != float64(good)/0.5 {
				t.Errorf("step %d, %s: good %d (%g/s), want %d", i, p.Target, p.Good, p.GoodputPerS, good)
			}
		}
	}
	if p := sw.Points[1][4]; p.Statuses["503"] != 20 {
		t.Errorf("busy's statuses %v, want 20 x 503", p.Statuses)
	}
	var text bytes.Buffer
	sw.Text(&text)
	rows := strings.Split(strings.TrimSpace(text.String()), "\n")
	if last := strings.Fields(rows[len(rows)-1]); !strings.Contains(rows[2], "good goodput/s") || last[0] != "40" || last[1] != "40.0" || last[len(last)-1] != "20" {
		t.Errorf("the table:\n%s", text.String())
	}
	var svg bytes.Buffer
	if err := sw.SVG(&svg); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&svg)
	lines := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != 2*len(names) {
		t.Errorf("%d curves, want %d (goodput and p99, one per target)", lines, 2*len(names))
	}
}

// Bad sweeps are refused before anything is sent.
func TestSweepRefusesBadInput(t *testing.T) {
	for _, c := range []struct{ rates, targets, says string }{
		{"10,5", "http://127.0.0.1:1", "steps must rise"},
		{"10,x", "http://127.0.0.1:1", "want requests per second"},
		{"0,10", "http://127.0.0.1:1", "want requests per second"},
		{"10,2000", "http://127.0.0.1:1", "want requests per second"},
		{"10,20", "a=http://127.0.0.1:1,a=http://127.0.0.1:2", "given twice"},
		{"10,20", "http://10.0.0.1:1", "loopback"},
		{"10,20", "", "no target"},
	} {
		_, err1 := ParseRates(c.rates)
		_, err2 := ParseTargets(c.targets)
		if err := cmpErr(err1, err2); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("rates %q, targets %q: %v, want an error that says %q", c.rates, c.targets, err, c.says)
		}
	}
	var many []string
	for i := range MaxSteps + 1 {
		many = append(many, strconv.Itoa(i+1))
	}
	if _, err := ParseRates(strings.Join(many, ",")); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("%d steps: %v, want refused", MaxSteps+1, err)
	}
	if _, err := ParseRates(strings.Join(many[:MaxSteps], ",")); err != nil {
		t.Errorf("%d steps: %v, want accepted", MaxSteps, err)
	}
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

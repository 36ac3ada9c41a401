package budget

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

// A fixture is one run a correct tool could have made and what it printed;
// check runs the model on an output (the fixture's, or a changed copy) and
// returns whether the model accepted it and which fields it compared.
type fixture struct {
	name  string
	out   any // a pointer to the tool's output type
	check func(out any) (ok bool, seen map[string]bool, buts []string)
}

func quietRun(wallMS float64) run {
	return run{wall: time.Duration(wallMS * float64(time.Millisecond)), start: time.Now().Add(-time.Second), starvedMS: 0}
}

func ptr[T any](v T) *T { return &v }

// fixtures builds, for every tool, runs a correct tool could have made.
func fixtures() map[string][]fixture {
	fx := map[string][]fixture{}
	l := &lab{base: "http://127.0.0.1:1", addr: "127.0.0.1:1", blackhole: "127.0.0.1:2", closed: "127.0.0.1:3", status: "http://127.0.0.1:4"}

	for _, name := range sortedNames(callCases) {
		c := callCases[name]
		o := &callOut{Phase: c.phase()}
		work := float64(c.delayMS + c.dripMS)
		switch o.Phase {
		case "done":
			o.Status, o.OK, o.ElapsedMS = ptr(float64(c.status())), c.status()/100 == 2, work+1
		case "read":
			o.Error, o.ElapsedMS = ptr("read limit reached"), c.readMS()+1
		default:
			o.Error, o.ElapsedMS = ptr("connect limit reached"), 1
			if c.target == "blackhole" {
				o.ElapsedMS = c.connectMS() + 1
			}
		}
		r := quietRun(o.ElapsedMS + 20)
		fx["call"] = append(fx["call"], fixture{"call " + name, o, func(out any) (bool, map[string]bool, []string) {
			var v verdict
			m := newModel(&v, name)
			modelCall(m, c, *out.(*callOut), r, provider.PartnerLog{})
			return v.ok(), m.seen, v.buts
		}})
	}

	for _, name := range sortedNames(deadlineCases) {
		c := deadlineCases[name]
		_, urls := c.args(l, "k")
		phases, _ := c.plan()
		o := &deadlineOut{BudgetMS: float64(c.budget)}
		used := 0.0
		var log []arrival
		for i, t := range c.targets {
			left := float64(c.budget) - used
			call := deadlineCall{URL: urls[i], Phase: phases[i], ReadTimeoutMS: left}
			switch phases[i] {
			case "no_budget":
				o.Skipped++
				o.Exceeded = true
				call.ReadTimeoutMS = max(left, 0)
			case "done":
				if !t.hole && t.code == 0 {
					log = append(log, arrival{at: used})
				}
				call.OK = t.code == 0 || t.code/100 == 2
				call.ElapsedMS = t.work() + 1
			case "read":
				log = append(log, arrival{at: used})
				o.Exceeded = true
				call.ElapsedMS = left
			case "connect":
				call.ElapsedMS = min(c.connectMS(), left)
				if c.connectMS() >= left {
					o.Exceeded = true
				}
			}
			used += call.ElapsedMS
			o.Calls = append(o.Calls, call)
		}
		o.TotalMS = used + 1
		r := quietRun(o.TotalMS + 20)
		fx["deadline"] = append(fx["deadline"], fixture{"deadline " + name, o, func(out any) (bool, map[string]bool, []string) {
			var v verdict
			m := newModel(&v, name)
			modelDeadline(m, c, urls, *out.(*deadlineOut), r, log)
			return v.ok(), m.seen, v.buts
		}})
	}

	retryFixture := func(name string, j retryJob, statuses []int, waits []float64, stopped string) {
		var log provider.PartnerLog
		at := 0.0
		for k, s := range statuses {
			log.Calls = append(log.Calls, provider.PartnerLogEntry{ArrivalMs: at, Status: s, End: "done", Path: "/call"})
			at += float64(j.callMS)
			if k < len(waits) {
				at += waits[k] + 1
			}
		}
		o := &retryOut{OK: stopped == "ok", Attempts: len(statuses), WaitsMS: waits, StoppedReason: stopped, ElapsedMS: at + 1}
		r := quietRun(o.ElapsedMS + 20)
		fx["retry"] = append(fx["retry"], fixture{"retry " + name, o, func(out any) (bool, map[string]bool, []string) {
			var v verdict
			x := &retried{job: j, run: r, out: *out.(*retryOut), log: log}
			m := newModel(&v, name)
			modelRetry(m, x)
			return v.ok(), m.seen, v.buts
		}})
	}
	retryFixture("recovers", retryJobs["recovers"], []int{503, 200}, []float64{60}, "ok")
	retryFixture("attempts", retryJobs["attempts"], []int{503, 503, 503}, []float64{60, 150}, "attempts")
	retryFixture("budget", retryJobs["budget"], []int{503, 503, 503}, []float64{90, 150}, "budget")

	fanoutFixture := func(name string, c *fanned, sent []float64, recv []bool) {
		o := &fanoutOut{}
		c.run = quietRun(c.budget + 20)
		start := c.run.start.Add(time.Millisecond)
		at := 0.0
		c.log, c.stamps = nil, nil
		for i, s := range sent {
			call := fanoutCall{SentBudgetMS: s}
			if s > 0 {
				c.log = append(c.log, provider.PartnerLogEntry{ArrivalMs: at, BudgetMs: ptr(int64(s)), Path: "/budget", End: "done", Status: 200})
				c.stamps = append(c.stamps, stamp{at: start.Add(time.Duration(at) * time.Millisecond), budget: int64(s)})
				call.ElapsedMS = min(s, fanoutWork) + 1
				if recv[i] {
					call.Received = ptr(s)
				}
				at += call.ElapsedMS
			}
			o.Calls = append(o.Calls, call)
		}
		c.out = *o
		fx["fanout"] = append(fx["fanout"], fixture{"fanout " + name, o, func(out any) (bool, map[string]bool, []string) {
			var v verdict
			cc := *c
			cc.out = *out.(*fanoutOut)
			m := newModel(&v, name)
			modelFanout(m, &cc)
			return v.ok(), m.seen, v.buts
		}})
	}
	fanoutFixture("fits", &fanned{budget: 1100, n: 4}, []float64{1100, 899, 698, 497}, []bool{true, true, true, true})
	fanoutFixture("out", &fanned{budget: 500, n: 4}, []float64{500, 299, 98, 0}, []bool{true, true, false, false})

	rows := &probeOut{Rows: []probeRow{
		{Kind: "refused", Target: "http://" + l.closed + "/", ElapsedMS: 0.3, Error: ptr("refused")},
		{Kind: "connect_timeout", Target: "http://" + l.blackhole + "/", ElapsedMS: 500.5, Error: ptr("connect limit")},
		{Kind: "read_timeout", Target: l.base + "/call?ms=2000", ElapsedMS: 501, Error: ptr("read limit")},
	}}
	fx["probe"] = []fixture{{"probe", rows, func(out any) (bool, map[string]bool, []string) {
		var v verdict
		r := quietRun(1100)
		m := newModel(&v, "probe")
		modelProbe(m, out.(*probeOut).Rows, l.addr, l.blackhole, r)
		return v.ok(), m.seen, v.buts
	}}}
	return fx
}

// TestOutputTypesAreTheContract: the types the model compares are the keys
// the grader requires of each tool's output, no more, no fewer.
func TestOutputTypesAreTheContract(t *testing.T) {
	want := map[string][]string{
		"call":     callKeys,
		"deadline": append(slices.Clone(deadlineKeys), prefixed("calls", deadlineCallKeys)...),
		"retry":    retryKeys,
		"fanout":   append([]string{"calls"}, prefixed("calls", fanoutCallKeys)...),
		"probe":    append([]string{"rows"}, prefixed("rows", probeKeys)...),
	}
	for _, tool := range Tools {
		got, w := fieldsOf(outputTypes[tool]), slices.Clone(want[tool])
		slices.Sort(got)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s: the model's output type has %v, the contract %v", tool, got, w)
		}
	}
}

func prefixed(p string, keys []string) []string {
	var out []string
	for _, k := range keys {
		out = append(out, p+"[]."+k)
	}
	return out
}

// TestModelComparesEveryField is the completeness test of the model: for
// every tool, (1) a correct run of each fixed kind passes the model, (2)
// the model compares every field of the tool's output in every such run,
// and (3) every field, changed to a value the contract does not allow for
// that run, makes the model reject at least one run. A field added to a
// tool's output and not compared, or a comparison that accepts anything,
// fails here.
func TestModelComparesEveryField(t *testing.T) {
	for tool, fxs := range fixtures() {
		fields := fieldsOf(outputTypes[tool])
		caught := map[string]bool{}
		for _, f := range fxs {
			ok, seen, buts := f.check(f.out)
			if !ok {
				t.Errorf("%s: the model rejects a correct run: %v", f.name, buts)
			}
			for _, field := range fields {
				if !seen[field] {
					t.Errorf("%s: the model did not compare %s", f.name, field)
				}
			}
			for _, field := range fields {
				for _, changed := range wrongValues(t, f.out, field) {
					if ok, _, _ := f.check(changed); !ok {
						caught[field] = true
					}
				}
			}
		}
		for _, field := range fields {
			if !caught[field] {
				t.Errorf("%s: no run's model rejects a wrong %s", tool, field)
			}
		}
	}
}

// wrongValues returns copies of out with field set to values no correct
// run prints: each kind of wrong (a flipped bool, a huge or negative
// number, an unknown word, null for a value and a value for null, an
// empty or padded array).
func wrongValues(t *testing.T, out any, field string) []any {
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var variants []any
	for _, wrong := range []any{true, false, 1e6, -1.0, "bogus", nil, []any{}, []any{1e6}} {
		var m map[string]any
		json.Unmarshal(raw, &m)
		outer, inner, nested := cutField(field)
		if nested {
			items, _ := m[outer].([]any)
			if len(items) == 0 {
				continue
			}
			item := items[len(items)/2].(map[string]any)
			if same(item[inner], wrong) {
				continue
			}
			item[inner] = wrong
		} else {
			if same(m[outer], wrong) {
				continue
			}
			m[outer] = wrong
		}
		b, _ := json.Marshal(m)
		changed := reflect.New(reflect.TypeOf(out).Elem()).Interface()
		if json.Unmarshal(b, changed) != nil {
			continue // a type the tool's output cannot hold there
		}
		variants = append(variants, changed)
	}
	return variants
}

func cutField(field string) (outer, inner string, nested bool) {
	for i := range len(field) {
		if field[i:] != "" && len(field) > i+3 && field[i:i+3] == "[]." {
			return field[:i], field[i+3:], true
		}
	}
	return field, "", false
}

func same(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestRetryShareArithmetic: the retries' share must write each retrying
// call's worst case as attempts × per-attempt limit + the wait caps, and
// every sum it writes must add up.
func TestRetryShareArithmetic(t *testing.T) {
	p := plan{Calls: []planCall{
		{Name: "profile", BudgetMS: ptr(250.0), MaxAttempts: ptr(1.0)},
		{Name: "quotes", BudgetMS: ptr(700.0), MaxAttempts: ptr(2.0)},
	}}
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{"quotes: 2 × 300 ms + 1 × 100 ms (the wait cap) = 700 ms.", true},
		{"quotes: 2 x 300 ms + 100 ms = 700 ms, and 3 more would add 300 ms + a 200 ms wait cap.", true},
		{"quotes: attempts × wait cap = 2 × 100 ms = 200 ms.", false},       // the wrong formula
		{"quotes: 2 × 300 ms + 100 ms = 800 ms.", false},                    // does not add up
		{"quotes: 2 × 350 ms + 100 ms = 800 ms.", false},                    // over its budget
		{"the retrying call: 2 × 300 ms + 100 ms = 700 ms.", false},         // names no call
		{"quotes: 2 × 300 ms = 600 ms, plus waits.", false},                 // no waits in the sum
		{"quotes retries: 2 × 300 ms + 100 ms = 700 ms; 1 + 1 = 3.", false}, // a wrong sum elsewhere
	} {
		g := &grader{findings: map[string]finding{}}
		g.checkRetryShare(p, tc.text)
		if f := g.findings["report_retry_share"]; f.ok != tc.ok {
			t.Errorf("%q: ok %v, want %v (%s: %s)", tc.text, f.ok, tc.ok, f.detail, f.but)
		}
	}
}

package budget

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
)

// The model: for every run of every tool, the grader computes from the
// contract what the run must print, field by field, from the run's
// parameters, its own clock (the process's wall time, when it started, how
// long its threads waited for a CPU) and the partner's log; then it compares
// every field the tool printed with it. The property checks elsewhere look
// at one aspect each (a phase, a read limit, a wait); the model looks at
// every field of every run, so a field no property is named after is still
// checked. The fixed runs put each parameter on both sides of each boundary;
// cases drawn from every class of each tool's input space (gen.go) are
// checked the same way.

// A model compares the fields of one tool run with the grader's model.
type model struct {
	v    *verdict
	run  string          // names the run in every clause
	seen map[string]bool // fields compared in this run
}

func newModel(v *verdict, run string) *model {
	return &model{v: v, run: run, seen: map[string]bool{}}
}

// need compares field: a mismatch no load can cause.
func (m *model) need(field string, ok bool, format string, args ...any) bool {
	m.seen[field] = true
	return m.v.need(ok, "%s: %s %s", m.run, field, fmt.Sprintf(format, args...))
}

// within compares field against a timing bound. The model's timing bounds
// are timing misses only, never more: the facts no load can change (a
// phase, a status, a count, a time shorter than the work it reports, the
// partner's log) are its hard comparisons; how long a run may take is
// judged hard by the property named after it, with its allowance.
func (m *model) within(field string, measured, bound float64, format string, args ...any) bool {
	m.seen[field] = true
	return m.v.within(measured, bound, math.Inf(1), "%s: %s %s", m.run, field, fmt.Sprintf(format, args...))
}

// slow records a field that differs from the model in the way a slow
// machine can make it differ (a call cut, skipped or stopped earlier than
// the model's ideal clock says): a timing miss, run again.
func (m *model) slow(field string, format string, args ...any) {
	m.seen[field] = true
	m.v.slow("%s: %s %s", m.run, field, fmt.Sprintf(format, args...))
}

// saw marks field compared where the model accepts any value the field can
// take (the contract leaves it open); the reason is for the reader.
func (m *model) saw(field, why string) {
	_ = why
	m.seen[field] = true
}

// missing returns the fields of fields the model did not compare in this run.
func (m *model) missing(fields []string) []string {
	var out []string
	for _, f := range fields {
		if !m.seen[f] {
			out = append(out, f)
		}
	}
	return out
}

// fieldsOf lists the JSON fields of a tool's output type, a nested array of
// objects as "calls[].phase" (and "calls" itself): what the model must compare.
func fieldsOf(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, name)
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
			for _, sub := range fieldsOf(f.Type.Elem()) {
				out = append(out, name+"[]."+sub)
			}
		}
	}
	return out
}

// outputTypes are the tools' output types, as the contract gives them.
var outputTypes = map[string]reflect.Type{
	"call":     reflect.TypeFor[callOut](),
	"deadline": reflect.TypeFor[deadlineOut](),
	"retry":    reflect.TypeFor[retryOut](),
	"fanout":   reflect.TypeFor[fanoutOut](),
	"probe":    reflect.TypeFor[probeOut](),
}

// probeOut is probe's output as the model sees it: its three rows.
type probeOut struct {
	Rows []probeRow `json:"rows"`
}

// modelJudge records property name from the model's verdicts on every run,
// naming the seed of the random runs, and notes a field the model did not
// compare (a grader bug the completeness test catches).
func (g *grader) modelJudge(name, tool string, v verdict, runs []string, unseen []string, seed uint64, shrunk, drawn string) {
	sort := slices.Clone(runs)
	slices.Sort(sort)
	nDrawn := 0
	for _, r := range runs {
		if strings.HasPrefix(r, "drawn") {
			nDrawn++
		}
	}
	detail := fmt.Sprintf("%d runs compared field by field with the model, %d of them drawn (seed %d: `lab check E15 --only %s --seed %d` draws them again)", len(runs), nDrawn, seed, name, seed)
	if len(unseen) > 0 {
		v.need(false, "the grader did not compare %s (a grader bug)", strings.Join(unseen, ", "))
	}
	if !v.ok() {
		detail = strings.Join(shortList(v.buts, 6), "; ")
		if shrunk != "" {
			// The smallest failing case first: it is what to look at; the
			// clauses of the case it was shrunk from say the same again.
			buts := []string{shrunk}
			for _, b := range v.buts {
				if !strings.HasPrefix(b, drawn+":") {
					buts = append(buts, b)
				}
			}
			v.buts = buts
			detail = fmt.Sprintf("seed %d; %s", seed, detail)
		}
	}
	g.judge(name, v, "%s", detail)
	_ = tool
}

// checkFields runs model for one run and returns the fields it left out.
func checkFields(tool string, m *model) []string {
	return m.missing(fieldsOf(outputTypes[tool]))
}

// newSeed returns the seed of one grading's random runs.
func newSeed() uint64 { return rand.Uint64() % 1_000_000 }

package mutation

import (
	"context"
	"fmt"
	"strings"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
)

// withGenerated appends the lesson's generated required mutants (see
// Generated) and generated wheats (GeneratedWheats) to the hand-written
// checks vs, and returns them with how many
// of them are hand-written: those come first and run first. With --only,
// a generated mutant is kept only when it is the one named. A lesson whose
// generated.txt cannot be used gets a note and is checked on its
// hand-written mutants alone.
func withGenerated(r *report.Report, o grade.Request, vs []check.Check) ([]check.Check, int) {
	hand := len(vs)
	gen, err := Generated(o.Root, o.Lesson)
	if err != nil {
		r.Notes = append(r.Notes, msg.T("mut.gen_error", err))
		return vs, hand
	}
	wheats, err := GeneratedWheats(o.Root, o.Lesson)
	if err != nil {
		r.Notes = append(r.Notes, msg.T("mut.gen_wheats_error", err))
	}
	for _, v := range append(gen, wheats...) {
		if o.Only == "" || v.Name == o.Only {
			vs = append(vs, v)
		}
	}
	return vs, hand
}

// newProp is v's property before it is run.
func newProp(v check.Check) report.Prop {
	p := report.Prop{Name: v.Name, Kind: v.Kind, Story: msg.Pick(v.Story, v.StoryZh), Required: v.Required, Status: report.NotRun}
	if g := v.Generated; g != nil {
		p.Generated = &report.GeneratedFrom{Op: g.Op, Where: g.Where, Edit: g.Edit, Property: g.Property, PropertyZh: g.PropertyZh}
	}
	return p
}

// generated runs the generated mutants (vs[hand:]) when nothing so far
// fails for certain: the answer passes on the correct checkpoint (or went
// wrong there only while the machine was busy), catches every hand-written
// mutant and passes every wheat (the same allowance). Otherwise they are
// left not run: the first things to fix are those the hand-written checks
// name, with their stories. It returns js extended by the generated
// mutants' outcomes when they ran.
func (c *checker) generated(ctx context.Context, b *builds, vs []check.Check, hand int, ref judged, js []judged, start time.Time) []judged {
	if hand == len(vs) || !b.mainRes.OK() || ctx.Err() != nil || !(ref.good || ref.look) || len(js) < hand {
		return js
	}
	for i, v := range vs[:hand] {
		j := js[i]
		if !j.ran || j.good || j.look {
			continue // not viable, caught, or in doubt (the second round decides)
		}
		if v.Kind == report.Wheat || v.Required {
			return js
		}
	}
	// Where the hand-written part's verdict would have been (--timings).
	c.step("wait", fmt.Sprintf("the hand-written checks, from the start of the check (then %d generated mutants run)", len(vs)-hand), time.Since(start))
	return append(js, c.variantsFrom(ctx, b, vs, hand)...)
}

// generatedMissed is the verdict's clause for generated mutants let through.
func generatedMissed(reqOK, req, caught, n int, missed []string) string {
	lead := "" // after "catches only …; and it "
	if reqOK == req {
		lead = msg.T("mut.gen_lead", reqOK, req)
	}
	return lead + msg.T("mut.gen_missed", n-caught, n, strings.Join(missed, ", "))
}

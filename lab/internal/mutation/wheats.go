package mutation

import (
	"context"
	"fmt"
	"io"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/lab/internal/mutagen"
)

// WheatSet generates the wheats allowed.txt allows, runs the reference
// answer runs times on each and returns the results (not yet written): it
// passed every run → wheat (every answer must pass it), else → rejected,
// its review carried over from prev for the same edit.
func WheatSet(ctx context.Context, req grade.Request, runs int, prev *mutagen.Results, log io.Writer) (*mutagen.Results, error) {
	res, ws, outs, start, err := Wheats.run(ctx, req, runs, log)
	if err != nil {
		return nil, err
	}
	l := req.Lesson
	for i, w := range ws {
		o := outs[i]
		e := mutagen.Entry{Name: w.Name, Op: w.Op, Where: w.Where(l.Checkpoint()), Edit: w.Edit(), Killed: o.killed + o.hung}
		e.Says = mostSaid(o.says)
		switch {
		case o.killed == 0 && o.hung == 0 && o.busy == 0:
			e.Status = mutagen.Wheat
		default:
			e.Status = mutagen.Rejected
			if prev != nil {
				e.Review = prev.ReviewFor(e)
			}
		}
		res.Entries = append(res.Entries, e)
	}
	fmt.Fprintf(log, "%s: %d wheats, %d rejected by the reference; %.0f s in all\n",
		l.Exercise(), res.Count(mutagen.Wheat), res.Count(mutagen.Rejected), time.Since(start).Seconds())
	return res, nil
}

// GeneratedWheats returns the lesson's generated wheats an answer must
// pass (status wheat in wheats.txt), made from the checkpoint as it is now.
// A lesson with no wheats.txt has none.
func GeneratedWheats(root string, l course.Lesson) ([]check.Check, error) {
	_, ws, err := Wheats.recorded(root, l, mutagen.Wheat)
	if err != nil {
		return nil, err
	}
	var vs []check.Check
	for _, w := range ws {
		v := w.Check
		v.Exercise, v.Required, v.Kind = l.Exercise(), true, report.Wheat
		v.Generated = &check.Generated{Op: w.Op, Where: w.Where(l.Checkpoint()), Edit: w.Edit()}
		v.Story = msg.In(msg.English, "gen.wheat_story", w.Op, v.Generated.Where, w.Edit(), Wheats.From(l))
		v.StoryZh = msg.In(msg.Chinese, "gen.wheat_story", w.Op, v.Generated.Where, w.Edit(), Wheats.From(l))
		v.Def = Wheats.File(l)
		vs = append(vs, v)
	}
	return vs, nil
}

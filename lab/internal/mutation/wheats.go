package mutation

import (
	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/lab/internal/mutagen"
)

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
		v.Exercise, v.Required, v.Kind, v.Def = l.Exercise(), true, report.Wheat, Wheats.File(l)
		v.Generated = &check.Generated{Op: w.Op, Where: w.Where(l.Checkpoint()), Edit: w.Edit()}
		v.Story = msg.In(msg.English, "gen.wheat_story", w.Op, v.Generated.Where, w.Edit(), Wheats.From(l))
		v.StoryZh = msg.In(msg.Chinese, "gen.wheat_story", w.Op, v.Generated.Where, w.Edit(), Wheats.From(l))
		vs = append(vs, v)
	}
	return vs, nil
}

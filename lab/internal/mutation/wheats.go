package mutation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/lab/internal/mutagen"
)

// A lesson's generated wheats (package mutagen) live beside its checks:
// allowed.txt says which changes its contract allows and where, wheats.txt
// holds the last wheat run (the reference answer passes on each every
// time: every answer must).

// AllowedFile is the lesson's declaration of what its contract allows.
func AllowedFile(l course.Lesson) string { return l.Checks() + "/allowed.txt" }

// WheatsFile is the lesson's committed wheat run.
func WheatsFile(l course.Lesson) string { return l.Checks() + "/wheats.txt" }

// WheatsCommand is the command that remakes a lesson's wheats.txt.
func WheatsCommand(l course.Lesson) string { return "go run ./lab verify --wheats " + l.Exercise() }

// HasAllowed reports whether the lesson declares generated wheats.
func HasAllowed(root string, l course.Lesson) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(AllowedFile(l))))
	return err == nil
}

// WheatsCovers is the hash of what a wheat run of l covers as the tree is
// now: the generator's version, allowed.txt, the files it names and the
// reference answer.
func WheatsCovers(root string, l course.Lesson) (string, error) {
	a, err := mutagen.ReadAllowed(root, AllowedFile(l))
	if err != nil {
		return "", err
	}
	return mutagen.Hash(root, AllowedFile(l), a.Scope(), l.Reference())
}

// ReadWheats reads the lesson's wheats.txt; (nil, nil) when it has none.
func ReadWheats(root string, l course.Lesson) (*mutagen.Results, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(WheatsFile(l))))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := mutagen.ParseResults(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", WheatsFile(l), err)
	}
	r.Exercise, r.Wheats = l.Exercise(), true
	return r, nil
}

// WheatSet generates the wheats allowed.txt allows, runs the reference
// answer runs times on each and returns the results (not yet written): it
// passed every run → wheat (every answer must pass it), else → rejected,
// its review carried over from prev for the same edit.
func WheatSet(ctx context.Context, req grade.Request, runs int, prev *mutagen.Results, log io.Writer) (*mutagen.Results, error) {
	if req.Answer == "" {
		req.Answer = req.Lesson.Reference()
	}
	req.Repeat = 1
	o := req.WithDefaults()
	l := o.Lesson
	start := time.Now()
	a, err := mutagen.ReadAllowed(o.Root, AllowedFile(l))
	if err != nil {
		return nil, err
	}
	all, err := mutagen.WheatsFromAllowed(o.Root, a)
	if err != nil {
		return nil, err
	}
	ws, dropped, err := mutagen.Compiles(o.Root, all)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "%s: %d wheats generated, %d do not compile (dropped), %d to run %d times each (%.1f s)\n",
		l.Exercise(), len(all), len(dropped), len(ws), runs, time.Since(start).Seconds())
	covers, err := WheatsCovers(o.Root, l)
	if err != nil {
		return nil, err
	}
	outs, err := runSet(ctx, o, ws, runs, log)
	if err != nil {
		return nil, err
	}
	res := &mutagen.Results{Exercise: l.Exercise(), Wheats: true, Command: WheatsCommand(l), Covers: covers, Generator: mutagen.Version, Runs: runs, Dropped: len(dropped)}
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
// A lesson with no wheats.txt has none; a recorded name the generator no
// longer makes is an error (wheats.txt is stale).
func GeneratedWheats(root string, l course.Lesson) ([]check.Check, error) {
	res, err := ReadWheats(root, l)
	if err != nil || res == nil {
		return nil, err
	}
	ws, err := generatedWheats(root, l)
	if err != nil {
		return nil, err
	}
	byName := map[string]mutagen.Mutant{}
	for _, w := range ws {
		byName[w.Name] = w
	}
	var vs []check.Check
	for _, e := range res.Entries {
		if e.Status != mutagen.Wheat {
			continue
		}
		w, ok := byName[e.Name]
		if !ok || w.Edit() != e.Edit {
			return nil, fmt.Errorf("%s: %s is no longer generated as recorded (the checkpoint changed since the wheat run): run `%s`", WheatsFile(l), e.Name, WheatsCommand(l))
		}
		v := w.Check
		v.Exercise, v.Required, v.Kind = l.Exercise(), true, report.Wheat
		v.Generated = &check.Generated{Op: w.Op, Where: w.Where(l.Checkpoint()), Edit: w.Edit()}
		v.Story = msg.In(msg.English, "gen.wheat_story", w.Op, v.Generated.Where, w.Edit(), AllowedFile(l))
		v.StoryZh = msg.In(msg.Chinese, "gen.wheat_story", w.Op, v.Generated.Where, w.Edit(), AllowedFile(l))
		v.Def = WheatsFile(l)
		vs = append(vs, v)
	}
	return vs, nil
}

func generatedWheats(root string, l course.Lesson) ([]mutagen.Mutant, error) {
	if !HasAllowed(root, l) {
		return nil, nil
	}
	a, err := mutagen.ReadAllowed(root, AllowedFile(l))
	if err != nil {
		return nil, err
	}
	return mutagen.WheatsFromAllowed(root, a)
}

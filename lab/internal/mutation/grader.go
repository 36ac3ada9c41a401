package mutation

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
)

// Grader grades an exercise whose answer is a test: the grade.Grader of
// method "mutants"; Accept gives it the request.
type Grader struct {
	req grade.Request
}

// Accept checks what only this method knows: --variant is the measured
// grader's, and the answer is a folder with a main package in it.
func (g *Grader) Accept(req grade.Request) error {
	l := req.Lesson
	if req.Variant != "" {
		return fmt.Errorf(msg.T("mut.variant_flag"), l.Exercise())
	}
	if req.Seed != 0 || req.Case != "" {
		return fmt.Errorf(msg.T("mut.seed_flag"), l.Exercise())
	}
	if err := hasGoFiles(req); err != nil {
		return err
	}
	if req.Only != "" {
		vs, err := check.Of(req.Root, l, check.Builds, "")
		if err != nil {
			return err
		}
		gen, _ := Generated(req.Root, l) // unreadable: lab check says why
		wheats, _ := GeneratedWheats(req.Root, l)
		if !slices.Contains(check.Names(slices.Concat(vs, gen, wheats)), req.Only) {
			return fmt.Errorf(msg.T("mut.only_unknown"), req.Only, l.Exercise(), strings.Join(check.Names(vs), ", "))
		}
	}
	g.req = req
	return nil
}

// Check runs the answer on the checkpoint, its mutants and wheats.
func (g *Grader) Check(ctx context.Context) report.Report { return Check(ctx, g.req) }

// Watches: the answer is Go code; nothing else in its folder is graded.
func (g *Grader) Watches(rel string) bool { return strings.HasSuffix(rel, ".go") }

// Watching names the files Watches accepts.
func (g *Grader) Watching() string { return msg.T("watch.go_files") }

// Proves says what the exercise's scripts (its reference answer and its
// starter, checked) prove, for lab verify.
func (g *Grader) Proves() string {
	return "reference answer catches every mutant and passes every wheat; starter not started"
}

// Doing says what a check does, for a person waiting on a slow one.
func (g *Grader) Doing() string { return msg.T("mut.doing") }

// hasGoFiles reports an answer directory with no Go file in it: a mutant-
// checked answer is one main package, like the starter.
func hasGoFiles(req grade.Request) error {
	if req.Answer == "" {
		return nil // the starter
	}
	matches, err := filepath.Glob(filepath.Join(req.AnswerDir(), "*.go"))
	if err != nil || len(matches) > 0 {
		return err
	}
	return fmt.Errorf(msg.T("mut.no_go_files_like"), req.Answer, req.Lesson.Starter())
}

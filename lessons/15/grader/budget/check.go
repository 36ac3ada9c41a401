package budget

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
)

// Grader grades an exercise whose answer is a set of tools (E15): the
// grade.Own that lessons/15/grader runs.
type Grader struct {
	req     grade.Request
	variant check.Check // with --variant: the broken variant, loaded by Accept
}

// New returns a grader for one request; Accept gives it the request.
func New() *Grader { return &Grader{} }

// Accept checks what only this method knows: --repeat and --separate are
// the mutation grader's; --variant names a broken variant of the reference
// tools (loaded here, once) and grades the reference answer; an answer
// outside the repository is a module of its own.
func (g *Grader) Accept(req grade.Request) error {
	l := req.Lesson
	if req.Repeat > 1 || req.Separate {
		return fmt.Errorf("--repeat and --separate are for exercises checked with mutants; %s's grader re-runs a timed property itself", l.Exercise())
	}
	if req.Case != "" {
		rc, err := ParseCase(req.Case)
		if err != nil {
			return err
		}
		if req.Only != "" && req.Only != rc.tool+"_model" {
			return fmt.Errorf("--case runs one %s case and reports %s_model alone: drop --only %s", rc.tool, rc.tool, req.Only)
		}
	}
	if req.Only != "" && !IsProperty(req.Only) {
		return fmt.Errorf("--only %s: %s has no property of that name (its properties: %s)", req.Only, l.Exercise(), strings.Join(PropertyNames(), ", "))
	}
	if req.Variant != "" {
		v, err := check.Find(req.Root, l, check.Tools, req.Variant)
		if err != nil {
			return err
		}
		if req.Answer != l.Reference() {
			return fmt.Errorf("--variant %s edits %s, a file of the reference answer: add --answer %s", v.Name, v.File, l.Reference())
		}
		g.variant = v
	}
	if filepath.IsAbs(req.Answer) {
		if _, err := os.Stat(filepath.Join(req.Answer, "go.mod")); err != nil {
			return fmt.Errorf("%s is outside the repository and is not a module of its own: copy the folder into the repository (for example to lessons/15/mine), or give it a go.mod", req.Answer)
		}
	}
	g.req = req
	return nil
}

// Check builds the tools and grades them against a provider lab of its own.
func (g *Grader) Check(ctx context.Context) report.Report { return checkOne(ctx, g.req, g.variant) }

// Describe: lab watch re-checks on a change to the tools' Go code, the plan
// or the report.
func (g *Grader) Describe() grade.Description {
	return grade.Description{
		Watch:    []string{"*.go", PlanFile, ReportFile},
		Watching: msg.T("watch.go_files") + ", " + PlanFile + ", " + ReportFile,
		Doing:    msg.T("meas.doing"),
	}
}

// check grades the answer of `lab check E15 [--answer DIR]`. With a
// broken variant (instructors, --variant), that variant of the reference
// tools is swapped in through an overlay first; the answer's files stay as
// they are.
func checkOne(ctx context.Context, o grade.Request, v check.Check) report.Report {
	return checkWithin(ctx, o, v, 0)
}

// checkWithin is check with every tool run bounded by runBound where a
// scenario sets no tighter bound (0: runTimeout), for tests of a variant
// that never ends.
func checkWithin(ctx context.Context, o grade.Request, v check.Check, runBound time.Duration) report.Report {
	if o.Answer == "" {
		o.Answer = o.Lesson.Starter()
	}
	r := report.Report{
		SchemaVersion: report.SchemaVersion,
		Exercise:      o.Lesson.Exercise(),
		Title:         o.Lesson.DisplayTitle(o.Root),
		Method:        report.Measured,
		Answer:        o.Answer,
		Variant:       v.Name,
		Properties:    []report.Prop{},
	}
	opts := Options{Root: o.Root, Dir: filepath.FromSlash(o.Answer), Only: o.Only, RunTimeout: runBound, Seed: o.Seed, Case: o.Case}
	cacheName := toolsCacheName(o.Answer)
	if v.Name != "" {
		cacheName += "@" + v.Name // a variant's binaries never overwrite the answer's own
	}
	if o.CacheDir == "" {
		o.CacheDir = grade.CacheDir(o.Root)
	}
	// The tools are built into the cache, as lab check's other exercises'
	// answers are: a re-check finds the tools whose source did not change
	// up to date (go build decides, from each binary's build ID), and
	// links only the ones edited.
	opts.BinDir = filepath.Join(o.CacheDir, o.Lesson.Exercise(), cacheName)
	if v.Name == "" {
		if err := os.MkdirAll(opts.BinDir, 0o755); err == nil {
			grade.Touch(opts.BinDir)
			grade.Prune(filepath.Dir(opts.BinDir), grade.KeepBuilds)
		}
	}
	if v.Name != "" {
		var err error
		opts.Overlay, err = check.WriteOverlay(o.Root, filepath.Join(opts.BinDir, "variant"), v)
		if err != nil {
			r.Verdict, r.Summary = report.Failed, "--variant "+v.Name+": "+err.Error()
			return r
		}
	}
	s, err := grade.Open(o, grade.Keep{})
	if err != nil {
		r.Verdict, r.Summary = report.Failed, "cannot read the course before running the tools: "+err.Error()
		return r
	}
	defer s.Close()
	opts.Machine, opts.Left = s.Monitor, &s.Left
	res := Grade(ctx, opts)
	r.Properties, r.ElapsedMS, r.Notes = res.Props, res.Elapsed.Milliseconds(), res.Notes
	r.Machine = &res.Machine
	r.Timings = &report.Timings{}
	what := "build the five tools and run every scenario at once, then re-run what missed a timing bound (the grader's steps overlap)"
	switch {
	case o.Only != "" && toolOf(o.Only) == "":
		what = "read the plan and the report for " + o.Only
	case o.Only != "":
		what = "build " + toolOf(o.Only) + " and run its scenarios for " + o.Only + ", then re-run what missed a timing bound"
	}
	r.Timings.Add("run", what, res.Elapsed.Milliseconds())
	decide(&r, res, o, v)
	if o.Only != "" {
		r.Notes = append(r.Notes, msg.T("meas.only", o.Only))
	}
	if res.Left != nil && res.Left.Processes > 0 {
		r.Verdict, r.OK = report.Failed, false
		r.Summary = res.Left.Summary("a tool")
		r.Next = "wait for every process a tool starts, and stop it before the tool exits, then run `" + o.Again() + "` again"
	}
	s.Restore()
	s.Tampered(&r, "a tool", "a tool reads the course, never writes into it, then run `"+o.Again()+"` again")
	return r
}

// decide sets the verdict, its sentence and the next step.
func decide(r *report.Report, res Result, o grade.Request, v check.Check) {
	again := o.Again()
	switch {
	case res.NotStarted:
		r.Verdict = report.NotStarted
		r.Next = msg.T("meas.next_todo", msg.Twin(o.Lesson.Page()), o.Answer, o.Lesson.Exercise(), again)
	case res.Passed:
		r.Verdict = report.Passed
	case res.Inconclusive:
		r.Verdict = report.Inconclusive
		r.Next = msg.T("meas.next_quiet", again)
	default:
		r.Verdict = report.Failed
		r.Next = msg.T("meas.next_fix", again)
	}
	r.OK = r.Verdict == report.Passed
	r.Summary = summary(res)
	if v.Name == "" {
		return
	}
	failed := slices.Contains(res.Failed(), v.Expect)
	switch {
	case res.Passed:
		r.Next = msg.T("meas.variant_passed", v.Name, v.Expect, msg.Pick(v.Story, v.StoryZh))
	case failed:
		r.Next = msg.T("meas.variant_rejected", v.Name, v.Expect, msg.Pick(v.Story, v.StoryZh))
	default:
		r.Next = msg.T("meas.variant_other", v.Name, v.Expect, msg.Pick(v.Story, v.StoryZh))
	}
}

// summary is the verdict as one sentence, without the exercise name.
func summary(res Result) string {
	required, failed := 0, []string{}
	for _, p := range res.Props {
		if p.Required {
			required++
			if !p.OK && p.Status != report.Busy {
				failed = append(failed, p.Name)
			}
		}
	}
	switch {
	case res.NotStarted:
		return msg.T("meas.sum_todo")
	case res.Passed:
		return msg.T("meas.sum_passed", required, res.Elapsed.Seconds())
	case res.Inconclusive:
		var busy []string
		for _, p := range res.Props {
			if p.Status == report.Busy {
				busy = append(busy, p.Name)
			}
		}
		return msg.T("meas.sum_busy", strings.Join(busy, ", "), required-len(busy), res.Elapsed.Seconds())
	}
	const shown = 6 // a longer list drowns the verdict; the report above lists them all
	names := strings.Join(failed, ", ")
	if len(failed) > shown {
		names = msg.T("meas.sum_more", strings.Join(failed[:shown], ", "), len(failed)-shown)
	}
	return msg.T("meas.sum_failed", len(failed), required, names, res.Elapsed.Seconds())
}

// IsRequiredProperty reports whether name is a required property of the
// grader: what a broken variant's expect: must name.
func IsRequiredProperty(name string) bool {
	return slices.ContainsFunc(specs, func(s spec) bool { return s.name == name && s.required })
}

// toolsCacheName names the directory the answer's tools are built into.
// An answer in the course is named by its path. One outside it (a module of
// its own) is named by what go build reads of it, each .go file's, go.mod's
// and go.sum's path and content, not by where it lives: the same tools in
// another folder (a copy, the starter's test copying it to a new temporary
// folder each run) are then found up to date there instead of linked again.
// Whether a binary is up to date go decides from its build ID, never from
// this name. A module too large to hash quickly keeps the path's name.
func toolsCacheName(answer string) string {
	byPath := strings.NewReplacer("/", "_", ".", "_", string(filepath.Separator), "_", ":", "_").Replace(answer)
	if !filepath.IsAbs(answer) {
		return byPath
	}
	if sum, err := moduleSum(answer); err == nil {
		return "external_" + sum
	}
	return byPath
}

// Bounds of what moduleSum reads.
const (
	sumMaxFiles = 2000
	sumMaxBytes = 32 << 20
)

var errTooLarge = errors.New("too large to hash")

// moduleSum hashes the names and contents of the files go build reads of
// the module in dir: .go files, go.mod and go.sum, in the folders go
// considers part of it (not testdata, not those starting with . or _).
func moduleSum(dir string) (string, error) {
	h := sha256.New()
	files, size := 0, 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != dir && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(name, ".go") && name != "go.mod" && name != "go.sum" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files, size = files+1, size+len(data)
		if files > sumMaxFiles || size > sumMaxBytes {
			return errTooLarge
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}

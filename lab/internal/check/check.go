// Package check runs an exercise answer against its checkpoint and against
// each of the checkpoint's mutants, and reports what it caught.
//
// The answer is built once per variant with `go build -overlay`: the
// reference build sees the checkpoint as it is, each mutant build sees one
// checkpoint file replaced by its broken copy. Nothing in the student's tree
// is copied or modified; binaries and overlay files live in a cache
// directory (by default .lab/cache). Binaries keep a stable path per
// exercise, answer and variant, so when nothing changed `go build` finds the
// binary up to date and skips the link, which is most of the cost.
package check

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/mutant"
)

// DefaultTimeout bounds one run of an answer. An answer is expected to
// finish in well under 5 s; one that does not is killed and reported.
const DefaultTimeout = 20 * time.Second

// buildTimeout bounds one `go build`; a cold build on a slow laptop compiles
// the standard library's net/http and can take a while.
const buildTimeout = 10 * time.Minute

// Options says what to check.
type Options struct {
	Root     string        // repository root
	Lesson   course.Lesson // the exercise's lesson
	Answer   string        // answer package, slash path relative to Root; default the lesson's starter
	Timeout  time.Duration // per run of the answer; default DefaultTimeout
	CacheDir string        // binaries and overlays; default <state dir>/cache
	Jobs     int           // builds at once; default the number of CPUs, at least 2
	// Variant (E15 only, instructors) names a broken variant of the reference
	// answer (testscripts/mutants/E15/<name>/) to swap into the answer, via
	// the grader's overlay, before grading it; the answer's files stay as
	// they are. The caller checks the name (lab check's --variant).
	Variant string
}

// A Grader checks an exercise that is not checked with mutants (E15: the
// budget tools are run and measured). It reports through the same Report,
// one Property per graded property.
type Grader func(ctx context.Context, opts Options) Report

var (
	gradersMu sync.Mutex
	graders   = map[string]Grader{}
)

// Register makes g the checker of exercise (e.g. "E15"), in place of mutants.
func Register(exercise string, g Grader) {
	gradersMu.Lock()
	defer gradersMu.Unlock()
	graders[exercise] = g
}

func graderFor(exercise string) Grader {
	gradersMu.Lock()
	defer gradersMu.Unlock()
	return graders[exercise]
}

// HasGrader reports whether exercise is checked by a registered grader.
func HasGrader(exercise string) bool { return graderFor(exercise) != nil }

// Check checks one answer and returns its report; every problem, including
// an answer that does not compile, is described in the report.
func Check(ctx context.Context, opts Options) Report {
	o := opts.withDefaults()
	if g := graderFor(o.Lesson.Exercise()); g != nil {
		return g(ctx, o)
	}
	return checkMutants(ctx, o)
}

func (o Options) withDefaults() Options {
	if o.Answer == "" {
		o.Answer = o.Lesson.Starter()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CacheDir == "" {
		o.CacheDir = filepath.Join(course.StateDir(o.Root), "cache")
	}
	if o.Jobs <= 0 {
		o.Jobs = max(runtime.NumCPU(), 2)
	}
	return o
}

// ErrAnswerOutside is returned by ResolveAnswer for a directory that is not a
// package of the course's root module.
var ErrAnswerOutside = errors.New("an answer must be a directory inside the course's root module")

// ResolveAnswer turns dir (relative to cwd, or absolute) into the slash path
// of an answer package relative to root. The directory must exist and belong
// to the root module (not to a checkpoint's nested module), because the
// answer is built as a package of that module.
func ResolveAnswer(root, cwd, dir string) (string, error) {
	abs := dir
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, dir)
	}
	abs = filepath.Clean(abs)
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%w: %s is outside %s", ErrAnswerOutside, dir, root)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("answer %s: no such directory (%s)", dir, abs)
	}
	if err != nil {
		return "", fmt.Errorf("answer %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("answer %s: not a directory (give the package directory)", dir)
	}
	for d := abs; d != root && d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return "", fmt.Errorf("%w: %s belongs to the module in %s", ErrAnswerOutside, dir, d)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	if rel == "." {
		return "", fmt.Errorf("%w: %s is the repository root, not an answer package", ErrAnswerOutside, dir)
	}
	return filepath.ToSlash(rel), nil
}

// build is a `go build` started in the background.
type build struct {
	done chan struct{}
	bin  string
	res  execResult
}

// startBuild builds the answer into bin with overlay once a slot in sem is free.
func (o Options) startBuild(ctx context.Context, sem chan struct{}, overlay, bin string) *build {
	b := &build{done: make(chan struct{}), bin: bin}
	go func() {
		defer close(b.done)
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-ctx.Done():
			b.res = execResult{ExitCode: -1, Err: ctx.Err()}
			return
		}
		b.res = goBuild(ctx, o.Root, overlay, bin, "./"+o.Answer)
	}()
	return b
}

func failedBuild(err error) *build {
	b := &build{done: make(chan struct{}), res: execResult{ExitCode: -1, Err: err}}
	close(b.done)
	return b
}

func (b *build) wait() execResult {
	<-b.done
	return b.res
}

// goBuild runs `go build` of pkg into bin at root. The module is built on
// its own (GOWORK=off): the root module reaches the checkpoints with replace
// directives, and a go.work a student keeps above the clone must not change
// what is checked.
func goBuild(ctx context.Context, root, overlay, bin, pkg string) execResult {
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return execResult{ExitCode: -1, Err: err}
	}
	args := []string{"build", "-ldflags=-s -w", "-o", bin}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	args = append(args, pkg)
	res := execute(ctx, buildTimeout, root, environ("GOWORK=off"), "go", args...)
	if errors.Is(res.Err, exec.ErrNotFound) {
		res.Err = fmt.Errorf("the go command is not on your PATH: %w", res.Err)
	}
	return res
}

// exe adds the platform's executable suffix.
func exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// answerKey names an answer's cache directory: its path, readable.
func answerKey(answer string) string {
	return strings.NewReplacer("/", "_", ".", "_").Replace(answer)
}

func checkMutants(ctx context.Context, o Options) (r Report) {
	start := time.Now()
	ex := o.Lesson.Exercise()
	r = Report{
		Exercise:   ex,
		Title:      o.Lesson.DisplayTitle(o.Root),
		Answer:     o.Answer,
		Checkpoint: o.Lesson.Checkpoint(),
		Properties: []Property{},
	}
	defer func() { r.ElapsedMS = time.Since(start).Milliseconds() }()

	muts, err := mutant.Load(o.Root, ex)
	if err != nil {
		r.Verdict, r.Summary = Failed, "cannot read the mutant definitions: "+err.Error()
		return r
	}
	for _, m := range muts {
		r.Properties = append(r.Properties, Property{Name: m.Name, Story: m.Story, Required: m.Required, Status: StatusNotRun})
	}

	// One step at a time, so that what runs has the machine to itself:
	// answers observe timing (a request that "queues", a slot free during a
	// backoff), and a machine busy compiling could fail a correct one. The
	// reference goes first: when it does not pass, nothing else is built.
	binDir := filepath.Join(o.CacheDir, ex, answerKey(o.Answer))
	r.Reference = o.runReference(ctx, filepath.Join(binDir, exe("reference")))
	if r.Reference.Status == StatusPassed {
		builds := o.buildMutants(ctx, muts, binDir)
		o.runMutants(ctx, builds, r.Properties)
	}
	r.decide(o)
	if ctx.Err() != nil {
		r.Verdict, r.OK, r.Summary, r.Next = Failed, false, "interrupted before the check finished.", ""
	}
	return r
}

// runReference builds the answer against the real checkpoint into bin and runs it.
func (o Options) runReference(ctx context.Context, bin string) *Run {
	res := goBuild(ctx, o.Root, "", bin, "./"+o.Answer)
	if !res.ok() {
		return &Run{Status: StatusBuildFailed, ExitCode: res.ExitCode, Output: buildOutput(res), ElapsedMS: res.Elapsed.Milliseconds()}
	}
	res = execute(ctx, o.Timeout, o.Root, environ(), bin)
	run := &Run{Status: StatusFailed, ExitCode: res.ExitCode, Output: res.Output, ElapsedMS: res.Elapsed.Milliseconds()}
	switch {
	case res.TimedOut:
		run.Status = StatusTimedOut
	case res.Err != nil:
		run.Output += "\n" + res.Err.Error()
	case res.ExitCode == 0:
		run.Status = StatusPassed
	}
	return run
}

// buildMutants builds the answer against each mutant, o.Jobs at a time, and
// waits for every build. The reference build has already filled the build
// cache with everything the mutants share, so each build compiles only the
// mutated package and the answer, and links.
func (o Options) buildMutants(ctx context.Context, muts []mutant.Mutant, binDir string) []*build {
	sem := make(chan struct{}, o.Jobs)
	builds := make([]*build, len(muts))
	for i, m := range muts {
		ov, err := m.WriteOverlay(o.Root, filepath.Join(o.CacheDir, m.Exercise, "mutants", m.Name))
		if err != nil {
			builds[i] = failedBuild(err)
			continue
		}
		builds[i] = o.startBuild(ctx, sem, ov, filepath.Join(binDir, exe(m.Name)))
	}
	for _, b := range builds {
		b.wait()
	}
	return builds
}

// runMutants runs the answer against each mutant in turn and fills in props
// (same order as builds).
func (o Options) runMutants(ctx context.Context, builds []*build, props []Property) {
	for i, b := range builds {
		if ctx.Err() != nil {
			return
		}
		res := b.wait()
		if !res.ok() {
			props[i].Status = StatusBuildFailed
			props[i].Detail = "this mutant does not build with this answer (a course bug if the answer builds on the checkpoint):\n" + buildOutput(res)
			continue
		}
		props[i] = judge(props[i], execute(ctx, o.Timeout, o.Root, environ(), b.bin), o.Timeout)
	}
}

// judge sets a mutant's outcome from the answer's run on it: a non-zero exit
// is a catch; exit 0 lets the bug through; a hang is not a catch either.
func judge(p Property, res execResult, timeout time.Duration) Property {
	switch {
	case res.TimedOut:
		p.Status = StatusTimedOut
		p.Detail = fmt.Sprintf("killed after %s (hung?): an answer must bound every wait, for example with a context timeout", timeout)
	case res.Err != nil:
		p.Status, p.Detail = StatusNotRun, res.Err.Error()
	case res.ExitCode == 0:
		p.Status = StatusMissed
		p.Detail = shorten("the answer exited 0 on this mutant: "+lastLine(res.Output), 240)
	default:
		p.Status, p.OK = StatusCaught, true
		p.Detail = shorten(lastLine(res.Output), 240)
	}
	return p
}

// buildOutput is what to show of a failed build: the compiler's output, or
// why go could not run.
func buildOutput(res execResult) string {
	out := strings.TrimRight(res.Output, "\n")
	if res.Err != nil {
		out = strings.TrimSpace(out + "\n" + res.Err.Error())
	}
	if res.TimedOut {
		out = strings.TrimSpace(out + "\ngo build did not finish in time")
	}
	return out
}

// decide sets the verdict, its sentence and the next step.
func (r *Report) decide(o Options) {
	again := "lab check " + r.Exercise
	if o.Answer != o.Lesson.Starter() {
		again += " --answer " + o.Answer
	}
	cp := fmt.Sprintf("checkpoint %d", o.Lesson.Number)
	ref := r.Reference
	switch {
	case ref.Status == StatusBuildFailed:
		r.Verdict, r.Summary = Failed, "the answer does not compile."
		r.Next = "fix the errors above, then run `" + again + "` again"
	case ref.Status == StatusTimedOut:
		r.Verdict = Failed
		r.Summary = fmt.Sprintf("the answer did not finish within %s on %s and was killed (hung?).", o.Timeout, cp)
		r.Next = "bound every wait in the answer (a context timeout, a select with a timer), then run `" + again + "` again"
	case ref.Status != StatusPassed && strings.Contains(ref.Output, "TODO"):
		r.Verdict = NotStarted
		r.Summary = o.Answer + " still prints its TODO."
		r.Next = fmt.Sprintf("read %s/README.md, write the exercise in %s (`lab hint %s` if you are stuck), then run `%s` again", o.Lesson.Dir(), o.Answer, r.Exercise, again)
	case ref.Status != StatusPassed:
		r.Verdict = Failed
		r.Summary = fmt.Sprintf("the answer fails on the correct %s; it must pass there before the mutants mean anything.", cp)
		r.Next = fmt.Sprintf("run `go run ./%s` to see it fail, fix it, then run `%s` again", o.Answer, again)
	default:
		r.decideMutants(cp, again)
	}
	r.OK = r.Verdict == Passed
}

func (r *Report) decideMutants(cp, again string) {
	reqOK, req, bonusOK, bonus := r.Counts()
	var missed []string
	for _, p := range r.Properties {
		if p.Required && !p.OK {
			missed = append(missed, p.Name)
		}
	}
	bonusNote := ""
	if bonus > 0 {
		bonusNote = fmt.Sprintf(" (bonus: %d/%d)", bonusOK, bonus)
	}
	if len(missed) == 0 {
		r.Verdict = Passed
		r.Summary = fmt.Sprintf("the answer passes on %s and catches %d/%d required mutants%s.", cp, reqOK, req, bonusNote)
		if req == 0 {
			r.Summary = fmt.Sprintf("the answer passes on %s (no mutants are defined for %s).", cp, r.Exercise)
		}
		return
	}
	r.Verdict = Failed
	r.Summary = fmt.Sprintf("the answer passes on %s but catches only %d/%d required mutants%s; it lets through: %s.", cp, reqOK, req, bonusNote, strings.Join(missed, ", "))
	r.Next = fmt.Sprintf("make the answer fail on each bug above (`lab hint %s`), then run `%s` again", r.Exercise, again)
}

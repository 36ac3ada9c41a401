package grade

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
)

// An Own grader is a lesson's own (lessons/NN/grader): Main runs it as a
// program, and lab check runs that program through Program. The protocol
// between them is package report's.
type Own interface {
	// Accept takes the request, as Grader's Accept.
	Accept(req Request) error
	// Check grades the accepted request, as Grader's Check.
	Check(ctx context.Context) report.Report
	// Describe says what lab watch watches and what a check does.
	Describe() Description
}

// Description is what a lesson's grader says of itself once it accepted a
// request (--accept).
type Description struct {
	// Watch are the files of the answer's folder whose change re-runs the
	// check in lab watch: "*.go" is every .go file, any other entry one
	// slash path inside the folder.
	Watch    []string `json:"watch"`
	Watching string   `json:"watching"` // Watch, for a person
	Doing    string   `json:"doing"`    // what a check does, for a person waiting on a slow one
}

// Watches reports whether rel (a slash path inside the answer's folder) is
// one of d's Watch.
func (d Description) Watches(rel string) bool {
	for _, w := range d.Watch {
		if suffix, ok := strings.CutPrefix(w, "*"); ok && strings.HasSuffix(rel, suffix) || w == rel {
			return true
		}
	}
	return false
}

// ProgramTimeout bounds one run of a lesson's grader: a whole grading,
// its builds of the answer included.
const ProgramTimeout = 10 * time.Minute

// Main is a lesson grader's main function: it reads the request from args
// (the flags of package report's protocol), has g accept it, and then
// prints g's Description (--accept) or checks and writes the report as
// JSON. It returns the exit code: 0 with a report or a description, 2 for
// a request g does not accept (one line on stderr).
func Main(args []string, g Own, stdout, stderr io.Writer) int {
	runner.EndWithParent()
	runner.BecomeSubreaper() // what a run leaves is counted (Linux)
	return serve(args, g, stdout, stderr)
}

func serve(args []string, g Own, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("grader", flag.ContinueOnError)
	fs.SetOutput(stderr)
	root := fs.String("root", "", "the repository root")
	exercise := fs.String("exercise", "", "the exercise, like E15")
	answer := fs.String("answer", "", "the answer: a slash path from the root, or an absolute folder (default the starter)")
	cache := fs.String("cache", "", "lab check's cache folder (default the state folder's)")
	lang := fs.String("lang", string(msg.English), "the language of the report's sentences")
	variant := fs.String("variant", "", "a broken variant of the reference to grade")
	only := fs.String("only", "", "only this property")
	seed := fs.Uint64("seed", 0, "the draw of the cases (0: a new one)")
	oneCase := fs.String("case", "", "one case alone")
	timeout := fs.Duration("timeout", DefaultTimeout, "bound of one run of the answer")
	repeat := fs.Int("repeat", 1, "runs per build")
	separate := fs.Bool("separate", false, "one build per check")
	accept := fs.Bool("accept", false, "only accept the request, and print the description")
	out := fs.String("report", "", "write the report into this file (default stdout)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var l course.Lesson
	var err error
	if *root == "" {
		err = errors.New("--root is required")
	} else if l, err = course.Find(*root, *exercise); err == nil {
		var lg msg.Lang
		if lg, err = msg.Parse(*lang); err == nil {
			msg.Set(lg)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	req := Request{Root: *root, Lesson: l, Answer: cmpOr(*answer, l.Starter()), CacheDir: *cache,
		Timeout: *timeout, Repeat: *repeat, Separate: *separate, Variant: *variant, Only: *only, Seed: *seed, Case: *oneCase}
	if err := g.Accept(req); err != nil {
		fmt.Fprintln(stderr, report.OneLine(err.Error()))
		return 2
	}
	if *accept {
		return writeJSON(g.Describe(), "", stdout, stderr)
	}
	r := g.Check(context.Background())
	killed, left := runner.Sweep()
	Swept(&r, req.Again(), killed, left)
	r.SchemaVersion, r.Lang = report.SchemaVersion, string(msg.Current())
	return writeJSON(r, *out, stdout, stderr)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// writeJSON writes v to the file out, or to stdout when out is "".
func writeJSON(v any, out string, stdout, stderr io.Writer) int {
	data, err := json.Marshal(v)
	if err == nil && out != "" {
		err = os.WriteFile(out, data, 0o644)
	} else if err == nil {
		_, err = stdout.Write(append(data, '\n'))
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// Swept says in r what a sweep at the end of a check killed (killed, and
// left still running after runner.SweepBound): processes a run left that
// hid until every run had ended. A check that passed fails.
func Swept(r *report.Report, again string, killed, left int) {
	if killed == 0 && left == 0 {
		return
	}
	s := msg.T("check.swept", killed)
	if left > 0 {
		s = msg.T("check.swept_left", killed+left, killed, left, runner.SweepBound)
	}
	r.Notes = append(r.Notes, s)
	if r.Verdict == report.Passed {
		r.Verdict, r.OK = report.Failed, false
		r.Summary = msg.T("check.left_summary")
		r.Next = msg.T("check.left_next", again)
	}
}

// Program is the Grader of a lesson with a grader of its own: the main
// package in the folder Dir (a slash path from the root, lessons/NN/grader),
// which Main runs. It is built into the cache and sealed (an HMAC under a
// key off the disk while the grader runs, so that nothing the grader runs
// can pass a binary of its own as the grader), and run as an answer is:
// a process group of its own, killed whole at ProgramTimeout or when the
// check is stopped, and what it leaves running is found and counted.
type Program struct {
	Dir string

	req Request
	bin string
	// fresh: bin is as Accept built it, nothing having run since but the
	// grader itself; a later Check builds again (a tool of the answer ran).
	fresh bool
	desc  Description
	err   error // the grader did not build, or did not accept for another reason than the request
}

// Accept builds the grader and has it accept req; its usage error is
// Accept's.
func (p *Program) Accept(req Request) error {
	p.req = req.WithDefaults()
	p.bin, p.err = p.build(context.Background())
	if p.err != nil {
		return nil // Check says so
	}
	p.fresh = true
	var stdout runner.Buffer
	res := runner.Run(context.Background(), runner.Cmd{Name: p.bin, Args: append(p.args(), "--accept"),
		Dir: p.req.Root, Timeout: time.Minute, Stdout: &stdout, Unmeasured: true})
	switch {
	case res.ExitCode == 2:
		return errors.New(strings.TrimSpace(res.Output))
	case !res.OK():
		p.err = fmt.Errorf("%s --accept: %s", p.Dir, ranText(res))
	default:
		if err := json.Unmarshal(stdout.Bytes(), &p.desc); err != nil {
			p.err = fmt.Errorf("%s --accept printed no description: %v", p.Dir, err)
		}
	}
	return nil
}

// build builds the grader into the cache.
func (p *Program) build(ctx context.Context) (string, error) {
	dir := filepath.Join(p.req.CacheDir, p.req.Lesson.Exercise(), "grader")
	key := TakeKey(dir, graderKey)
	defer PutKey(dir, graderKey, key)
	return p.buildWith(ctx, dir, key)
}

// buildWith builds the grader into dir. A binary there that is not the one
// it last built (a tool of an answer can write into the cache) is removed
// first: go build would take one that carries the right build ID as up to
// date. What else such a tool left there, and any file beside the grader's
// folder (the exercise's cache folder holds folders only: builds), goes
// too.
func (p *Program) buildWith(ctx context.Context, dir string, key []byte) (string, error) {
	bin := filepath.Join(dir, runner.Exe(path.Base(p.Dir)))
	seal := bin + ".seal"
	want, ok := sealOf(key, bin)
	if got, err := os.ReadFile(seal); !ok || err != nil || !hmac.Equal(got, want) {
		os.Remove(bin)
		removeStrays(dir, filepath.Base(bin), filepath.Base(seal), graderKey)
	}
	res := runner.Build(ctx, p.req.Root, "", bin, "./"+p.Dir)
	if !res.OK() {
		return "", fmt.Errorf("the grader %s does not build: %s", p.Dir, ranText(res))
	}
	if sum, ok := sealOf(key, bin); ok {
		_ = os.WriteFile(seal, sum, 0o644)
	}
	return bin, nil
}

// removeStrays removes every entry of dir but the names kept, and every
// file (not a folder) of dir's parent.
func removeStrays(dir string, keep ...string) {
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if !slices.Contains(keep, e.Name()) {
				os.RemoveAll(filepath.Join(dir, e.Name()))
			}
		}
	}
	parent := filepath.Dir(dir)
	if entries, err := os.ReadDir(parent); err == nil {
		for _, e := range entries {
			if !e.IsDir() {
				os.Remove(filepath.Join(parent, e.Name()))
			}
		}
	}
}

// sealOf is the HMAC under key of the file bin's content.
func sealOf(key []byte, bin string) ([]byte, bool) {
	f, err := os.Open(bin)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	m := hmac.New(sha256.New, key)
	if _, err := io.Copy(m, f); err != nil {
		return nil, false
	}
	return m.Sum(nil), true
}

// graderKey keys the stamp of a lesson's grader, kept in its cache folder.
const graderKey = "grader.key"

// args are the request's flags.
func (p *Program) args() []string {
	r := p.req
	args := []string{"--root", r.Root, "--exercise", r.Lesson.Exercise(), "--answer", r.Answer,
		"--cache", r.CacheDir, "--lang", string(msg.Current()), "--timeout", r.Timeout.String()}
	for _, f := range []struct{ name, value string }{{"--variant", r.Variant}, {"--only", r.Only}, {"--case", r.Case}} {
		if f.value != "" {
			args = append(args, f.name, f.value)
		}
	}
	if r.Repeat > 1 {
		args = append(args, "--repeat", strconv.Itoa(r.Repeat))
	}
	if r.Separate {
		args = append(args, "--separate")
	}
	if r.Seed != 0 {
		args = append(args, "--seed", strconv.FormatUint(r.Seed, 10))
	}
	return args
}

// Check runs the grader and reads its report.
func (p *Program) Check(ctx context.Context) report.Report {
	r := report.Report{SchemaVersion: report.SchemaVersion, Exercise: p.req.Lesson.Exercise(), Title: p.req.Lesson.DisplayTitle(p.req.Root),
		Method: p.req.Lesson.Method, Answer: p.req.Answer, Variant: p.req.Variant, Verdict: report.Failed, Properties: []report.Prop{}}
	if p.err != nil {
		r.Summary = p.err.Error()
		return r
	}
	// The key is off the disk until the grader ended; the grader is built
	// again unless Accept just did.
	dir := filepath.Join(p.req.CacheDir, p.req.Lesson.Exercise(), "grader")
	key := TakeKey(dir, graderKey)
	defer PutKey(dir, graderKey, key)
	bin := p.bin
	if !p.fresh {
		var err error
		if bin, err = p.buildWith(ctx, dir, key); err != nil {
			r.Summary = err.Error()
			return r
		}
	}
	p.fresh = false
	stdout := runner.Buffer{Limit: 64 << 20}
	res := runner.Run(ctx, runner.Cmd{Name: bin, Args: p.args(), Dir: p.req.Root, Timeout: ProgramTimeout, Stdout: &stdout, Unmeasured: true})
	if ctx.Err() != nil {
		r.Summary = msg.T("mut.interrupted")
		return r
	}
	var got report.Report
	if err := json.NewDecoder(bytes.NewReader(stdout.Bytes())).Decode(&got); !res.OK() || err != nil {
		r.Summary = fmt.Sprintf("the grader %s gave no report: %s", p.Dir, ranText(res))
		return r
	}
	Swept(&got, p.req.Again(), res.Orphans, res.Left)
	return got
}

// ranText says how a run of the grader (or its build) ended.
func ranText(res runner.Result) string {
	s := report.Shorten(report.OneLine(res.Output), 600)
	switch {
	case res.Err != nil:
		return res.Err.Error()
	case res.TimedOut:
		return "still running after " + ProgramTimeout.String() + ", killed: " + s
	}
	return "exit " + strconv.Itoa(res.ExitCode) + ": " + s
}

// Watches: the files the grader's description names.
func (p *Program) Watches(rel string) bool { return p.desc.Watches(rel) }

// Watching names them, for a person.
func (p *Program) Watching() string { return p.desc.Watching }

// Doing says what a check does, for a person waiting on a slow one.
func (p *Program) Doing() string { return p.desc.Doing }

// Proves says what the exercise's scripts (its reference answer and its
// starter, checked) prove, for lab verify.
func (p *Program) Proves() string { return "reference answer passes, starter not started" }

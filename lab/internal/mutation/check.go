// Package mutation grades an exercise whose answer is a test (method
// "mutants"): the answer must pass on the correct checkpoint and on every
// wheat (a checkpoint changed in a way its contract allows), and fail on
// every mutant (a checkpoint with one bug). Grader is its grade.Grader.
//
// The answer is built once, against a mutant schema (package schemata):
// one binary holds the correct checkpoint and every mutant and wheat, and
// an environment variable picks one per run. An edit that cannot be
// switched at run time gets a build of its own through `go build -overlay`.
// Nothing in the student's tree is copied or changed; binaries and
// generated files live in a cache directory (by default .lab/cache).
//
// The answer runs on the correct checkpoint and, at the same time, on the
// mutants and wheats, a few at a time (the answers observe timing, and
// mostly wait); the mutants' and wheats' results count only when it passed
// on the correct checkpoint. A run that goes wrong while the machine held
// it back is run again; a correct build that goes wrong again is
// "inconclusive", never a failure. For a lesson with Redis, each run gets
// a redis-server of its own, empty, started for it (LAB_REDIS_URL).
package mutation

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	mathrand "math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/machine"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/lab/internal/schemata"
)

// Check checks one answer and returns its report; every problem,
// including an answer that does not compile, is described in the report.
func Check(ctx context.Context, req grade.Request) (r report.Report) {
	start := time.Now()
	o := req.WithDefaults()
	l := o.Lesson
	r = report.Report{
		SchemaVersion: report.SchemaVersion,
		Exercise:      l.Exercise(),
		Title:         l.DisplayTitle(o.Root),
		Method:        report.Mutants,
		Answer:        o.Answer,
		Checkpoint:    l.Checkpoint(),
		Properties:    []report.Prop{},
		Repeat:        o.Repeat,
	}
	// A fresh key for every check: the values that select each build derive
	// from it, and a kept key let an answer that logged its value under
	// `--only NAME` recognise the checkpoint in every later check (the cost:
	// the schema's packages compiled each check, E14's check 3.1 → 3.75 s).
	grade.TakeKey(o.CacheDir, grade.SchemataKey) // a key an older lab left: gone from the disk
	defer func() { r.ElapsedMS = time.Since(start).Milliseconds() }()
	s, err := grade.Open(o, grade.Keep{})
	if err != nil {
		r.Verdict, r.Summary = report.Failed, msg.T("mut.no_course", err)
		return r
	}
	defer func() {
		m := s.Close()
		m.MaxStarved = s.MaxStarved()
		r.Machine = &m
	}()

	vs, err := check.Of(o.Root, l, check.Builds, o.Only)
	if err != nil {
		r.Verdict, r.Summary = report.Failed, msg.T("mut.no_defs", err)
		return r
	}
	vs, handWritten := withGenerated(&r, o, vs)
	for _, v := range vs {
		r.Properties = append(r.Properties, newProp(v))
	}
	c := &checker{o: o, s: s, r: &r}
	defer c.startRedis(ctx, (len(vs)+1)*o.Repeat, func(err error) { c.note(msg.T("mut.no_redis", err)) })()
	built := time.Now()
	b, err := c.prepare(ctx, vs)
	r.BuildMS = time.Since(built).Milliseconds()
	if err != nil {
		r.Verdict, r.Summary = report.Failed, err.Error()
		return r
	}
	<-c.redisUp
	// The reference and the variants run at once: the variants' results
	// count only when the reference passed; when it did not, they are
	// stopped and left not run.
	vctx, stopVariants := context.WithCancel(ctx)
	defer stopVariants()
	refDone := make(chan struct{})
	var ref judged
	go func() {
		defer close(refDone)
		if !b.mainRes.OK() {
			return
		}
		ref = c.judge(ctx, "the correct checkpoint", b.main, b.referenceEnv(), true)
		if !ref.good && !ref.look {
			stopVariants()
		}
	}()
	var js []judged
	if b.mainRes.OK() {
		js = c.variantsFrom(vctx, b, vs[:handWritten], 0)
	}
	<-refDone
	js = c.generated(vctx, b, vs, handWritten, ref, js, start)
	if b.mainRes.OK() {
		ref = c.secondRound(vctx, b, vs, ref, js)
	}
	r.Reference = c.referenceRun(b, ref)
	for i, v := range vs {
		switch {
		case r.Reference.Status != report.Pass:
			r.Properties[i] = newProp(v) // only a passing reference makes them count
		case i < len(js) && js[i].ran:
			setProp(&r.Properties[i], v, js[i], c.o.Timeout)
		}
	}
	c.decide()
	if o.Only != "" {
		r.Notes = append(r.Notes, msg.T("mut.only", o.Only))
	}
	if ctx.Err() != nil {
		r.Verdict, r.OK, r.Summary, r.Next = report.Failed, false, msg.T("mut.interrupted"), ""
	}
	return r
}

// checker is one check in progress.
type checker struct {
	o grade.Request
	// s is the check's session: its key (in memory only while answers run)
	// keys the schema's selectors; its guard puts
	// the course back after every run.
	s             *grade.Session
	selfBusyNoted bool
	r             *report.Report
	mu            sync.Mutex // guards r's notes while runs go at once
	// redis gives each run a redis-server of its own (lessons with Redis),
	// nil without; set when redisUp is closed (startRedis), then read only.
	redis   *redisPool
	redisUp chan struct{}
	// refFlaky: with --repeat, the answer's result on the correct
	// checkpoint changed from run to run.
	refFlaky bool
}

// startRedis starts c.redis in the background for a lesson with Redis:
// the first servers start while the answer builds, and redisUp is closed
// once they are up (or could not start: failed says why). It returns what
// stops them all.
func (c *checker) startRedis(ctx context.Context, runs int, failed func(error)) (stop func()) {
	c.redisUp = make(chan struct{})
	if !c.o.Lesson.Redis {
		close(c.redisUp)
		return func() {}
	}
	go func() {
		defer close(c.redisUp)
		var err error
		if c.redis, err = startRedis(ctx, filepath.Join(c.o.CacheDir, "redis"), runs); err != nil {
			failed(err)
		}
	}()
	return func() { <-c.redisUp; c.redis.close() }
}

// builds are the binaries of one check: the main one (the schema, or the
// plain checkpoint) and one per variant that needs its own.
type builds struct {
	dir      string
	pkg      string            // the answer's package, as go build wants it
	external map[string]string // answer outside the root: virtual files → real ones
	main     string            // binary
	schema   *schemata.Schema  // nil: main is the plain checkpoint
	own      map[string]string // variant → its own binary, built on demand
	ownErr   map[string]string // variant → why its build failed
	mainRes  runner.Result
}

// prepare builds the answer against the schema (or, when the schema is not
// viable, against the plain checkpoint).
func (c *checker) prepare(ctx context.Context, vs []check.Check) (*builds, error) {
	o := c.o
	b := &builds{own: map[string]string{}, ownErr: map[string]string{}}
	var key string
	var err error
	b.pkg, b.external, key, err = answerPackage(o)
	if err != nil {
		return nil, err
	}
	b.dir = filepath.Join(o.CacheDir, o.Lesson.Exercise(), key)
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, err
	}
	grade.Touch(b.dir)
	grade.Prune(filepath.Join(o.CacheDir, o.Lesson.Exercise()), grade.KeepBuilds)
	b.main = filepath.Join(b.dir, runner.Exe("answer"))

	var separate []schemata.Separate
	var files map[string]string // what the main build swaps in
	if !o.Separate && len(vs) > 0 {
		b.schema, separate, err = schemata.Generate(o.Root, filepath.Join(b.dir, "schema"), vs, c.s.Key)
		if err != nil {
			return nil, err // a stale edit: the course's bug, said plainly
		}
		files = b.schema.Files
	} else {
		for _, v := range vs {
			separate = append(separate, schemata.Separate{Variant: v, Reason: "--separate"})
		}
	}
	for _, s := range separate {
		b.own[s.Variant.Name] = "" // built when the reference passes
	}
	overlay, err := c.overlay(b, "main", files)
	if err != nil {
		return nil, err
	}
	defer b.clean() // what the build read says which selector is which
	b.mainRes = runner.Build(ctx, o.Root, overlay, b.main, b.pkg)
	what := "the answer with the mutant schema (the checkpoint, every mutant and wheat)"
	if b.schema == nil {
		what = "the answer on the checkpoint"
	}
	c.step("build", what, b.mainRes.Elapsed)
	if !b.mainRes.OK() && b.schema != nil && ctx.Err() == nil {
		// Whose fault? Build the plain checkpoint: if that builds, the
		// schema is not viable (a course bug), and each variant gets a
		// build of its own.
		plain, err := c.overlay(b, "plain", nil)
		if err != nil {
			return nil, err
		}
		res := runner.Build(ctx, o.Root, plain, b.main, b.pkg)
		c.step("build", "the answer on the plain checkpoint (the schema did not build)", res.Elapsed)
		if res.OK() {
			c.note(msg.T("mut.schema_failed") + "\n" + report.Shorten(buildOutput(b.mainRes), 600))
			for _, v := range b.schema.Members {
				b.own[v] = ""
			}
			b.schema, b.mainRes = nil, res
		}
	}
	return b, nil
}

// clean removes the files the builds read (the generated schema, the
// overlays, the edited files): they say which selector picks which
// variant, and an answer could read them while it runs. The binaries stay.
func (b *builds) clean() {
	entries, _ := os.ReadDir(b.dir)
	for _, e := range entries {
		if n := e.Name(); n == "schema" || strings.HasPrefix(n, "overlay-") || strings.HasPrefix(n, "own-") {
			os.RemoveAll(filepath.Join(b.dir, n))
		}
	}
}

// overlay writes an overlay file named name holding files plus the
// answer's own files when it lives outside the root.
func (c *checker) overlay(b *builds, name string, files map[string]string) (string, error) {
	if len(files) == 0 && len(b.external) == 0 {
		return "", nil
	}
	ov := check.Overlay{Replace: map[string]string{}}
	maps.Copy(ov.Replace, files)
	maps.Copy(ov.Replace, b.external)
	return check.WriteOverlayFile(filepath.Join(b.dir, "overlay-"+name), ov)
}

// referenceEnv selects the correct checkpoint in the main build.
func (b *builds) referenceEnv() string {
	if b.schema == nil {
		return ""
	}
	return b.schema.Reference()
}

// referenceRun reports the answer's runs on the correct checkpoint.
func (c *checker) referenceRun(b *builds, res judged) *report.Run {
	if !b.mainRes.OK() {
		return &report.Run{Status: report.BuildFailed, ExitCode: b.mainRes.ExitCode, Output: buildOutput(b.mainRes), ElapsedMS: b.mainRes.Elapsed.Milliseconds()}
	}
	run := &report.Run{ExitCode: res.last.ExitCode, Output: res.last.Output, ElapsedMS: res.last.Elapsed.Milliseconds(), PassRate: res.rate}
	switch {
	case res.flaky:
		run.Status = report.Fail
		c.refFlaky = true
		c.note(msg.T("mut.ref_flaky", res.rate))
	case res.busy:
		run.Status = report.Busy
	case res.good:
		run.Status = report.Pass
	case res.last.TimedOut:
		run.Status = report.TimedOut
		run.Output = strings.TrimSpace(run.Output + "\n" + timeoutCause(res.last, c.o.Timeout))
	default:
		run.Status = report.Fail
		if res.last.Err != nil {
			run.Output += "\n" + res.last.Err.Error()
		}
	}
	return run
}

// variantsFrom runs the answer once (a round) on each mutant and wheat of
// all[from:], whose properties are c.r.Properties[from:], and returns what
// it did on each; what does not build is reported here.
func (c *checker) variantsFrom(ctx context.Context, b *builds, all []check.Check, from int) []judged {
	vs := all[from:]
	began := time.Now()
	c.buildOwn(ctx, b, vs)
	c.r.BuildMS += time.Since(began).Milliseconds()
	// runsAtOnce at a time, in a new random order each check: in a fixed
	// one, an answer whose runs note when they start could tell them apart.
	sem := make(chan struct{}, runsAtOnce)
	var wg sync.WaitGroup
	js := make([]judged, len(vs))
	order := mathrand.Perm(len(vs))
	for _, k := range order {
		i := k + from
		v := all[i]
		if ctx.Err() != nil {
			break
		}
		p := &c.r.Properties[i]
		bin, env, why := b.target(v)
		if why != "" {
			p.Status, p.Detail = report.NotViable, msg.T("mut.not_viable."+string(v.Kind))+"\n"+why
			continue
		}
		waitFrom := time.Now()
		sem <- struct{}{}
		if ctx.Err() != nil { // stopped while waiting for a turn
			<-sem
			break
		}
		c.step("wait", string(v.Kind)+" "+v.Name+" for its turn", time.Since(waitFrom))
		wg.Go(func() {
			defer func() { <-sem }()
			began := time.Now()
			js[k] = c.judge(ctx, string(v.Kind)+" "+v.Name, bin, env, v.Kind == report.Wheat)
			p.ElapsedMS = time.Since(began).Milliseconds()
		})
	}
	wg.Wait()
	return js
}

// target is the binary and the environment that run v, or why v has none.
func (b *builds) target(v check.Check) (bin, env, notViable string) {
	if _, own := b.own[v.Name]; own {
		if msg, bad := b.ownErr[v.Name]; bad {
			return "", "", msg
		}
		if b.schema != nil {
			env = b.schema.Decoy(v.Name) // the same shape as every other run's
		}
		return b.own[v.Name], env, ""
	}
	return b.main, b.schema.Select(v.Name), ""
}

// secondRound runs every build again — the correct checkpoint, each mutant
// and each wheat, all at once in a new random order — when a run of the
// first round went wrong while the machine was busy; the second round
// decides (settle). Every build, not only those that went wrong: an answer
// that saw a build twice would know which ones were run again, and could
// pass (or fail) exactly those.
func (c *checker) secondRound(ctx context.Context, b *builds, vs []check.Check, ref judged, js []judged) judged {
	var why *runner.Result // a run that went wrong while the machine was busy
	if ref.look {
		why = &ref.last
	}
	for i := range js {
		if js[i].look && why == nil {
			why = &js[i].last
		}
	}
	if why == nil || ctx.Err() != nil {
		return ref
	}
	c.note(msg.T("mut.second_round", describe(c.s.Monitor.Since(0), *why)))
	type build struct {
		i        int // index in vs; -1: the correct checkpoint
		bin, env string
	}
	builds := []build{{-1, b.main, b.referenceEnv()}}
	for i, v := range vs {
		if i < len(js) && js[i].ran {
			bin, env, _ := b.target(v)
			builds = append(builds, build{i, bin, env})
		}
	}
	mathrand.Shuffle(len(builds), func(x, y int) { builds[x], builds[y] = builds[y], builds[x] })
	second := make([]judged, len(builds))
	sem := make(chan struct{}, secondRoundAtOnce)
	var wg sync.WaitGroup
	for k, bd := range builds {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			what, wantPass := "the correct checkpoint", true
			if bd.i >= 0 {
				what, wantPass = string(vs[bd.i].Kind)+" "+vs[bd.i].Name, vs[bd.i].Kind == report.Wheat
			}
			second[k] = c.judge(ctx, what+" (second round)", bd.bin, bd.env, wantPass)
		})
	}
	wg.Wait()
	for k, bd := range builds {
		if bd.i < 0 {
			ref = c.settle(ref, second[k], true, msg.T("mut.correct_checkpoint"))
		} else {
			v := vs[bd.i]
			js[bd.i] = c.settle(js[bd.i], second[k], v.Kind == report.Wheat, msg.T("mut.kind_name."+string(v.Kind), v.Name))
		}
	}
	return ref
}

// settle is a build's outcome from its second round (last), given its
// first. A mutant let through stays missed: load does not make a test
// pass. A correct build that went wrong again while the machine was busy is
// inconclusive, unless it failed word for word as in the first round.
func (c *checker) settle(first, last judged, wantPass bool, what string) judged {
	if !last.look || !wantPass {
		return last
	}
	m := c.s.Monitor.Since(0)
	switch {
	case first.look && sameFailure(first.last, last.last):
		c.note(msg.T("mut.settle_same", what, describe(m, last.last)))
	case first.look:
		last.busy = true
		c.note(msg.T("mut.settle_twice", what, describe(m, last.last)))
	default:
		last.busy = true
		c.note(msg.T("mut.settle_second", what, describe(m, last.last)))
	}
	return last
}

// runsAtOnce is how many mutant and wheat runs share the machine with the
// reference's. Ten, not the core count: a run mostly waits (on its fake
// suppliers' latencies, its Redis's TTLs). On 2 cores (.ci/edit-to-verdict,
// quiet) E17's edit → verdict took 5.4 s with 2 at once, 4.8-5.0 s with 6,
// 4.3 s with 10 and 4.1 s with 16 (then every run starts at once, so the
// order of the longest runs no longer matters); E16's 2.2-2.3 s with 6 to
// 16. With ten, the E14-E18 answer and starter scripts passed 4 of 4 at
// GOMAXPROCS=1 beside four CPU hogs.
const runsAtOnce = 10

// secondRoundAtOnce is how many runs of the second round go at once: it
// runs because the machine was busy, so it adds less load of its own than
// the first (a timing test that catches a mutant needs its timing).
const secondRoundAtOnce = 4

// step records where time went; runs that go at once share the record.
func (c *checker) step(kind, what string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.r.Timings == nil {
		c.r.Timings = &report.Timings{}
	}
	c.r.Timings.Add(kind, what, d.Milliseconds())
}

// note adds a note to the report; runs that go at once share it.
func (c *checker) note(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Notes = append(c.r.Notes, s)
}

// buildOwn builds the variants that need a build of their own, a few at
// a time: the main build has filled the build cache with what they share.
func (c *checker) buildOwn(ctx context.Context, b *builds, vs []check.Check) {
	vs = slices.DeleteFunc(slices.Clone(vs), func(v check.Check) bool { _, own := b.own[v.Name]; return !own })
	bins, errs := make([]string, len(vs)), make([]string, len(vs))
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, v := range vs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			bins[i], errs[i] = c.buildOne(ctx, b, v)
		})
	}
	wg.Wait()
	for i, v := range vs {
		if errs[i] != "" {
			b.ownErr[v.Name] = errs[i]
		} else {
			b.own[v.Name] = bins[i]
		}
	}
	b.clean()
}

// buildOne builds the answer on v alone: the binary, or why it did not build.
func (c *checker) buildOne(ctx context.Context, b *builds, v check.Check) (bin, failed string) {
	name := c.neutral(v.Name)
	bin = filepath.Join(b.dir, "bin", runner.Exe(name))
	data, err := v.Apply(c.o.Root)
	var target, ovFile string
	if err == nil {
		target, err = filepath.Abs(filepath.Join(c.o.Root, filepath.FromSlash(v.File)))
	}
	edited := filepath.Join(b.dir, "own-"+name, filepath.Base(v.File))
	if err == nil {
		err = check.WriteIfChanged(edited, data)
	}
	if err == nil {
		ovFile, err = c.overlay(b, "own-"+name, map[string]string{target: edited})
	}
	if err != nil {
		return "", err.Error()
	}
	res := runner.Build(ctx, c.o.Root, ovFile, bin, b.pkg)
	c.step("build", "the answer on "+string(v.Kind)+" "+v.Name+" (a build of its own)", res.Elapsed)
	if !res.OK() {
		return "", buildOutput(res)
	}
	return bin, ""
}

// neutral is a name for a variant's files that says nothing of it: a
// keyed hash, the key held in memory while answers run.
func (c *checker) neutral(name string) string {
	m := hmac.New(sha256.New, c.s.Key)
	m.Write([]byte("\x00file\x00" + name))
	return "b" + hex.EncodeToString(m.Sum(nil))[:12]
}

// judged is the outcome of running one build, with re-runs.
type judged struct {
	good  bool // the answer did what it must on this build
	busy  bool // it did not, and the machine was too busy to say so
	look  bool // a run went wrong while the machine was busy: a second round decides
	ran   bool // the build was run (not stopped, not unviable)
	flaky bool // with --repeat: runs of the same build disagreed
	rate  string
	last  runner.Result // a run to show: the first one that went wrong, else the last
}

// judge runs bin (with env) Repeat times: one round of one build. look
// says a run went wrong while the machine was busy (not by a timeout: the
// timeout is a hundred times what an answer needs), so the check runs a
// second round (see secondRound).
func (c *checker) judge(ctx context.Context, what, bin, env string, wantPass bool) judged {
	good := runner.Result.OK
	if !wantPass {
		good = killed
	}
	j := judged{ran: true}
	passes, goods := 0, 0
	var bad *runner.Result
	for range c.o.Repeat {
		res, busy := c.run(ctx, what, bin, env)
		todo := strings.Contains(res.Output, "TODO") // a starter: not a matter of timing
		if !good(res) && busy && !res.TimedOut && !todo && ctx.Err() == nil {
			j.look = true
		}
		if res.OK() {
			passes++
		}
		if good(res) {
			goods++
		} else if bad == nil {
			bad = &res
		}
		j.last = res
	}
	if bad != nil {
		j.last = *bad
	}
	j.good = goods == c.o.Repeat
	j.flaky = goods > 0 && goods < c.o.Repeat
	if j.good || j.flaky {
		j.look = false
	}
	if c.o.Repeat > 1 {
		j.rate = fmt.Sprintf("%d/%d", passes, c.o.Repeat)
	}
	return j
}

// run runs bin once and says whether a busy machine held it back: the
// answer's own threads waited for a CPU (Starved, Linux), over the whole
// run or in its worst StarvedWindow (a stall of a few hundred ms misses a
// timed bound as surely as a slow run), or the lab's own timer fired late.
func (c *checker) run(ctx context.Context, what, bin, env string) (runner.Result, bool) {
	mark := c.s.Monitor.Mark()
	scratch, exe, err := c.scratch(bin)
	if err != nil {
		return runner.Result{ExitCode: -1, Err: err}, false
	}
	defer runner.RemoveAll(scratch)
	cmd := runner.Cmd{Name: exe, Dir: scratch, Timeout: c.o.Timeout, TempDir: filepath.Join(scratch, "tmp")}
	if env != "" {
		cmd.Env = []string{env}
	}
	db, stopRedis := c.redis.forRun(ctx)
	defer stopRedis()
	if db != "" {
		cmd.Env = append(cmd.Env, db)
	}
	res := c.s.Run(ctx, cmd)
	c.step("run", what, res.Elapsed)
	c.s.Restore()
	busy := c.s.Monitor.Since(mark).Busy || c.s.Monitor.HeldBack(res.Starved, res.Elapsed) ||
		c.s.Monitor.HeldBack(res.StarvedPeak, min(res.Elapsed, runner.StarvedWindow))
	if busy && selfBusy(res) {
		// Judged from outside the answer: it was the one keeping the CPUs busy.
		busy = false
		c.mu.Lock()
		if !c.selfBusyNoted {
			c.selfBusyNoted = true
			c.r.Notes = append(c.r.Notes, msg.T("mut.self_busy", res.CPU.Round(time.Millisecond), res.Elapsed.Round(time.Millisecond), runtime.NumCPU()))
		}
		c.mu.Unlock()
	}
	return res, busy
}

// scratch makes a fresh folder for one run, the answer's working
// directory, holding the binary under a name every run shares: the path,
// argv[0] and the working directory say nothing of which build it is.
func (c *checker) scratch(bin string) (dir, exe string, err error) {
	runs := filepath.Join(c.o.CacheDir, "run")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		return "", "", err
	}
	dir, err = os.MkdirTemp(runs, "")
	if err != nil {
		return "", "", err
	}
	exe = filepath.Join(dir, runner.Exe("answer"))
	if os.Link(bin, exe) != nil { // another file system: a copy
		data, err := os.ReadFile(bin)
		if err == nil {
			err = os.WriteFile(exe, data, 0o755)
		}
		if err != nil {
			os.RemoveAll(dir)
			return "", "", err
		}
	}
	return dir, exe, nil
}

// sameFailure reports whether two failed runs of one build failed the same
// way: the same exit code and the same last line (loopback ports aside,
// which change from run to run). A line that carries a measured time
// differs from run to run, so a timing failure is never "the same".
func sameFailure(a, b runner.Result) bool {
	norm := func(r runner.Result) string {
		return portRE.ReplaceAllString(report.LastLine(r.Output), "127.0.0.1:PORT")
	}
	return a.ExitCode == b.ExitCode && a.Err == nil && b.Err == nil && norm(a) != "" && norm(a) == norm(b)
}

var portRE = regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1\]):[0-9]+`)

// selfBusy reports whether a run used at least half of every CPU of the
// machine for its whole run: its threads waiting for a CPU, and the lab's
// timer firing late, were then the answer's own doing, not the machine's.
func selfBusy(res runner.Result) bool {
	return res.Elapsed >= 100*time.Millisecond && res.CPU*2 >= res.Elapsed*time.Duration(runtime.NumCPU())
}

// describe says how busy the machine was, and how much it held a run back.
func describe(m report.Machine, res runner.Result) string {
	s := machine.Describe(m)
	if res.Starved >= 0 {
		s += msg.T("mut.starved", 100*res.Starved)
	}
	return s
}

// setProp sets a mutant's or wheat's outcome.
func setProp(p *report.Prop, v check.Check, j judged, timeout time.Duration) {
	res := j.last
	p.PassRate = j.rate
	line := report.Shorten(report.LastLine(res.Output), 240)
	switch {
	case j.flaky:
		p.Status, p.Flaky = report.Fail, true
		p.Detail = msg.T("mut.prop_flaky", j.rate, line)
	case j.busy:
		p.Status, p.Detail = report.Busy, msg.T("mut.prop_busy")
	case res.TimedOut:
		p.Status = report.TimedOut
		p.Detail = timeoutCause(res, timeout)
	case res.Err != nil:
		p.Status, p.Detail = report.NotRun, res.Err.Error()
	case v.Kind == report.Wheat && j.good:
		p.Status, p.OK = report.Pass, true
	case v.Kind == report.Wheat:
		p.Status = report.Fail
		p.Detail = msg.T("mut.wheat_failed", line)
	case j.good:
		p.Status, p.OK, p.Detail = report.Caught, true, line
	default:
		p.Status = report.Missed
		p.Detail = msg.T("mut.missed", line)
	}
}

// timeoutCause says why a killed run did not finish, as far as can be told.
func timeoutCause(res runner.Result, timeout time.Duration) string {
	s := msg.T("mut.killed_after", timeout)
	switch {
	case res.HeldOpen:
		s += msg.T("mut.killed_held_open")
	case res.Computing:
		s += msg.T("mut.killed_computing", res.CPU.Round(time.Millisecond))
	default:
		s += msg.T("mut.killed_waiting")
	}
	return s
}

// decide sets the verdict, its sentence and the next step.
func (c *checker) decide() {
	r, o := c.r, c.o
	again := o.Again()
	cp := msg.T("mut.checkpoint_n", o.Lesson.Number)
	reqOK, req, bonusOK, bonus := r.Counts()
	wheatsOK, wheats := 0, 0
	var missed, genMissed, wheatFails, busy, flaky []string
	genNotRun := 0
	genCaught, gen := r.GeneratedCounts()
	for _, p := range r.Properties {
		switch {
		case p.Generated != nil && p.Status == report.NotRun:
			genNotRun++ // while a hand-written check fails, the verdict is theirs
		case p.Status == report.Busy:
			busy = append(busy, p.Name)
		case p.Flaky:
			flaky = append(flaky, p.Name+msg.T("report.pass_rate", p.PassRate))
		case p.Kind == report.Wheat && p.OK:
			wheatsOK++
		case p.Kind == report.Wheat && p.Status != report.NotRun && p.Status != report.NotViable:
			wheatFails = append(wheatFails, p.Name)
		case p.Kind == report.Mutant && p.Generated != nil && !p.OK && p.Status != report.NotViable:
			genMissed = append(genMissed, msg.T("mut.gen_missed_one", p.Name, p.Generated.Op, p.Generated.Where))
		case p.Kind == report.Mutant && p.Required && !p.OK && p.Status != report.NotViable:
			missed = append(missed, p.Name)
		}
		if p.Kind == report.Wheat {
			wheats++
		}
	}
	r.Score = &report.Score{RequiredCaught: reqOK, Required: req, BonusCaught: bonusOK, Bonus: bonus, WheatsPassed: wheatsOK, Wheats: wheats, GeneratedCaught: genCaught, Generated: gen}
	ref := r.Reference
	bonusNote := ""
	if bonus > 0 {
		bonusNote = msg.T("mut.bonus_note", bonusOK, bonus)
	}
	switch {
	case c.s.Tampered(r, msg.T("who.answer"), msg.T("mut.next_tampered", again)):
	case ref.Status == report.BuildFailed:
		r.Verdict, r.Summary = report.Failed, msg.T("mut.no_compile")
		r.Next = msg.T("mut.next_fix", again)
	case ref.Status == report.TimedOut:
		r.Verdict = report.Failed
		r.Summary = msg.T("mut.timed_out", o.Timeout, cp)
		r.Next = msg.T("mut.next_bound", again)
	case ref.Status != report.Pass && ref.Status != report.Busy && strings.Contains(ref.Output, "TODO"):
		r.Verdict = report.NotStarted
		r.Summary = msg.T("mut.todo", o.Answer)
		r.Next = msg.T("mut.next_todo", msg.Twin(o.Lesson.Page()), o.Answer, r.Exercise, again)
	case ref.PassRate != "" && strings.HasPrefix(ref.Status, report.Fail) && c.refFlaky:
		r.Verdict = report.Flaky
		r.Summary = msg.T("mut.ref_flaky_summary", ref.PassRate, cp)
		r.Next = msg.T("mut.next_signals", again)
	case ref.Status == report.Busy:
		r.Verdict = report.Inconclusive
		r.Summary = msg.T("mut.ref_busy", cp)
		r.Next = msg.T("mut.next_quiet", again)
	case ref.Status != report.Pass:
		r.Verdict = report.Failed
		r.Summary = msg.T("mut.ref_failed", cp)
		run := "./" + o.Answer
		if filepath.IsAbs(o.Answer) {
			run = o.Answer
		}
		r.Next = msg.T("mut.next_run", run, again)
	case c.s.Left.Processes > 0:
		r.Verdict = report.Failed
		r.Summary = c.s.Left.Summary(msg.T("who.answer"))
		r.Next = msg.T("check.left_next", again)
	case len(missed) > 0 || len(wheatFails) > 0 || len(genMissed) > 0:
		r.Verdict = report.Failed
		var parts []string
		if len(missed) > 0 {
			parts = append(parts, msg.T("mut.catches_only", reqOK, req, bonusNote, strings.Join(missed, ", ")))
		}
		if len(genMissed) > 0 {
			parts = append(parts, generatedMissed(reqOK, req, genCaught, gen, genMissed))
		}
		if len(wheatFails) > 0 {
			parts = append(parts, msg.T("mut.wheats_fail", strings.Join(wheatFails, ", ")))
		}
		r.Summary = msg.T("mut.passes_but", cp, strings.Join(parts, msg.T("mut.and_it")))
		r.Next = msg.T("mut.next_bugs", r.Exercise, again)
	case len(flaky) > 0:
		r.Verdict = report.Flaky
		r.Summary = msg.T("mut.flaky_summary", strings.Join(flaky, ", "))
		r.Next = msg.T("mut.next_signals", again)
	case len(busy) > 0:
		r.Verdict = report.Inconclusive
		r.Summary = msg.T("mut.busy_summary", strings.Join(busy, ", "))
		r.Next = msg.T("mut.next_quiet", again)
	case genNotRun > 0:
		r.Verdict = report.Failed
		r.Summary = msg.T("mut.gen_not_run", genNotRun)
		r.Next = msg.T("mut.next_again", again)
	default:
		r.Verdict = report.Passed
		r.Summary = msg.T("mut.passed", cp, reqOK, req, bonusNote)
		if gen > 0 {
			r.Summary += msg.T("mut.passed_generated", genCaught, gen)
		}
		if wheats > 0 {
			r.Summary += msg.T("mut.passed_wheats", wheatsOK, wheats)
		}
		r.Summary += msg.T("mut.period")
		if req == 0 && gen == 0 {
			r.Summary = msg.T("mut.passed_no_mutants", cp, r.Exercise)
		}
	}
	if left := c.s.Left.Summary(msg.T("who.answer")); c.s.Left.Processes > 0 && r.Summary != left {
		r.Notes = append(r.Notes, left)
	}
	r.OK = r.Verdict == report.Passed
}

// buildOutput is what to show of a failed build.
func buildOutput(res runner.Result) string {
	out := strings.TrimRight(res.Output, "\n")
	if res.Err != nil {
		out = strings.TrimSpace(out + "\n" + res.Err.Error())
	}
	if res.TimedOut {
		out = strings.TrimSpace(out + "\ngo build did not finish in time")
	}
	return out
}

// answerPackage returns the package go build is given, the name of the
// answer's cache directory, and for an answer outside the root the overlay
// that places its files inside it. An answer outside the root is named by
// what go build reads of it (each non-test .go file's name and content), so
// the same answer in a new temporary folder (lab watch, the starters'
// tests) finds its binaries up to date; go still decides that from their
// build IDs, never from this name.
func answerPackage(o grade.Request) (pkg string, external map[string]string, key string, err error) {
	if !filepath.IsAbs(o.Answer) {
		return "./" + o.Answer, nil, strings.NewReplacer("/", "_", ".", "_").Replace(o.Answer), nil
	}
	files, err := filepath.Glob(filepath.Join(o.Answer, "*.go"))
	if err != nil {
		return "", nil, "", err
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") })
	if len(files) == 0 {
		return "", nil, "", fmt.Errorf(msg.T("mut.no_go_files"), o.Answer)
	}
	h := sha256.New()
	for _, f := range files { // sorted: Glob sorts
		data, err := os.ReadFile(f)
		if err != nil {
			return "", nil, "", fmt.Errorf("reading the answer: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(data))
		h.Write(data)
	}
	name := hex.EncodeToString(h.Sum(nil)[:8])
	virtual := filepath.Join(o.Root, "labexternal", name)
	ext := map[string]string{}
	for _, f := range files {
		ext[filepath.Join(virtual, filepath.Base(f))] = f
	}
	rel, _ := filepath.Rel(o.Root, virtual)
	return "./" + filepath.ToSlash(rel), ext, "external_" + name, nil
}

package mutation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	mathrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/lab/internal/mutagen"
)

// killsetRetries is how many more times a run the machine held back is
// run when it failed on a timing check (timed): such a failure may be the
// load's, so it counts once a run is not held back, or when every run held
// back failed with the same line (sameWords). Any other failure counts at
// once, and so does a pass: load changes when things happen, not what
// they say.
const killsetRetries = 3

// killsetAtOnce is how many runs of the reference go at once. Fewer than
// lab check's runsAtOnce: with ten at once on two cores the runs hold each
// other back, and a timing failure then counts only after a re-run.
const killsetAtOnce = 4

// Run generates the set from the lesson's scope (Mutants) or allowed.txt
// (Wheats), drops what does not compile, builds the rest into one schema
// with the reference answer (req.Answer, by default the lesson's
// Reference), runs the reference runs times on each (runSet) and returns
// the classified results, not yet written. A mutant killed every run is
// required, never a survivor, sometimes unstable; a required one killed
// with the same message in the same function as an earlier one is merged
// into it. A wheat the reference passed every run is kept, else rejected.
// A survivor's, hang's or rejected wheat's review is carried over from
// prev (ReviewFor). log gets progress.
func (s Set) Run(ctx context.Context, req grade.Request, runs int, prev *mutagen.Results, log io.Writer) (*mutagen.Results, error) {
	if req.Answer == "" {
		req.Answer = req.Lesson.Reference()
	}
	req.Repeat = 1
	o := req.WithDefaults()
	l := o.Lesson
	start := time.Now()
	all, err := s.Generate(o.Root, l)
	if err != nil {
		return nil, err
	}
	ms, dropped, err := mutagen.Compiles(o.Root, all)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "%s: %d %ss generated, %d do not compile (dropped), %d to run %d times each (%.1f s)\n",
		l.Exercise(), len(all), s, len(dropped), len(ms), runs, time.Since(start).Seconds())
	covers, err := s.Covers(o.Root, l)
	if err != nil {
		return nil, err
	}
	outs, err := runSet(ctx, o, ms, runs, log)
	if err != nil {
		return nil, err
	}
	res := &mutagen.Results{Exercise: l.Exercise(), Wheats: s == Wheats, Command: s.Command(l), Covers: covers, Generator: mutagen.Version, Runs: runs, Dropped: len(dropped)}
	type place struct{ fn, says string }
	first := map[place]string{}
	for i, m := range ms {
		o := outs[i]
		e := mutagen.Entry{Name: m.Name, Op: m.Op, Where: m.Where(l.Checkpoint()), Edit: m.Edit(), Killed: o.killed, Says: mostSaid(o.says)}
		switch {
		case s == Wheats && o.killed == 0 && o.hung == 0 && o.busy == 0:
			e.Status = mutagen.Wheat
		case s == Wheats:
			e.Status, e.Killed = mutagen.Rejected, o.killed+o.hung
		case o.killed == runs || o.killed+o.busy == runs && sameWords(o.busyLines, o.busy):
			e.Status = mutagen.Required
			p := place{m.File + " " + m.Func, e.Says}
			if rep, ok := first[p]; ok {
				e.Status, e.MergedInto = mutagen.Merged, rep
			} else {
				first[p] = m.Name
			}
		case o.hung > 0 && o.killed == 0:
			e.Status = mutagen.Hangs
		case o.killed == 0 && o.busy == 0:
			e.Status = mutagen.Survivor
		default:
			e.Status = mutagen.Unstable
			e.Review = fmt.Sprintf("killed in %d of %d runs", o.killed, runs)
			if o.busy > 0 {
				e.Review += fmt.Sprintf(" (%d failed on a timing check while the machine held it back, %d times running: run the kill-set again on a quieter machine)", o.busy, killsetRetries+1)
			}
			e.Review += ": not required"
		}
		if e.Status == mutagen.Survivor || e.Status == mutagen.Hangs || e.Status == mutagen.Rejected {
			e.Review = prev.ReviewFor(e)
		}
		res.Entries = append(res.Entries, e)
	}
	if s == Wheats {
		fmt.Fprintf(log, "%s: %d wheats, %d rejected by the reference; %.0f s in all\n",
			l.Exercise(), res.Count(mutagen.Wheat), res.Count(mutagen.Rejected), time.Since(start).Seconds())
	} else {
		fmt.Fprintf(log, "%s: %d required (+%d merged into them), %d survivors, %d unstable, %d hang; %.0f s in all\n",
			l.Exercise(), res.Count(mutagen.Required), res.Count(mutagen.Merged), res.Count(mutagen.Survivor), res.Count(mutagen.Unstable), res.Count(mutagen.Hangs), time.Since(start).Seconds())
	}
	return res, nil
}

// outcome is what the reference did on one generated mutant or wheat over
// a set's runs.
type outcome struct {
	killed, hung, busy int
	says               map[string]int
	busyLines          map[string]int // timing failures while held back: their lines, ports aside
}

// runSet builds ms into one schema with the reference answer o.Answer,
// checks that it passes on the correct checkpoint runs times, and runs it
// runs times on each of ms, a few at a time in a random order.
func runSet(ctx context.Context, o grade.Request, ms []mutagen.Mutant, runs int, log io.Writer) ([]outcome, error) {
	l := o.Lesson
	var err error
	r := report.Report{Exercise: l.Exercise(), Method: report.Mutants}
	s, err := grade.Open(o, grade.Keep{Dir: o.CacheDir, Name: grade.SchemataKey})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	c := &checker{o: o, s: s, r: &r}
	defer c.startRedis(ctx, (len(ms)+1)*runs, func(err error) {
		fmt.Fprintf(log, "no shared redis-server (%v): each run starts its own\n", err)
	})()
	vs := make([]check.Check, len(ms))
	for i, m := range ms {
		vs[i] = m.Check
		vs[i].Exercise = l.Exercise()
		vs[i].Kind = report.Mutant // a wheat too: built into the schema the same way
	}
	built := time.Now()
	b, err := c.prepare(ctx, vs)
	if err != nil {
		return nil, err
	}
	if !b.mainRes.OK() {
		return nil, fmt.Errorf("the reference answer does not build with the schema:\n%s", buildOutput(b.mainRes))
	}
	c.buildOwn(ctx, b, vs)
	fmt.Fprintf(log, "%s: built in %.1f s (%d need a build of their own)\n", l.Exercise(), time.Since(built).Seconds(), len(b.own))
	<-c.redisUp
	for i := range runs {
		res, busy := c.run(ctx, "the correct checkpoint", b.main, b.referenceEnv())
		if !res.OK() && !busy {
			return nil, fmt.Errorf("the reference answer fails on the correct checkpoint (run %d): %s", i+1, report.LastLine(res.Output+"\n"+errString(res.Err)))
		}
	}

	outs := make([]outcome, len(ms))
	for i := range outs {
		outs[i].says, outs[i].busyLines = map[string]int{}, map[string]int{}
	}
	var tasks []int // the index of a mutant in ms, runs times each
	for i := range ms {
		for range runs {
			tasks = append(tasks, i)
		}
	}
	mathrand.Shuffle(len(tasks), func(x, y int) { tasks[x], tasks[y] = tasks[y], tasks[x] })
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, killsetAtOnce)
	var wg sync.WaitGroup
	ran := time.Now()
	for _, t := range tasks {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			v := vs[t]
			bin, env, msg := b.target(v)
			var res runner.Result
			busy := false
			if msg == "" {
				for try := 0; try <= killsetRetries; try++ {
					res, busy = c.run(ctx, "mutant "+v.Name, bin, env)
					if !busy || ctx.Err() != nil || !killed(res) || !timed(res) {
						busy = busy && killed(res) && timed(res)
						break
					}
				}
			}
			mu.Lock()
			defer mu.Unlock()
			o := &outs[t]
			switch {
			case msg != "":
				o.hung++ // never built: never killed
			case busy:
				o.busy++
				o.busyLines[portRE.ReplaceAllString(report.LastLine(res.Output), "127.0.0.1:PORT")]++
				o.says[says(res)]++
			case killed(res):
				o.killed++
				o.says[says(res)]++
			case res.TimedOut:
				o.hung++
			}
			done++
			if done%50 == 0 || done == len(tasks) {
				fmt.Fprintf(log, "%s: %d/%d runs (%.0f s)\n", l.Exercise(), done, len(tasks), time.Since(ran).Seconds())
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if changed := s.Changed(); len(changed) > 0 {
		return nil, errors.New(s.Guard.Tampered("the reference answer", changed))
	}
	return outs, nil
}

// sameWords: the timing failures of runs the machine held back, busy of
// them, all said the same line word for word, at least twice: a line with
// a measured figure differs from run to run, so one that repeats exactly is
// the mutant's, not the load's (as in lab check's second round).
func sameWords(lines map[string]int, busy int) bool {
	return busy >= 2 && len(lines) == 1
}

// timed: the failure's line carries a measured time, or says that a
// deadline or a timeout ran out: what load alone can make happen.
func timed(res runner.Result) bool {
	s := strings.ToLower(says(res))
	return strings.Contains(s, "dur") || strings.Contains(s, "deadline exceeded") || strings.Contains(s, "timeout") || strings.Contains(s, "timed out") || strings.Contains(s, "took")
}

// says is what the reference said when it failed: its last line, or for a
// panic or a fatal error (a mutex unlocked twice) its own line (the last
// line is then a stack frame).
func says(res runner.Result) string {
	for _, p := range []string{"panic: ", "fatal error: "} {
		if i := strings.Index(res.Output, p); i >= 0 {
			line, _, _ := strings.Cut(res.Output[i:], "\n")
			return normalizeSays(line)
		}
	}
	return normalizeSays(report.LastLine(res.Output))
}

// killed: the reference failed on the mutant, by itself (not killed by lab,
// not failing to start).
func killed(res runner.Result) bool { return res.Err == nil && !res.TimedOut && res.ExitCode != 0 }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// mostSaid is the message said most often (the first in order on a tie).
func mostSaid(says map[string]int) string {
	best, n := "", 0
	for _, k := range slices.Sorted(maps.Keys(says)) {
		if says[k] > n {
			best, n = k, says[k]
		}
	}
	return best
}

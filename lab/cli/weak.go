package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/lab/internal/mutagen"
)

// runWeak implements `lab verify --weak [ENN...]`: each first-order mutant
// of an exercise's reference answer that compiles (a test with one small
// edit, as a student might write it) is graded with lab check and sorted
// by what rejected it: the correct checkpoint, a hand-written check, or
// only a generated one. The last are weak answers the hand-written checks
// alone would pass, the evidence that the generated checks add something.
// It prints them; it writes nothing.
func runWeak(root string, names []string, parallel, sample int, seed uint64, stdout, stderr io.Writer) int {
	lessons, code := mutantLessons(root, "--weak", names, stderr)
	if code != 0 {
		return code
	}
	if sample < 0 {
		fmt.Fprintln(stderr, "lab verify --weak: --sample must be 0 (every mutant) or more")
		return 2
	}
	if parallel < 1 || parallel > 8 {
		fmt.Fprintln(stderr, "lab verify --weak: --parallel must be 1 to 8 (each check runs several runs at once)")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		return failed(stderr, "lab verify --weak", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	runner.BecomeSubreaper()
	code = 0
	for _, l := range lessons {
		if err := weakOf(ctx, root, exe, l, parallel, sample, seed, stdout); err != nil {
			fmt.Fprintf(stderr, "lab verify --weak %s: %v\n", l.Exercise(), err)
			code = 1
		}
	}
	return code
}

// weakGrade is what one graded answer mutant showed.
type weakGrade struct {
	m       mutagen.Mutant
	kind    string // checkpoint, hand, weak, passes, error
	verdict string
	missed  []string // generated checks it let through or failed
	detail  string
}

func weakOf(ctx context.Context, root, exe string, l course.Lesson, parallel, sample int, seed uint64, stdout io.Writer) error {
	began := time.Now()
	ref := l.Reference()
	file := ref + "/main.go"
	src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return err
	}
	all, err := mutagen.Generate(file, src, []string{"*"})
	if err != nil {
		return err
	}
	ms, _, err := mutagen.Compiles(root, all)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d mutants of the reference answer (%s), %d compile", l.Exercise(), len(all), file, len(ms))
	if sample > 0 && sample < len(ms) {
		r := rand.New(rand.NewPCG(seed, 0))
		r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		ms = ms[:sample]
		fmt.Fprintf(stdout, ", %d of them drawn (--sample %d --seed %d)", sample, sample, seed)
	}
	fmt.Fprintf(stdout, "; grading each with lab check, %d at a time\n", parallel)
	others, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(ref), "*.go"))
	if err != nil {
		return err
	}
	grades := make([]weakGrade, len(ms))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, m := range ms {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			grades[i] = gradeAnswerMutant(ctx, root, exe, l, m, string(src), others)
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	count := map[string]int{}
	var weak []weakGrade
	for _, g := range grades {
		count[g.kind]++
		if g.kind == "weak" {
			weak = append(weak, g)
		}
		if g.kind == "error" {
			fmt.Fprintf(stdout, "  %s: could not be graded: %s\n", g.m.Name, g.detail)
		}
	}
	sort.Slice(weak, func(a, b int) bool { return weak[a].m.Name < weak[b].m.Name })
	for _, g := range weak {
		fmt.Fprintf(stdout, "  weak: %s at %s: %s\n", g.m.Name, g.m.Where(ref), g.m.Edit())
		fmt.Fprintf(stdout, "        passes every hand-written check; rejected by %s\n", strings.Join(g.missed, ", "))
	}
	fmt.Fprintf(stdout, "%s: %d rejected on the correct checkpoint, %d by a hand-written check, %d only by a generated one (weak answers), %d pass everything, %d not graded (%.0f s)\n",
		l.Exercise(), count["checkpoint"], count["hand"], count["weak"], count["passes"], count["error"], time.Since(began).Seconds())
	return nil
}

// gradeAnswerMutant writes the reference answer with m applied into a
// folder of its own and grades it with `lab check ENN --answer DIR --json`.
func gradeAnswerMutant(ctx context.Context, root, exe string, l course.Lesson, m mutagen.Mutant, src string, others []string) weakGrade {
	g := weakGrade{m: m, kind: "error"}
	edited, err := m.Apply(src)
	if err != nil {
		g.detail = err.Error()
		return g
	}
	dir, err := os.MkdirTemp("", "lab-weak-")
	if err != nil {
		g.detail = err.Error()
		return g
	}
	defer os.RemoveAll(dir)
	for _, o := range others {
		data := []byte(edited)
		if filepath.Base(o) != "main.go" {
			data, err = os.ReadFile(o)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(o)), data, 0o644)
		}
		if err != nil {
			g.detail = err.Error()
			return g
		}
	}
	out := &runner.Buffer{Limit: 16 << 20}
	res := runner.Run(ctx, runner.Cmd{Name: exe, Args: []string{"check", l.Exercise(), "--answer", dir, "--json"}, Dir: root,
		Env: []string{"LAB_STATE_DIR=" + filepath.Join(dir, ".state")}, Stdout: out, Timeout: 5 * time.Minute, Unmeasured: true})
	var r report.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		g.detail = fmt.Sprintf("no report (exit %d): %s", res.ExitCode, report.LastLine(res.Output))
		return g
	}
	g.verdict = string(r.Verdict)
	handMissed := false
	for _, p := range r.Properties {
		run := p.Status != report.NotRun && p.Status != report.NotViable && p.Status != report.Busy
		switch {
		case !run || p.OK:
		case p.Generated != nil:
			g.missed = append(g.missed, p.Name)
		case p.Kind == report.Wheat || p.Kind == report.Mutant && p.Required:
			handMissed = true
		}
	}
	switch {
	case r.Reference == nil || r.Reference.Status != report.Pass:
		g.kind = "checkpoint"
	case handMissed:
		g.kind = "hand"
	case len(g.missed) > 0:
		g.kind = "weak"
	case r.OK:
		g.kind = "passes"
	default:
		g.kind, g.detail = "error", string(r.Verdict)+": "+r.Summary
	}
	return g
}

package budget

import (
	"bytes"
	"cmp"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/kept"
	"quoteflowlab.dev/kit/machine"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
)

// variantsAtOnce is how many broken variants are graded at a time: two per
// CPU the test may use, at most four. A grading mostly waits, but each runs
// dozens of tool processes against partners in this process, and a partner
// held back answers late: some properties' bounds are loose enough on a
// machine this busy that a broken variant passes them (min_ms_ignored at
// four at a time, load 12), and with GOMAXPROCS=1 four gradings share one
// thread for their partners.
func variantsAtOnce() int { return min(4, 2*runtime.GOMAXPROCS(0)) }

// slowest are the variants whose grading takes longest, slowest first: each
// waits out a hung or slow tool (4-7 s, against 1-3 s for the others),
// using next to no CPU while it waits.
var slowest = []string{"waits_uncharged", "connect_past_budget", "full_budget_read", "one_timeout", "hangs_with_child"}

// neverEnds are the variants whose tool never ends: the grader kills it at
// its bound for a tool run, whatever that bound is, so their gradings bound
// a run by hungBound, not the 15 s a student's run gets (every scenario of
// the property a variant breaks ends within 1 s on the reference tools).
var neverEnds = map[string]bool{"hangs_with_child": true}

const hungBound = 4 * time.Second

func slowRank(name string) int {
	if i := slices.Index(slowest, name); i >= 0 {
		return len(slowest) - i
	}
	return 0
}

// TestGraderRejectsEveryBrokenVariant is the proof that the E15 grader
// rejects every broken variant of the reference tools
// (lessons/15/checks/<name>.txtar, kind broken) for the property its bug
// breaks (its expect: line): `lab check E15 --answer <reference> --variant
// <name>` exits 1 with FAILED, the expected property FAILED, no build
// failure, and a next step saying the variant was rejected for it. A new
// variant file is picked up as it is written; nothing else to add.
//
// The reference tools are built once; each variant starts from a copy of
// those binaries, so only the tool whose source its overlay changes is
// linked again (go build finds the others up to date).
func TestGraderRejectsEveryBrokenVariant(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and grades the E15 tools once per broken variant")
	}
	t.Parallel() // beside TestReferencePasses and the package's other gradings
	root, l := repoRoot(t), e15(t)
	variants, err := check.Of(root, l, check.Tools, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(variants) == 0 {
		t.Fatalf("no broken variants in %s", l.Checks())
	}
	// The longest gradings start first and do not take a turn of the pool:
	// they mostly wait out a hung or slow tool, so holding a turn for it
	// kept the CPU-bound gradings queued behind them (39 s for the test
	// when they started last, 29 s first in the pool, 17 s beside it).
	slices.SortStableFunc(variants, func(a, b check.Check) int {
		return cmp.Compare(slowRank(b.Name), slowRank(a.Name))
	})
	cache := t.TempDir()
	ref := referenceBins(t)
	sem := make(chan struct{}, variantsAtOnce())
	var wg sync.WaitGroup
	for _, v := range variants {
		waits := slowRank(v.Name) > 0
		if !waits {
			sem <- struct{}{}
		}
		wg.Go(func() {
			if !waits {
				defer func() { <-sem }()
			}
			// t.Run may be called from several goroutines at once: this
			// pool, not -parallel, sets how many gradings share the machine.
			t.Run(v.Name, func(t *testing.T) { gradeVariant(t, root, l, cache, ref, v) })
		})
	}
	wg.Wait()
}

// gradeVariant grades the reference with v swapped in, as `lab check E15
// --variant` does, and checks that v is rejected for its property.
func gradeVariant(t *testing.T, root string, l course.Lesson, cache, ref string, v check.Check) {
	// Only the expected property's tool runs (as `lab check E15 --only`):
	// the check that rejects the variant is the full grading's own, and the
	// other tools' scenarios, which the variant leaves as the reference has
	// them, are TestReferencePasses's.
	o := grade.Request{Root: root, Lesson: l, Answer: l.Reference(), CacheDir: cache, Variant: v.Name, Only: v.Expect}
	// The directory check builds this variant's tools into.
	bins := filepath.Join(cache, l.Exercise(), strings.NewReplacer("/", "_", ".", "_").Replace(l.Reference())+"@"+v.Name)
	// The variant's tool (the one --only builds) is kept from one run of
	// this test to the next: go build finds it up to date and does not
	// link it again unless its source changed (the link is most of a
	// build's CPU: 0.2-0.3 s a tool, once per variant).
	keptDir, give := kept.Take("E15-variant-" + v.Name)
	defer give()
	if err := os.MkdirAll(filepath.Dir(bins), 0o755); err != nil {
		t.Fatal(err)
	}
	if keptDir == "" || os.Symlink(keptDir, bins) != nil {
		// Not kept: a copy of the reference tools, so that only the
		// tool the variant's overlay changes is linked.
		if err := copyDir(ref, bins); err != nil {
			t.Fatal(err)
		}
	}
	defer os.RemoveAll(bins)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var bound time.Duration
	if neverEnds[v.Name] {
		bound = hungBound
	}
	r := checkWithin(ctx, o, v, bound)
	if r.Verdict == report.Inconclusive {
		// The machine was too busy to judge a timing twice: what a student
		// is told to do then, check again when the machine is quieter, is
		// done once. Passed is never accepted, on either grading.
		var first bytes.Buffer
		r.WriteText(&first)
		t.Logf("inconclusive on a busy machine, graded again %s:\n%s", machine.WaitQuieter(ctx, quietWait), first.String())
		r = checkWithin(ctx, o, v, bound)
	}
	if r.Verdict == report.Inconclusive {
		// Inconclusive twice, as TestReferencePasses: no property passed
		// that the variant breaks, and the machine, measured busy, could
		// not tell its late timer from a wrong one. A variant the grader
		// excuses on a quiet machine still fails this test.
		var text bytes.Buffer
		r.WriteText(&text)
		t.Skipf("inconclusive twice, the machine too busy to judge a timing:\n%s", text.String())
	}
	var text bytes.Buffer
	r.WriteText(&text)
	out := text.String()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf(format, args...)
		t.Logf("lab check %s --answer %s --variant %s:\n%s", l.Exercise(), l.Reference(), v.Name, out)
	}
	if r.Verdict != report.Failed || r.OK {
		fail("verdict %s, want failed: the grader must reject broken variant %s (bug: %s)", r.Verdict, v.Name, v.Story)
		return
	}
	found := false
	for _, p := range r.Properties {
		switch {
		case strings.HasPrefix(p.Name, "build_") && !p.OK:
			fail("%s failed (%s): a broken variant must compile, so that the grader catches its bug by behaviour", p.Name, p.Detail)
		case p.Name == v.Expect:
			found = true
			if p.OK || p.Status == report.Busy || !p.Required {
				fail("%s: ok %v, status %q, required %v; want it FAILED (required): that is the property the bug of %s breaks", p.Name, p.OK, p.Status, p.Required, v.Name)
			}
			if p.Detail == "" {
				fail("%s failed without saying what was observed", p.Name)
			}
		}
	}
	if !found {
		fail("the report has no property %s", v.Expect)
	}
	if neverEnds[v.Name] && !strings.Contains(out, "was killed (with every process it started)") {
		fail("the report does not say that the tool that never ends was killed, with every process it started")
	}
	// What the reader sees, as `lab check` prints it.
	for _, want := range []string{
		`(?m)^answer: ` + regexp.QuoteMeta(l.Reference()) + ` +with broken variant: ` + regexp.QuoteMeta(v.Name) + `$`,
		`(?m)^  FAILED +required +` + regexp.QuoteMeta(v.Expect) + `$`,
		`(?m)^verdict: FAILED: .*\b` + regexp.QuoteMeta(v.Expect) + `\b`,
		`(?m)^next: broken variant ` + regexp.QuoteMeta(v.Name) + ` rejected for ` + regexp.QuoteMeta(v.Expect) + `, as it must be`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			fail("the report does not match %s", want)
		}
	}
}

var (
	refOnce sync.Once
	refDir  string
	refGive func() // hands refDir back at the end
	refErr  string
)

// referenceBins builds the reference tools once per test binary and
// returns their directory; tests copy them, never write into it.
func referenceBins(t *testing.T) string {
	t.Helper()
	refOnce.Do(func() {
		dir, give := kept.Take("E15-reference")
		if dir == "" {
			var err error
			if dir, err = os.MkdirTemp("", "e15-reference-"); err != nil {
				refErr = err.Error()
				return
			}
			give = func() { os.RemoveAll(dir) }
		}
		refDir, refGive = dir, give
		// One go build of the five tools, which finds them up to date when
		// nothing they are built from changed since the last run (nothing
		// runs in this folder).
		root, l := repoRoot(t), e15(t)
		var pkgs []string
		for _, tool := range Tools {
			pkgs = append(pkgs, "./"+tool)
		}
		src := filepath.Join(root, filepath.FromSlash(l.Reference()))
		if res := runner.BuildInto(context.Background(), src, "", dir, pkgs...); !res.OK() {
			refErr = res.Output + " " + errText(res.Err)
		}
	})
	if refErr != "" {
		t.Fatalf("building the reference tools: %s", refErr)
	}
	return refDir
}

// TestMain hands the shared reference build back.
func TestMain(m *testing.M) {
	code := m.Run()
	if refGive != nil {
		refGive()
	}
	os.Exit(code)
}

// copyDir copies the files of src (one level) into dst, keeping their
// modes, so go build finds them up to date.
func copyDir(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fi.Mode())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"quoteflowlab.dev/lab/grade15"
	"quoteflowlab.dev/lab/internal/check"
	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/mutant"
)

// testTimeout bounds one `go test` run of lab verify.
const testTimeout = 10 * time.Minute

// A verifyItem is one thing the instructor's run proves.
type verifyItem struct {
	name string
	run  func(ctx context.Context) itemResult
}

// itemResult is one row of lab verify's summary (and of its JSON).
type itemResult struct {
	Name      string        `json:"name"`
	OK        bool          `json:"ok"`
	Summary   string        `json:"summary"`
	Detail    string        `json:"detail,omitempty"` // shown when the item fails
	Notes     []string      `json:"notes,omitempty"`  // shown always
	ElapsedMS int64         `json:"elapsed_ms"`
	Report    *check.Report `json:"report,omitempty"`

	output string // everything the command printed, for callers to dig in
}

// verifyResult is the JSON document of `lab verify --json`.
type verifyResult struct {
	OK        bool         `json:"ok"`
	Passed    int          `json:"passed"`
	Total     int          `json:"total"`
	Items     []itemResult `json:"items"`
	ElapsedMS int64        `json:"elapsed_ms"`
}

// runVerify implements `lab verify [--json] [FILTER...]`: the instructor's
// run over every checkpoint, answer, starter, mutant and the provider.
func runVerify(args []string, stdout, stderr io.Writer) int {
	fset := newFlags("verify", "[--json] [--deep] [--no-cache] [FILTER...]   (FILTER: run only items whose name contains it, e.g. E14)", stderr)
	asJSON := fset.Bool("json", false, "print the results as one JSON document (progress goes to stderr)")
	noCache := fset.Bool("no-cache", false, "rerun tests whose results go test has cached (go test -count=1)")
	deep := fset.Bool("deep", false, "also run each checkpoint's own tests against each of its mutants (slower)")
	filters, code, ok := parseArgs(fset, args)
	if !ok {
		return code
	}
	root, ok := findRoot("verify", stderr)
	if !ok {
		return 1
	}
	items := verifyItems(root, *noCache)
	if *deep {
		items = append(items, deepItems(root)...)
	}
	if len(filters) > 0 {
		items = slices.DeleteFunc(items, func(it verifyItem) bool {
			return !slices.ContainsFunc(filters, func(f string) bool { return strings.Contains(strings.ToLower(it.name), strings.ToLower(f)) })
		})
		if len(items) == 0 {
			return usageError(fset, stderr, "no item matches %s", strings.Join(filters, " "))
		}
	}
	progress := stdout
	if *asJSON {
		progress = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	res := verify(ctx, root, items, progress)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "lab verify: %v\n", err)
			return 1
		}
	} else {
		writeSummary(stdout, res)
	}
	if !res.OK {
		return 1
	}
	return 0
}

func verify(ctx context.Context, root string, items []verifyItem, progress io.Writer) verifyResult {
	start := time.Now()
	fmt.Fprintf(progress, "lab verify: %d items in %s\n", len(items), root)
	res := verifyResult{Total: len(items), Items: []itemResult{}}
	for i, it := range items {
		if ctx.Err() != nil {
			fmt.Fprintf(progress, "interrupted: %d items not run\n", len(items)-i)
			break
		}
		fmt.Fprintf(progress, "[%2d/%d] %s ... ", i+1, len(items), it.name)
		t := time.Now()
		r := it.run(ctx)
		r.Name, r.ElapsedMS = it.name, time.Since(t).Milliseconds()
		word := "ok"
		if !r.OK {
			word = "FAIL"
		} else {
			res.Passed++
		}
		fmt.Fprintf(progress, "%s (%s) %s\n", word, secondsOf(r.ElapsedMS), r.Summary)
		for _, n := range r.Notes {
			fmt.Fprintf(progress, "        %s\n", n)
		}
		if !r.OK && r.Detail != "" {
			for line := range strings.SplitSeq(strings.TrimRight(r.Detail, "\n"), "\n") {
				fmt.Fprintf(progress, "        | %s\n", line)
			}
		}
		res.Items = append(res.Items, r)
	}
	res.OK = res.Passed == res.Total
	res.ElapsedMS = time.Since(start).Milliseconds()
	return res
}

func writeSummary(w io.Writer, res verifyResult) {
	width := 0
	for _, r := range res.Items {
		width = max(width, len(r.Name))
	}
	fmt.Fprintf(w, "\nsummary:\n  %-6s %-*s  %7s\n", "result", width, "item", "time")
	for _, r := range res.Items {
		word := "ok"
		if !r.OK {
			word = "FAIL"
		}
		fmt.Fprintf(w, "  %-6s %-*s  %7s\n", word, width, r.Name, secondsOf(r.ElapsedMS))
	}
	verdict := "PASSED"
	if !res.OK {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "\nverify: %s: %d/%d items passed in %s\n", verdict, res.Passed, res.Total, secondsOf(res.ElapsedMS))
}

func secondsOf(ms int64) string { return fmt.Sprintf("%.1fs", float64(ms)/1000) }

// verifyItems discovers what there is to verify, in the order a reader
// expects: checkpoints, mutant definitions, answers, starters, provider.
func verifyItems(root string, noCache bool) []verifyItem {
	var items []verifyItem
	testArgs := func(pkgs ...string) []string {
		if noCache {
			return append([]string{"-count=1"}, pkgs...)
		}
		return pkgs
	}
	for _, n := range checkpointNumbers(root) {
		dir := filepath.Join(root, "checkpoints", n)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			continue
		}
		items = append(items, verifyItem{
			name: "checkpoint " + n + ": its own tests, standalone",
			run: func(ctx context.Context) itemResult {
				return goTest(ctx, dir, "GOWORK=off", testArgs("./...")...)
			},
		})
	}
	for _, l := range course.Lessons {
		if check.HasGrader(l.Exercise()) {
			continue
		}
		items = append(items, verifyItem{
			name: l.Exercise() + " mutants: made from the current checkpoint " + strconv.Itoa(l.Number),
			run:  func(context.Context) itemResult { return mutantsCurrent(root, l) },
		})
	}
	for _, l := range course.Lessons {
		if exists(root, l.Reference()) {
			what := ": passes, catches every mutant"
			if check.HasGrader(l.Exercise()) {
				what = ": passes the grader"
			}
			items = append(items, verifyItem{
				name: l.Exercise() + " reference answer " + l.Reference() + what,
				run:  func(ctx context.Context) itemResult { return referenceAnswer(ctx, root, l) },
			})
		}
	}
	if exists(root, "lab/grade15") {
		items = append(items, verifyItem{
			name: "E15 grader: rejects every broken variant of the reference tools",
			run:  func(ctx context.Context) itemResult { return graderBrokenVariants(ctx, root) },
		})
	}
	for _, l := range course.Lessons {
		if exists(root, l.Starter()) {
			items = append(items, verifyItem{
				name: l.Exercise() + " starter " + l.Starter() + ": reported as not started",
				run:  func(ctx context.Context) itemResult { return starter(ctx, root, l) },
			})
		}
	}
	if exists(root, "provider") {
		items = append(items, verifyItem{
			name: "provider: contract tests (go test ./provider/)",
			run: func(ctx context.Context) itemResult {
				return goTest(ctx, root, "GOWORK=off", testArgs("./provider/")...)
			},
		})
	}
	if scripts, _ := filepath.Glob(filepath.Join(root, "testscripts", "provider_*.txtar")); len(scripts) > 0 {
		items = append(items, verifyItem{
			name: "provider: contract over real HTTP (testscripts/provider_*.txtar)",
			run: func(ctx context.Context) itemResult {
				return scriptsItem(ctx, root, "provider_", len(scripts), testArgs("-v", "-run", "^TestScripts$/^provider_", "./testscripts/"))
			},
		})
	}
	return items
}

// scriptsItem runs the testscripts whose names start with prefix (args
// select them) and wants want of them to pass.
func scriptsItem(ctx context.Context, root, prefix string, want int, args []string) itemResult {
	res := goTest(ctx, root, "GOWORK=off", args...)
	if !res.OK {
		return res
	}
	passed := 0
	for line := range strings.SplitSeq(res.output, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--- PASS: TestScripts/"+prefix) {
			passed++
		}
	}
	if passed != want {
		return itemResult{Summary: fmt.Sprintf("%d of %d %s* scripts passed", passed, want, prefix), Detail: tail(res.output, 40), output: res.output}
	}
	res.Summary = fmt.Sprintf("%d %s* scripts passed", passed, prefix)
	if strings.Contains(res.output, "(cached)") {
		res.Summary += " (cached; --no-cache reruns)"
	}
	return res
}

func exists(root, slashPath string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(slashPath)))
	return err == nil
}

// goTest runs `go test args...` in dir with one extra environment setting.
func goTest(ctx context.Context, dir, env string, args ...string) itemResult {
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"test"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return itemResult{Summary: "go test did not finish within " + testTimeout.String(), Detail: tail(string(out), 40), output: string(out)}
		}
		return itemResult{Summary: "go test failed: " + err.Error(), Detail: tail(string(out), 40), output: string(out)}
	}
	ok, cached := 0, 0
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.HasPrefix(line, "ok ") {
			ok++
			if strings.Contains(line, "(cached)") {
				cached++
			}
		}
	}
	summary := fmt.Sprintf("%d test package(s) ok", ok)
	if ok == 0 {
		// go test exits 0 when a pattern matches no package or -run no test
		return itemResult{Summary: "go test ran no test package", Detail: tail(string(out), 40), output: string(out)}
	}
	if cached > 0 {
		summary += fmt.Sprintf(" (%d cached: unchanged since they last passed; --no-cache reruns)", cached)
	}
	return itemResult{OK: true, Summary: summary, output: string(out)}
}

// variantScripts is the name prefix of the testscripts that prove the E15
// grader: testscripts/e15_variant_<name>.txtar runs `lab check E15 --answer
// lessons/16/answer_previous --variant <name>` and wants the broken variant
// <name> (testscripts/mutants/E15/<name>/) rejected for the property its bug
// breaks.
const variantScripts = "e15_variant_"

// graderBrokenVariants runs the E15 grader's own proof, the e15_variant_*
// testscripts: every broken variant of the reference tools is rejected. It
// always reruns (-count=1): the grader builds and runs the tools as
// subprocesses, whose inputs go test's cache does not see. A script skipped
// on this system (a variant caught only against the Linux blackhole) is
// noted; at least one must have run, and every variant must have a script.
func graderBrokenVariants(ctx context.Context, root string) itemResult {
	names, err := grade15.VariantNames(root)
	if err != nil {
		return itemResult{Summary: err.Error()}
	}
	var missing []string
	for _, n := range names {
		if !exists(root, "testscripts/"+variantScripts+n+".txtar") {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return itemResult{Summary: fmt.Sprintf("broken variants with no testscripts/%s<name>.txtar: %s", variantScripts, strings.Join(missing, ", "))}
	}
	res := goTest(ctx, root, "GOWORK=off", "-count=1", "-v", "-run", "^TestScripts$/^"+variantScripts, "./testscripts/")
	var rejected, skipped []string
	for line := range strings.SplitSeq(res.output, "\n") {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "--- PASS: TestScripts/"+variantScripts); ok {
			rejected = append(rejected, strings.Fields(name)[0])
		}
		if name, ok := strings.CutPrefix(line, "--- SKIP: TestScripts/"+variantScripts); ok {
			skipped = append(skipped, strings.Fields(name)[0])
		}
	}
	if !res.OK {
		return res
	}
	if len(rejected) == 0 {
		return itemResult{Summary: "no " + variantScripts + "* script ran (all skipped, or missing?)", Detail: tail(res.output, 40), output: res.output}
	}
	slices.Sort(rejected)
	slices.Sort(skipped)
	res.Summary = fmt.Sprintf("%d broken variants rejected: %s", len(rejected), strings.Join(rejected, ", "))
	if len(skipped) > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("skipped on this system: %s", strings.Join(skipped, ", ")))
	}
	return res
}

// mutantsCurrent checks that each of l's mutant definitions replaces a file
// that exists, was made from that file's current version, and differs from it.
func mutantsCurrent(root string, l course.Lesson) itemResult {
	ms, err := mutant.Load(root, l.Exercise())
	if err != nil {
		return itemResult{Summary: err.Error()}
	}
	if len(ms) == 0 {
		return itemResult{Summary: "no mutant definitions in " + mutant.Dir + "/" + l.Exercise()}
	}
	var problems []string
	for _, m := range ms {
		if err := m.CheckCurrent(root); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return itemResult{Summary: fmt.Sprintf("%d of %d definitions need attention", len(problems), len(ms)), Detail: strings.Join(problems, "\n")}
	}
	return itemResult{OK: true, Summary: fmt.Sprintf("%d definitions", len(ms))}
}

// referenceAnswer checks the published answer: it must pass and catch every
// mutant, bonus ones included (the lesson promises the reference catches them).
func referenceAnswer(ctx context.Context, root string, l course.Lesson) itemResult {
	r := check.Check(ctx, check.Options{Root: root, Lesson: l, Answer: l.Reference(), CacheDir: verifyCache(root)})
	res := itemResult{OK: r.OK, Summary: r.Summary, Report: &r}
	var missed []string
	for _, p := range r.Properties {
		if !p.OK {
			missed = append(missed, p.Name)
		}
	}
	if r.OK && len(missed) > 0 {
		res.OK = false
		res.Summary = "passes, but misses bonus mutants the reference must catch: " + strings.Join(missed, ", ")
	}
	if !res.OK {
		var b strings.Builder
		r.WriteText(&b)
		res.Detail = b.String()
	}
	return res
}

// starter checks that the exercise's starter is reported as not started.
func starter(ctx context.Context, root string, l course.Lesson) itemResult {
	r := check.Check(ctx, check.Options{Root: root, Lesson: l, Answer: l.Starter(), CacheDir: verifyCache(root)})
	res := itemResult{OK: r.Verdict == check.NotStarted, Summary: "verdict " + string(r.Verdict), Report: &r}
	if !res.OK {
		var b strings.Builder
		r.WriteText(&b)
		res.Detail = b.String()
	}
	return res
}

// verifyCache keeps verify's binaries apart from a student's own checks.
func verifyCache(root string) string {
	return filepath.Join(course.StateDir(root), "cache", "verify")
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

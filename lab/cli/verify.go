package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
)

// testTimeout bounds one `go test` run of lab verify.
const testTimeout = 10 * time.Minute

// A verifyItem is one thing the instructor's run proves: a group of tests.
type verifyItem struct {
	name string
	hash string // lab verify --docs: docsHash of what its figures depend on, for DocsRecord
	// dir and args say which go test run holds the item's tests; items
	// with the same run share it. match picks the item's tests from it.
	dir   string
	env   string
	args  []string
	match func(pkg, test string) bool // nil: every test of the run
	want  int                         // scripts: how many must have passed (0: any number > 0)
	// run, when set, is the item's own work instead of a go test run.
	run func(ctx context.Context) itemResult
}

// itemResult is one row of lab verify's summary (and of its JSON).
type itemResult struct {
	Name    string   `json:"name"`
	OK      bool     `json:"ok"`
	Summary string   `json:"summary"`
	Detail  string   `json:"detail,omitempty"` // shown when the item fails: the failing tests and their output
	Notes   []string `json:"notes,omitempty"`  // shown always
	// Inconclusive: not OK, and not a failure of the code either: the
	// machine was too busy for a timed item to mean anything (lab verify
	// --docs: figures that drifted twice, the second time on a busy machine).
	Inconclusive bool  `json:"inconclusive,omitempty"`
	ElapsedMS    int64 `json:"elapsed_ms"`
}

// verifyResult is the JSON document of `lab verify --json`.
type verifyResult struct {
	SchemaVersion int          `json:"schema_version"`
	OK            bool         `json:"ok"`
	Passed        int          `json:"passed"`
	Total         int          `json:"total"`
	Items         []itemResult `json:"items"`
	ElapsedMS     int64        `json:"elapsed_ms"`
}

// runVerify implements `lab verify [--json] [--deep] [FILTER...]`: the
// instructor's run over every checkpoint, answer, starter, mutant and the
// provider, as groups of the suite's own tests.
func runVerify(args []string, stdout, stderr io.Writer) int {
	f := form{name: "verify", usage: "[--json] [--deep | --docs] [--no-cache] [FILTER...]   (FILTER: run only items whose name contains it, e.g. E14)\n   or: lab verify --killset [--runs N] [ENN...]\n   or: lab verify --wheats [--runs N] [ENN...]\n   or: lab verify --weak [--parallel N] [--sample N --seed S] [ENN...]", max: math.MaxInt}
	fset := f.flags(stderr)
	asJSON := fset.Bool("json", false, "print the results as one JSON document (progress goes to stderr)")
	noCache := fset.Bool("no-cache", false, "rerun tests whose results go test has cached (go test -count=1)")
	deep := fset.Bool("deep", false, "also run each checkpoint's own tests against each of its mutants (slower)")
	killset := fset.Bool("killset", false, "instructor: generate the mutants of each named exercise's scope (every mutant-graded one when none is named), run the reference answer --runs times on each, and write lessons/NN/checks/generated.txt")
	wheats := fset.Bool("wheats", false, "instructor: generate the wheats each named exercise's allowed.txt allows (every mutant-graded one when none is named), run the reference answer --runs times on each, and write lessons/NN/checks/wheats.txt")
	weak := fset.Bool("weak", false, "instructor: grade each first-order mutant of each named exercise's reference answer with lab check, and list the weak answers among them: those every hand-written check passes and only a generated one rejects (writes nothing)")
	parallel := fset.Int("parallel", 2, "with --weak: checks at once")
	sample := fset.Int("sample", 0, "with --weak: grade only this many of each exercise's answer mutants, drawn with --seed (0: all)")
	seed := fset.Uint64("seed", 1, "with --weak --sample: the draw")
	runs := fset.Int("runs", 3, "with --killset or --wheats: runs of the reference answer per generated mutant or wheat (at least 3)")
	recorded := fset.Bool("recorded", false, "with --docs: run only the demos whose inputs changed since they last passed, as "+DocsRecord+" records (CI)")
	docs := fset.Bool("docs", false, "only check the lesson pages' figures: run each `lab demo` a page shows and compare its figures with the page's, within the tolerances written beside them (a demo whose figures drift is run once more, and that run decides)")
	c, code, ok := f.parse(fset, args, stderr)
	if !ok {
		return code
	}
	if *killset && *wheats {
		return usageError(fset, stderr, "--killset and --wheats are two runs: give one")
	}
	if *weak {
		return runWeak(c.root, c.pos, *parallel, *sample, *seed, stdout, stderr)
	}
	if *killset || *wheats {
		return runKillset(c.root, c.pos, *runs, *wheats, stdout, stderr)
	}
	lessons, ok := loadLessons("verify", c.root, stderr)
	if !ok {
		return 1
	}
	items := verifyItems(c.root, lessons)
	if *docs {
		items = docsItems(c.root, lessons)
		if len(items) == 0 {
			fmt.Fprintln(stderr, "lab verify --docs: no page has a <!-- figures: lab demo ... --> marker")
			return 1
		}
	}
	if *deep {
		items = append(items, deepItems(c.root, lessons)...)
	}
	if len(c.pos) > 0 {
		items = slices.DeleteFunc(items, func(it verifyItem) bool {
			return !slices.ContainsFunc(c.pos, func(f string) bool { return strings.Contains(strings.ToLower(it.name), strings.ToLower(f)) })
		})
		if len(items) == 0 {
			return usageError(fset, stderr, "no item matches %s", strings.Join(c.pos, " "))
		}
	}
	if *recorded && !*docs {
		return usageError(fset, stderr, "--recorded goes with --docs")
	}
	var rec map[string]string
	if *docs {
		var err error
		if rec, err = readDocsRecord(c.root); err != nil {
			return failed(stderr, "lab verify --docs", err)
		}
		if *recorded {
			for i, it := range items {
				if it.hash != "" && rec[it.name] == it.hash {
					items[i].run = func(context.Context) itemResult {
						return itemResult{OK: true, Summary: "passed as " + DocsRecord + " records: nothing its figures depend on changed since"}
					}
				}
			}
		}
	}
	progress := stdout
	if *asJSON {
		progress = stderr
	}
	ctx, stop := runner.StopContext()
	defer stop()

	res := verify(ctx, c.root, items, *noCache, progress)
	if *docs {
		// Record what passed; forget what failed (an inconclusive run says
		// nothing either way).
		for i, r := range res.Items {
			switch it := items[i]; {
			case it.hash == "":
			case r.OK:
				rec[it.name] = it.hash
			case !r.Inconclusive:
				delete(rec, it.name)
			}
		}
		if err := writeDocsRecord(c.root, rec); err != nil {
			fmt.Fprintf(stderr, "lab verify --docs: %v\n", err)
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, res); err != nil {
			return failed(stderr, "lab verify", err)
		}
	} else {
		writeSummary(stdout, res)
	}
	switch {
	case res.inconclusive():
		return 3
	case !res.OK:
		return 1
	}
	return 0
}

// verify runs each go test the items need once, then reads every item's
// tests out of its run.
func verify(ctx context.Context, root string, items []verifyItem, noCache bool, progress io.Writer) verifyResult {
	start := time.Now()
	fmt.Fprintf(progress, "lab verify: %d items in %s\n", len(items), root)
	res := verifyResult{SchemaVersion: report.SchemaVersion, Total: len(items), Items: []itemResult{}}
	runs := map[string]*testRun{}
	for i, it := range items {
		fmt.Fprintf(progress, "[%2d/%d] %s ... ", i+1, len(items), it.name)
		began := time.Now()
		var r itemResult
		if it.run != nil {
			r = it.run(ctx)
		} else {
			key := it.dir + "\x00" + it.env + "\x00" + strings.Join(it.args, "\x00")
			run, done := runs[key]
			if !done {
				args := it.args
				if noCache {
					args = append([]string{"-count=1"}, args...)
				}
				run = goTestJSON(ctx, it.dir, it.env, args...)
				runs[key] = run
			}
			r = run.item(it)
		}
		r.Name, r.ElapsedMS = it.name, time.Since(began).Milliseconds()
		word := r.word()
		fmt.Fprintf(progress, "%s (%s) %s\n", word, report.Seconds(r.ElapsedMS), r.Summary)
		if !r.OK && r.Detail != "" {
			report.Indent(progress, "    | ", r.Detail)
		}
		for _, n := range r.Notes {
			fmt.Fprintf(progress, "    note: %s\n", n)
		}
		res.Items = append(res.Items, r)
		if r.OK {
			res.Passed++
		}
		if ctx.Err() != nil {
			break
		}
	}
	res.OK = res.Passed == res.Total
	res.ElapsedMS = time.Since(start).Milliseconds()
	return res
}

func writeSummary(w io.Writer, res verifyResult) {
	fmt.Fprintln(w, "\nsummary:")
	width := 0
	for _, it := range res.Items {
		width = max(width, len(it.Name))
	}
	for _, it := range res.Items {
		fmt.Fprintf(w, "  %-6s %-*s  %s\n", it.word(), width, it.Name, report.Seconds(it.ElapsedMS))
	}
	verdict := "PASSED"
	switch {
	case res.inconclusive():
		verdict = "INCONCLUSIVE (the machine was too busy; run it again when it is quieter)"
	case !res.OK:
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "verify: %s: %d/%d items passed in %s\n", verdict, res.Passed, res.Total, report.Seconds(res.ElapsedMS))
}

// word is the item's verdict in the progress and the summary.
func (r itemResult) word() string {
	switch {
	case r.OK:
		return "ok"
	case r.Inconclusive:
		return "INCONCLUSIVE"
	}
	return "FAILED"
}

// inconclusive: no item failed, and some could not be judged on a busy
// machine (exit 3, as lab check's inconclusive).
func (res verifyResult) inconclusive() bool {
	some := false
	for _, it := range res.Items {
		if !it.OK && !it.Inconclusive {
			return false
		}
		some = some || it.Inconclusive
	}
	return some
}

// verifyItems discovers what there is to verify, in the order a reader
// expects: checkpoints, exercises (answer, starter, mutants or grader),
// provider, the lab command.
func verifyItems(root string, lessons []course.Lesson) []verifyItem {
	var items []verifyItem
	for _, n := range checkpointNumbers(root) {
		dir := filepath.Join(root, "checkpoints", n)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
			continue
		}
		items = append(items, verifyItem{
			name: "checkpoint " + n + ": its own tests, standalone (GOWORK=off go test ./...)",
			dir:  dir, env: "GOWORK=off", args: []string{"./..."},
		})
	}
	scripts := scriptNames(root)
	scriptRun := func(what, prefix string) verifyItem {
		var names []string
		for _, s := range scripts {
			if strings.HasPrefix(s, prefix) {
				names = append(names, regexp.QuoteMeta(s))
			}
		}
		return verifyItem{
			name: what + " (scripts " + prefix + "*)", dir: root, env: "GOWORK=off",
			args: []string{"-run", "^TestScripts$/^(" + strings.Join(names, "|") + ")$", "./testscripts/"},
			match: func(_, test string) bool {
				s, ok := strings.CutPrefix(test, "TestScripts/")
				return ok && strings.HasPrefix(strings.SplitN(s, "/", 2)[0], prefix)
			},
			want: max(len(names), 1),
		}
	}
	for _, l := range lessons {
		g := graderFor(root, l)
		items = append(items, scriptRun(l.Exercise()+": "+g.Proves(), strings.ToLower(l.Exercise())+"_"))
		if own, ok := g.(*grade.Program); ok {
			items = append(items, graderRun(root, l, own.Dir))
		}
	}
	items = append(items,
		verifyItem{
			name: "course: every lesson complete, every check's edit applies (go test ./lab/...)",
			dir:  root, env: "GOWORK=off", args: []string{"./lab/..."},
		},
		verifyItem{
			name: "provider: contract tests (go test ./provider/)",
			dir:  root, env: "GOWORK=off", args: []string{"./provider/"},
		},
	)
	for _, g := range []struct{ prefix, what string }{
		{"provider_", "provider: contract over real HTTP"},
		{"checkpoint_", "checkpoints: live against the provider"},
		{"lab_", "lab command"},
	} {
		items = append(items, scriptRun(g.what, g.prefix))
	}
	return items
}

// graderRun is the item that runs the tests of a lesson's own grader (its
// folder dir): they must pass, and among them, for each broken check of
// the lesson, a case named after it, which grades the reference with that
// check swapped in and sees it rejected for its property.
func graderRun(root string, l course.Lesson, dir string) verifyItem {
	pkgs := "./" + dir + "/..."
	it := verifyItem{
		name: l.Exercise() + ": the grader's own tests; it rejects every broken check for its property (go test " + pkgs + ", a case per " + l.Checks() + "/*.txtar of kind broken)",
		dir:  root, env: "GOWORK=off", args: []string{pkgs},
	}
	it.run = func(ctx context.Context) itemResult {
		return graderResult(root, l, it, goTestJSON(ctx, root, it.env, it.args...))
	}
	return it
}

// graderResult is graderRun's item read out of its go test run.
func graderResult(root string, l course.Lesson, it verifyItem, run *testRun) itemResult {
	r := run.item(it)
	broken, err := check.Of(root, l, check.Tools, "")
	if err != nil || len(broken) == 0 {
		return itemResult{Summary: fmt.Sprintf("no broken checks in %s (%v)", l.Checks(), err)}
	}
	var missing []string
	for _, b := range broken {
		if !run.passedCase(b.Name) {
			missing = append(missing, b.Name)
		}
	}
	if r.OK && len(missing) > 0 {
		r.OK = false
		r.Summary = fmt.Sprintf("no passing case for %d of %d broken checks: %s", len(missing), len(broken), strings.Join(missing, ", "))
	} else if r.OK {
		r.Summary += fmt.Sprintf(", with a case for each of the %d broken checks", len(broken))
	}
	return r
}

// passedCase reports whether a subtest called name passed.
func (run *testRun) passedCase(name string) bool {
	for _, t := range run.tests {
		if strings.HasSuffix(t.test, "/"+name) && t.action == "pass" {
			return true
		}
	}
	return false
}

// scriptNames lists the testscripts, without .txtar.
func scriptNames(root string) []string {
	files, _ := filepath.Glob(filepath.Join(root, "testscripts", "*.txtar"))
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".txtar"))
	}
	return names
}

// testRun is one `go test -json` run, read into its tests.
type testRun struct {
	res    runner.Result
	tests  map[string]*testResult // "pkg\x00test" → result; test "" is the package
	order  []string
	cached int
}

type testResult struct {
	pkg, test string
	action    string // pass, fail, skip
	output    strings.Builder
}

// goTestJSON runs `go test -json args` in dir and reads its events.
func goTestJSON(ctx context.Context, dir, env string, args ...string) *testRun {
	out := runner.Buffer{Limit: 256 << 20} // every event: a cut stream loses the tests' results
	res := runner.Run(ctx, runner.Cmd{
		Name: runner.GoCommand(), Args: append([]string{"test", "-json"}, args...),
		Dir: dir, Env: []string{env}, Timeout: testTimeout, Stdout: &out,
	})
	run := readTestEvents(out.Bytes())
	run.res = res
	return run
}

// readTestEvents reads the events of `go test -json`.
func readTestEvents(data []byte) *testRun {
	run := &testRun{tests: map[string]*testResult{}}
	for line := range strings.SplitSeq(string(data), "\n") {
		var ev struct {
			Action, Package, Test, Output string
		}
		if json.Unmarshal([]byte(line), &ev) != nil || ev.Action == "" {
			continue
		}
		key := ev.Package + "\x00" + ev.Test
		t, ok := run.tests[key]
		if !ok {
			t = &testResult{pkg: ev.Package, test: ev.Test}
			run.tests[key] = t
			run.order = append(run.order, key)
		}
		switch ev.Action {
		case "output":
			if t.output.Len() < 32<<10 {
				t.output.WriteString(ev.Output)
			}
			if ev.Test == "" && strings.Contains(ev.Output, "(cached)") {
				run.cached++
			}
		case "pass", "fail", "skip":
			t.action = ev.Action
		}
	}
	return run
}

// item reads one item's tests out of the run.
func (run *testRun) item(it verifyItem) itemResult {
	var passed, failed, skipped []string
	var detail strings.Builder
	pkgs := 0
	for _, key := range run.order {
		t := run.tests[key]
		if it.match != nil && !it.match(t.pkg, t.test) {
			continue
		}
		if t.test == "" {
			if t.action == "pass" {
				pkgs++
			}
			if t.action == "fail" && !hasFailedTest(run, t.pkg) {
				failed = append(failed, t.pkg+" (the package: build or setup failed)")
				fmt.Fprintf(&detail, "--- %s:\n%s", t.pkg, tailLines(t.output.String(), 30))
			}
			continue
		}
		if strings.Contains(strings.TrimPrefix(t.test, "TestScripts/"), "/") {
			continue // a subtest: its test says
		}
		switch t.action {
		case "pass":
			passed = append(passed, t.test)
		case "skip":
			skipped = append(skipped, t.test)
		case "fail", "":
			failed = append(failed, t.test)
			fmt.Fprintf(&detail, "--- FAIL: %s (%s)\n%s", t.test, t.pkg, tailLines(t.output.String(), 40))
		}
	}
	r := itemResult{Detail: strings.TrimRight(detail.String(), "\n")}
	switch {
	case len(failed) > 0:
		r.Summary = fmt.Sprintf("%d failed: %s", len(failed), strings.Join(failed, ", "))
	case run.res.Err != nil || run.res.TimedOut:
		r.Summary = "go test did not finish: " + strings.TrimSpace(fmt.Sprint(run.res.Err))
		if run.res.TimedOut {
			r.Summary += fmt.Sprintf(" (killed after %s)", testTimeout)
		}
		r.Detail = tailLines(run.res.Output, 30)
	case len(passed) == 0 && pkgs == 0:
		r.Summary = "no test ran (all skipped, or none match?)"
		r.Detail = tailLines(run.res.Output, 30)
	case it.want > 0 && len(passed) < it.want:
		// A case without a pass or a fail of its own (go test's JSON lost
		// its lines, or it never ran): the raw output says what happened.
		r.Summary = fmt.Sprintf("%d of %d passed", len(passed), it.want)
		r.Detail = tailLines(run.res.Output, 40)
	default:
		r.OK = true
		r.Summary = fmt.Sprintf("%d tests passed", len(passed))
		if it.want > 0 {
			r.Summary = fmt.Sprintf("%d scripts passed: %s", len(passed), strings.ReplaceAll(strings.Join(passed, ", "), "TestScripts/", ""))
		}
		if run.cached > 0 {
			r.Notes = append(r.Notes, "some results are cached: unchanged since they last passed (--no-cache reruns)")
		}
	}
	if len(skipped) > 0 {
		r.Notes = append(r.Notes, "skipped on this system: "+strings.Join(skipped, ", "))
	}
	return r
}

func hasFailedTest(run *testRun, pkg string) bool {
	for _, t := range run.tests {
		if t.pkg == pkg && t.test != "" && t.action == "fail" {
			return true
		}
	}
	return false
}

func exists(root, slashPath string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(slashPath)))
	return err == nil
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n") + "\n"
}

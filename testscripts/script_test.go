// Package testscripts runs the course's command-level scripts
// (testscripts/*.txtar) with github.com/rogpeppe/go-internal/testscript.
//
// Commands available in every script, besides testscript's built-ins:
//
//	exec lab ARGS...
//	    The lab command (cli.Main) run as a subprocess of the test binary:
//	    no build step; `exec` is required. `exec lab provider ... &name&`
//	    runs it in the background (`kill -INT name`, `wait name`); testscript
//	    interrupts background commands left when the script ends.
//
//	provider [-latency-scale F] [-max-keys N]
//	    Starts an in-process provider lab on free loopback ports for this
//	    script (stopped when the script ends) and sets
//	    $PROVIDER_URL   e.g. http://127.0.0.1:40123
//	    $PROVIDER_ADDR  e.g. 127.0.0.1:40123
//	    $BLACKHOLE_ADDR e.g. 127.0.0.1:40124 ("" where unsupported: guard with [linux])
//	    The default latency scale is 1 (the documented delays).
//
//	starter ENN DIR
//	    Writes exercise ENN's starter, as committed (git HEAD), into DIR, so
//	    a script checks the starter whatever a student has written in
//	    lessons/NN/exercise. Outside a git checkout it copies the working
//	    tree's files and says so.
//
//	course DIR [NAME...]
//	    Copies go.mod, go.sum, checkpoints/ and lessons/ of the repository
//	    into DIR, and each NAME (a file or folder at the root: lab, README.md,
//	    ...): a course of the script's own, for an answer that writes into
//	    the course (scripts run at once share $REPO).
//
//	[!] alive PIDFILE
//	    Succeeds if a process whose pid PIDFILE holds (one pid a line) still
//	    runs (a zombie counts as gone); negated, if none does; after letting
//	    a kill land for up to a second.
//
//	[!] running TOKEN
//	    Succeeds if a process (zombies aside) carries TOKEN in its command
//	    line (Linux: /proc); negated, if none does, after letting a kill land
//	    for up to a second.
//
//	lines FILE N
//	    Succeeds if FILE holds exactly N lines that are not empty.
//
//	[!] leftover LISTFILE
//	    Succeeds if a path LISTFILE names (one a line) still exists; negated,
//	    if none does.
//
//	freeport VAR
//	    Sets $VAR to a port number that was free on 127.0.0.1 a moment ago,
//	    drawn below the kernel's ephemeral range so no listener on :0 takes it.
//
//	[!] waitport [-timeout D] HOST:PORT [D]
//	    Waits until a TCP connect to HOST:PORT succeeds (timeout D, as a flag
//	    or a second argument: default 10s, capped at 60s). Negated: succeeds
//	    if no connect succeeded within the timeout.
//
//	[!] http [-H 'Name: value']... [-timeout D] [-until REGEXP] [-n N] METHOD URL [BODY]
//	    Does one HTTP request (default timeout 10s, capped at 60s; loopback
//	    hosts only; no automatic gzip decoding, no redirects) and writes to
//	    stdout:
//	        status 200
//	        Content-Type: application/json      (every header but Date, sorted)
//	        <blank line>
//	        <body>
//	    Any status is a success; assert it with `stdout '^status 503$'`.
//	    A transport error (refused, reset, timeout) fails the command; its
//	    message goes to stderr, so `! http ...` then `stderr 'timeout'` works.
//	    -until REGEXP repeats the request every 10ms until the printed answer
//	    matches (a gauge settling, e.g. '"active":0,'), failing at the timeout.
//	    -n N does the request N times, one after another (each with its own
//	    timeout), printing every answer.
//
//	exec httpc ARGS...
//	    The http command as a subprocess (the test binary), so requests can
//	    run in the background and at once: `exec httpc ... &b1&`, then
//	    `wait b1` puts what it printed in stdout. Exit 1 on a transport error
//	    or an -until that never matched, 2 on a usage error.
//
//	checked ENN
//	    Asserts that the last command's stdout (a `lab check ENN` run of an
//	    answer that must pass) lists every mutant in lessons/NN/checks as
//	    caught, with its required/bonus tag, every wheat as passed, and the
//	    score and verdict lines with the counts of that folder: adding a
//	    mutant needs no edit of the script.
//
//	exclusive NAME
//	    Waits until no other script holds NAME, then holds it until this
//	    script ends. Scripts that check the same exercise take its name
//	    (exclusive E17): the first compiles the exercise's mutant schema, the
//	    others find it in the Go build cache instead of compiling it at the
//	    same moment (for E17 about 8 s of CPU each).
//
//	quoteflow NN
//	    Builds checkpoint NN's server (go build ./cmd/quoteflow in
//	    checkpoints/NN, GOWORK=off, with the scripts' flags) and sets
//	    $QUOTEFLOW to the binary. Built once a run and shared by the
//	    scripts that run it (each starts its own process); the directory
//	    it is built into is kept from run to run in the user cache dir,
//	    so go build finds it up to date unless the checkpoint changed.
//
//	passes ARGS...
//	    exec lab ARGS (a lab check of a reference answer), run once more
//	    when it exits 3 (INCONCLUSIVE: the machine was too busy to judge a
//	    timing, twice), as a student is told to; any other failure, or a
//	    second INCONCLUSIVE, fails the script. stdout and stderr are the
//	    last run's. The suite runs dozens of gradings at once: a correct
//	    answer must not fail for that, nor pass without a verdict.
//
//	grab VAR REGEXP
//	    Sets $VAR to the first (group) of REGEXP's first match in the last
//	    command's stdout (a basket's ID, a line's request ID); fails if none.
//	    A greedy `(?s).*` prefix takes the last match instead.
//
// Environment of every script: the host's GOCACHE, GOMODCACHE, GOPATH and
// GOFLAGS, plus -trimpath when this test binary was built with it
// (runner.Trimpath: every build a script starts then shares the packages go
// test compiled for the suite itself, the standard library first; under
// GOFLAGS=-trimpath, as CI runs, a build is also the same in any clone),
// GOPROXY=off (nothing downloads; modules resolve from each go.sum), GOTOOLCHAIN=local, GOWORK=off,
// HOME=$WORK/home, REPO = the absolute path of the repository root (so
// scripts can `cd $REPO/checkpoints/13` and `exec go test ./...`), and
// CHECKPOINT_TEST_FLAGS (-race when the host sets LAB_CHECKPOINT_RACE=1,
// else -vet=off), CHECKPOINT_PARALLEL (four per CPU; one per CPU, go
// test's default, under the race detector), CHECKPOINT_COUNT (-count=1
// when the suite was asked for results afresh: go test -count=N, or
// CI=true; else -timeout=10m, which lets go reuse a checkpoint's passing
// result as it would for any package), and CHECKPOINT_TMPDIR and
// CHECKPOINT_PATH (the host's TMPDIR, and PATH without the scripts' own
// command directory: values that stay the same from run to run, which go's
// test cache requires of what a test reads).
package testscripts

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/kept"
	"quoteflowlab.dev/kit/machine"
	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/kit/testpar"
	"quoteflowlab.dev/lab/cli"
	"quoteflowlab.dev/provider"
)

// TestMain registers `lab` so scripts run it without building it.
func TestMain(m *testing.M) {
	testscript.Main(wide{m}, map[string]func(){
		"lab":   func() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) },
		"httpc": func() { os.Exit(mainHTTP()) },
	})
}

// scriptsAtOnce is how many scripts run at once when go test is not given
// -parallel, per CPU. Most of a script's time is spent waiting (for a build, a
// grading's timeouts, a real redis-server's TTLs), so one per CPU, go test's
// default, left the CPUs idle more than half the time.
const scriptsAtOnce = 3

// wide runs the tests with -parallel set to scriptsAtOnce per CPU unless the
// command line sets it.
type wide struct{ m *testing.M }

func (w wide) Run() int {
	afresh = testpar.PerCPU(scriptsAtOnce, 1)["test.count"]
	code := w.m.Run()
	quoteflowBins.give()
	return code
}

// TestScripts runs every testscripts/*.txtar.
func TestScripts(t *testing.T) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Dir:   ".",
		Setup: setup,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"provider":  cmdProvider,
			"freeport":  cmdFreeport,
			"waitport":  cmdWaitport,
			"http":      cmdHTTP,
			"starter":   cmdStarter,
			"course":    cmdCourse,
			"alive":     cmdAlive,
			"running":   cmdRunning,
			"leftover":  cmdLeftover,
			"lines":     cmdLines,
			"grab":      cmdGrab,
			"exclusive": cmdExclusive,
			"checked":   cmdChecked,
			"weaken":    cmdWeaken,
			"quoteflow": cmdQuoteflow,
			"passes":    cmdPasses,
		},
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

// maxWait caps every wait a script can ask for.
const maxWait = 60 * time.Second

var (
	goEnvOnce sync.Once
	goEnvVals []string // KEY=value for GOCACHE, GOMODCACHE, GOPATH, GOFLAGS
	goEnvErr  error
)

// hostGoEnv returns the host's Go cache locations, asked of `go env` once.
func hostGoEnv() ([]string, error) {
	goEnvOnce.Do(func() {
		keys := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS"}
		out, err := exec.Command("go", append([]string{"env", "-json"}, keys...)...).Output()
		if err != nil {
			goEnvErr = fmt.Errorf("go env: %w", err)
			return
		}
		var vals map[string]string
		if err := json.Unmarshal(out, &vals); err != nil {
			goEnvErr = fmt.Errorf("go env -json: %w", err)
			return
		}
		for _, k := range keys {
			goEnvVals = append(goEnvVals, k+"="+vals[k])
		}
		goEnvErr = prefetchModules()
	})
	return goEnvVals, goEnvErr
}

// prefetchModules fills the host's module cache, once and with the host's
// own proxy settings, with every module the root and the checkpoints need:
// scripts run with GOPROXY=off, and on a fresh machine `go test ./...` has
// only downloaded what the test binaries themselves import. When the cache
// is already full this is a fast no-op.
func prefetchModules() error {
	dirs, err := filepath.Glob(filepath.Join("..", "checkpoints", "*", "go.mod"))
	if err != nil {
		return err
	}
	for _, dir := range append([]string{".."}, mapDirs(dirs)...) {
		cmd := exec.Command("go", "mod", "download")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go mod download in %s (the scripts run offline and need these modules): %v\n%s", dir, err, out)
		}
	}
	return nil
}

// mapDirs turns go.mod paths into their directories.
func mapDirs(gomods []string) []string {
	dirs := make([]string, len(gomods))
	for i, f := range gomods {
		dirs[i] = filepath.Dir(f)
	}
	return dirs
}

// schemaKey is the schemata key every script's lab check cache starts
// with, made for this run, as a key `lab verify --killset` leaves there:
// lab check takes it off the disk and checks with a key of its own
// (lab_check_isolation's answers look for it).
var schemaKey = func() []byte {
	key := make([]byte, 32)
	rand.Read(key)
	return key
}()

// trusted matches the scripts that check only the course's own answers
// and starters (e17_answer, e17_starter, lab_check_json): code that does
// not try to read what lab keeps in its cache.
var trusted = regexp.MustCompile(`^TestScripts/(e[0-9]+_(answer|starter)|lab_check_json)$`)

// setup gives each script the host's Go caches, an offline module proxy, a
// HOME of its own and $REPO.
func setup(env *testscript.Env) error {
	goVars, err := hostGoEnv()
	if err != nil {
		return err
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		return err
	}
	home := filepath.Join(env.WorkDir, "home")
	if err := os.MkdirAll(home, 0o777); err != nil {
		return err
	}
	for _, kv := range goVars {
		k, v, _ := strings.Cut(kv, "=")
		if k == "GOFLAGS" {
			// What a script builds (a checkpoint's suite, an answer) is
			// built as the suite was: each package compiles once.
			v = trimpathFlags(goVars)
		}
		env.Setenv(k, v)
	}
	env.Setenv("GOPROXY", "off")
	env.Setenv("GOTOOLCHAIN", "local")
	env.Setenv("GOWORK", "off")
	env.Setenv("HOME", home)
	if os.Getenv("USERPROFILE") != "" || filepath.Separator == '\\' {
		env.Setenv("USERPROFILE", home)
	}
	env.Setenv("REPO", repo)
	// A file of the course edited while the suite runs (by whoever runs it)
	// is put back by the guard of a script's lab check, which cannot tell
	// who changed it; the version it found is kept in $WORK/state/changed,
	// which goes with $WORK. Moved under .lab/ (ignored by git and by the
	// guard), the edit is not lost, and the test log says where it is.
	// lab_check_tamper changes the course on purpose.
	if t, ok := env.T().(interface{ Name() string }); ok && !strings.Contains(t.Name(), "tamper") {
		changed := filepath.Join(env.WorkDir, "state", "changed")
		env.Defer(func() {
			if _, err := os.Stat(changed); err != nil {
				return
			}
			dst := filepath.Join(repo, ".lab", "changed-during-tests", strings.TrimPrefix(t.Name(), "TestScripts/")+"-"+time.Now().Format("20060102-150405.000"))
			err := os.MkdirAll(filepath.Dir(dst), 0o755)
			if err == nil {
				err = os.Rename(changed, dst)
			}
			if err != nil {
				env.T().Log("a file of the course changed while this script's lab check ran, and lab put it back; the version it found could not be kept: " + err.Error())
				return
			}
			env.T().Log("a file of the course changed while this script's lab check ran, and lab put it back: the version it found is kept in " + dst)
		})
	}
	cache := filepath.Join(env.WorkDir, "state", "cache")
	if err := os.MkdirAll(filepath.Dir(cache), 0o755); err != nil {
		return err
	}
	if t, ok := env.T().(interface{ Name() string }); ok && trusted.MatchString(t.Name()) {
		// The trusted scripts' lab check cache (the binaries it builds) is
		// kept from run to run: go build then finds a binary up to date
		// and does not link it again unless what it is built from changed
		// (E15's tools; a mutant schema is new every check).
		give, err := kept.TakeAs("script-"+strings.TrimPrefix(t.Name(), "TestScripts/")+"-cache", cache)
		if err != nil {
			return err
		}
		env.Defer(give)
	} else if err := os.Mkdir(cache, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cache, "schemata.key"), schemaKey, 0o600); err != nil {
		return err
	}
	// The checkpoint_NN scripts run each checkpoint's suite; CI asks for
	// the race detector there (LAB_CHECKPOINT_RACE=1), so it runs once.
	// Their tests mostly wait (for a real redis-server, a lease's TTL, a
	// supplier's latency), so they run four per CPU at once, not go test's
	// one: checkpoint 18's suite 12.5 s -> 8.9 s. Under the race detector,
	// go test's default.
	parallel := 4 * runtime.GOMAXPROCS(0)
	flags := "-vet=off" // vet ran just before, in the script
	if os.Getenv("LAB_CHECKPOINT_RACE") == "1" {
		flags, parallel = "-race", runtime.GOMAXPROCS(0)
	}
	env.Setenv("CHECKPOINT_TEST_FLAGS", flags)
	env.Setenv("CHECKPOINT_PARALLEL", strconv.Itoa(parallel))
	env.Setenv("CHECKPOINT_COUNT", checkpointCount())
	// The checkpoint's tests read TMPDIR (t.TempDir): the script's own
	// ($WORK/.tmp) is new every run, and go would never reuse a result.
	// Each test removes its temporary directories itself.
	env.Setenv("CHECKPOINT_TMPDIR", os.TempDir())
	// Nor may PATH name the directory, new every run, from which the
	// scripts run lab and httpc (the Redis tests look redis-server up).
	env.Setenv("CHECKPOINT_PATH", pathWithoutScriptCommands())
	return nil
}

// afresh is set when go test was given -count (as in `go test -count=1
// ./...`): the run asks for every result afresh.
var afresh bool

// checkpointCount is the flag a checkpoint_NN script passes to the
// checkpoint's go test: -count=1 when this run was asked for results
// afresh (go test -count=N, or CI=true), else a cacheable flag that changes
// nothing (-timeout=10m, go test's default), so that go reuses a
// checkpoint's passing result, as it does for any package, when the test
// binary (the checkpoint's code, its dependencies, the flags) and every
// file and environment variable its tests read are those of a run that
// passed; go test prints "(cached)" then. Under GOFLAGS=-trimpath the
// checkpoints build the same in any clone, so that holds in a fresh clone
// too; without it a checkpoint's directory is part of its key.
func checkpointCount() string {
	if afresh || os.Getenv("CI") == "true" {
		return "-count=1"
	}
	return "-timeout=10m"
}

// cmdPasses runs `lab ARGS` (a lab check of a reference answer) as exec
// does, and when it exits 3 (INCONCLUSIVE: the machine was too busy to
// judge a timing, twice) runs it once more, as a student is told to ("close
// what keeps the machine busy, or wait for it, then run lab check again"):
// the suite runs dozens of gradings at once, and a correct answer is never
// to be failed for that, nor taken as passed without a verdict. Before the
// second run it waits, at most quietWait, for the machine to be less busy
// (machine.WaitQuieter; in CI the checkpoints' suites run under the race
// detector beside it).
// Any other exit code, or a second INCONCLUSIVE, fails the script. Its
// stdout and stderr are the last run's.
func cmdPasses(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: passes ARGS (of lab)")
	}
	err := ts.Exec("lab", args...)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 {
		ts.Logf("lab %s: INCONCLUSIVE (the machine was too busy to judge): checked once more, %s", strings.Join(args, " "), machine.WaitQuieter(context.Background(), quietWait))
		err = ts.Exec("lab", args...)
	}
	if err != nil {
		ts.Fatalf("lab %s: %v", strings.Join(args, " "), err)
	}
}

// quietWait bounds how long cmdPasses waits for a quieter machine.
const quietWait = 90 * time.Second

// pathWithoutScriptCommands is PATH without the directory testscript puts
// first for the commands it runs from the test binary (lab, httpc).
func pathWithoutScriptCommands() string {
	path := os.Getenv("PATH")
	lab, err := exec.LookPath("lab")
	if err != nil {
		return path
	}
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if dir != filepath.Dir(lab) {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// quoteflowBins are the checkpoints' quoteflow binaries the live scripts
// run: each built once a run (the five checkpoint 16 scripts share one),
// into a directory kept from run to run, so that go build finds the binary
// up to date and does not link it again unless the checkpoint changed.
var quoteflowBins = &keptBins{built: map[string]*quoteflowBuild{}}

type keptBins struct {
	take  sync.Once
	dir   string
	hand  func() // hands dir back
	mu    sync.Mutex
	built map[string]*quoteflowBuild
}

type quoteflowBuild struct {
	once sync.Once
	path string
	err  error
}

// give hands the kept directory back once every script has ended.
func (b *keptBins) give() {
	if b.hand != nil {
		b.hand()
	}
}

// path builds checkpoint n's cmd/quoteflow (once a run) and returns the
// binary's path.
func (b *keptBins) path(repo, n string) (string, error) {
	b.take.Do(func() {
		b.dir, b.hand = kept.Take("quoteflow")
		if b.dir == "" {
			b.dir, _ = os.MkdirTemp("", "quoteflow-bins-")
			b.hand = func() { os.RemoveAll(b.dir) }
		}
	})
	if b.dir == "" {
		return "", errors.New("no directory to build quoteflow into")
	}
	b.mu.Lock()
	q := b.built[n]
	if q == nil {
		q = &quoteflowBuild{}
		b.built[n] = q
	}
	b.mu.Unlock()
	q.once.Do(func() {
		goVars, err := hostGoEnv()
		if err != nil {
			q.err = err
			return
		}
		out := filepath.Join(b.dir, "quoteflow-"+n+exeSuffix())
		cmd := exec.Command("go", "build", "-o", out, "./cmd/quoteflow")
		cmd.Dir = filepath.Join(repo, "checkpoints", n)
		cmd.Env = append(append(os.Environ(), goVars...), "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local")
		cmd.Env = append(cmd.Env, "GOFLAGS="+trimpathFlags(goVars))
		if msg, err := cmd.CombinedOutput(); err != nil {
			q.err = fmt.Errorf("go build ./cmd/quoteflow in checkpoints/%s: %v\n%s", n, err, msg)
			return
		}
		q.path = out
	})
	return q.path, q.err
}

// trimpathFlags is the host's GOFLAGS plus -trimpath when this test binary
// was built with it (runner.Trimpath, as lab's own builds): -trimpath is
// part of every package's key in the Go build cache, so a script building
// otherwise than go test built the suite would compile the standard library
// and every module a second time (83 s of CPU on an empty build
// cache, counted with go test -toolexec).
func trimpathFlags(goVars []string) string {
	v := ""
	for _, kv := range goVars {
		if f, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			v = f
		}
	}
	if runner.Trimpath() && !strings.Contains(v, "-trimpath") {
		v = strings.TrimSpace(v + " -trimpath")
	}
	return v
}

func exeSuffix() string {
	if runtime.GOOS == "windows" {
		return ".exe"
	}
	return ""
}

var checkpointNumber = regexp.MustCompile(`^[0-9]+$`)

// cmdQuoteflow builds checkpoint NN's server (go build ./cmd/quoteflow in
// checkpoints/NN, with the scripts' flags; once a run, shared by every
// script of the run) and sets $QUOTEFLOW to the binary.
func cmdQuoteflow(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 || !checkpointNumber.MatchString(args[0]) {
		ts.Fatalf("usage: quoteflow NN")
	}
	path, err := quoteflowBins.path(ts.Getenv("REPO"), args[0])
	ts.Check(err)
	ts.Setenv("QUOTEFLOW", path)
}

// cmdProvider starts an in-process provider lab for the script.
func cmdProvider(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! provider")
	}
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	scale := fs.Float64("latency-scale", 1, "")
	maxKeys := fs.Int("max-keys", 0, "")
	seed := fs.Uint64("seed", provider.DefaultSeed, "")
	shape := fs.String("brownout-shape", string(provider.Brownout503), "")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		ts.Fatalf("usage: provider [-latency-scale F] [-max-keys N] [-seed N] [-brownout-shape 503|hang]")
	}
	srv, err := provider.Start(provider.Options{LatencyScale: *scale, MaxKeys: *maxKeys, Seed: *seed, BrownoutShape: provider.BrownoutShape(*shape)}, "127.0.0.1:0", "127.0.0.1:0")
	ts.Check(err)
	ts.Defer(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	ts.Setenv("PROVIDER_URL", srv.URL)
	ts.Setenv("PROVIDER_ADDR", srv.Addr)
	ts.Setenv("BLACKHOLE_ADDR", srv.BlackholeAddr)
}

// cmdAlive checks whether the processes in a pid file (one pid a line) still
// run: alive if any does, ! alive if none does.
// exclusives holds one lock per name given to the exclusive command.
var exclusives sync.Map // name → *sync.Mutex

func cmdExclusive(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: exclusive NAME")
	}
	mu, _ := exclusives.LoadOrStore(args[0], new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	ts.Defer(mu.(*sync.Mutex).Unlock)
}

func cmdAlive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: [!] alive PIDFILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(f)
		ts.Check(err)
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		ts.Fatalf("%s holds no pid", args[0])
	}
	deadline := time.Now().Add(time.Second)
	for {
		up := slices.IndexFunc(pids, processRuns)
		switch {
		case up >= 0 && !neg, up < 0 && neg:
			return
		case time.Now().After(deadline):
			if neg {
				ts.Fatalf("process %d still runs", pids[up])
			}
			ts.Fatalf("none of the processes %v runs", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdStarter writes an exercise's committed starter into a directory.
func cmdStarter(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: starter ENN DIR")
	}
	l, err := course.Find(ts.Getenv("REPO"), args[0])
	ts.Check(err)
	repo, dir := ts.Getenv("REPO"), ts.MkAbs(args[1])
	list, err := exec.Command("git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD", "--", l.Starter()).Output()
	if err != nil || len(list) == 0 {
		ts.Logf("not a git checkout (%v): copying the working tree's %s", err, l.Starter())
		ts.Check(copyTree(filepath.Join(repo, filepath.FromSlash(l.Starter())), dir))
		return
	}
	for name := range strings.SplitSeq(strings.TrimSpace(string(list)), "\n") {
		data, err := exec.Command("git", "-C", repo, "show", "HEAD:"+name).Output()
		ts.Check(err)
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(name, l.Starter()+"/")))
		ts.Check(os.MkdirAll(filepath.Dir(dst), 0o755))
		ts.Check(os.WriteFile(dst, data, 0o644))
	}
}

// copyTree copies the files under src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
}

// cmdCourse copies what grading an exercise reads (go.mod, go.sum, the
// checkpoints, the lessons) from $REPO into DIR: a course of the script's
// own, for a script whose answer writes into the course.
func cmdCourse(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: course DIR [NAME...]")
	}
	repo, dir := ts.Getenv("REPO"), ts.MkAbs(args[0])
	for _, f := range []string{"go.mod", "go.sum"} {
		data, err := os.ReadFile(filepath.Join(repo, f))
		ts.Check(err)
		ts.Check(os.MkdirAll(dir, 0o755))
		ts.Check(os.WriteFile(filepath.Join(dir, f), data, 0o644))
	}
	for _, d := range append([]string{"checkpoints", "lessons"}, args[1:]...) {
		from := filepath.Join(repo, d)
		info, err := os.Stat(from)
		ts.Check(err)
		if !info.IsDir() {
			data, err := os.ReadFile(from)
			ts.Check(err)
			ts.Check(os.WriteFile(filepath.Join(dir, d), data, 0o644))
			continue
		}
		ts.Check(copyTree(from, filepath.Join(dir, d)))
	}
}

// cmdRunning checks whether a process carries a token in its command line.
func cmdRunning(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: [!] running TOKEN")
	}
	deadline := time.Now().Add(time.Second)
	for {
		pids, err := processesWith(args[0])
		ts.Check(err)
		switch {
		case len(pids) > 0 && !neg, len(pids) == 0 && neg:
			return
		case time.Now().After(deadline):
			if neg {
				ts.Fatalf("%d process(es) with %s in their command line still run: %v", len(pids), args[0], pids)
			}
			ts.Fatalf("no process has %s in its command line", args[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdLines checks how many lines that are not empty a file holds.
func cmdLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: lines FILE N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	if got := len(strings.Fields(ts.ReadFile(args[0]))); got != want {
		ts.Fatalf("%s holds %d lines, want %d", args[0], got, want)
	}
}

// cmdLeftover checks whether a path a list file names still exists.
func cmdLeftover(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: [!] leftover LISTFILE")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var left []string
	paths := strings.Fields(string(data))
	if len(paths) == 0 {
		ts.Fatalf("%s names no path", args[0])
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			left = append(left, p)
		}
	}
	switch {
	case neg && len(left) > 0:
		ts.Fatalf("%d of the %d paths are still there: %v", len(left), len(paths), left)
	case !neg && len(left) == 0:
		ts.Fatalf("none of the %d paths is there", len(paths))
	}
}

// cmdGrab sets a variable to the first submatch of a regexp in the last
// command's stdout.
func cmdGrab(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: grab VAR REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	if re.NumSubexp() < 1 {
		ts.Fatalf("grab: %q has no (group) to keep", args[1])
	}
	m := re.FindStringSubmatch(ts.ReadFile("stdout"))
	if m == nil {
		ts.Fatalf("grab: no match for %q in stdout", args[1])
	}
	ts.Setenv(args[0], m[1])
}

// cmdChecked compares a passing `lab check` report with the checks that the
// exercise's mutants folder holds.
func cmdChecked(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: checked ENN")
	}
	l, err := course.Find(ts.Getenv("REPO"), args[0])
	ts.Check(err)
	dir := filepath.Join(ts.Getenv("REPO"), filepath.FromSlash(l.Checks()))
	defs, err := filepath.Glob(filepath.Join(dir, "*.txtar"))
	ts.Check(err)
	stdout := ts.ReadFile("stdout")
	var required, bonus, wheats int
	for _, def := range defs {
		data, err := os.ReadFile(def)
		ts.Check(err)
		name := strings.TrimSuffix(filepath.Base(def), ".txtar")
		kind, req := header(string(data), "kind"), header(string(data), "required")
		var want string
		switch {
		case kind == "wheat":
			wheats++
			want = `(?m)^  passed +required +` + name + `$`
		case kind == "mutant" && req == "true":
			required++
			want = `(?m)^  caught +required +` + name + `$`
		case kind == "mutant":
			bonus++
			want = `(?m)^  caught +bonus +` + name + `$`
		default:
			ts.Fatalf("%s: kind %q, required %q", def, kind, req)
		}
		if !regexp.MustCompile(want).MatchString(stdout) {
			ts.Fatalf("%s is not reported as it must be (%s); the check printed:\n%s", name, want, stdout)
		}
	}
	gen, genWheats, err := cli.GeneratedCounts(ts.Getenv("REPO"), l)
	ts.Check(err)
	if genWheats > 0 && !strings.Contains(stdout, fmt.Sprintf("): %d of %d passed\n", genWheats, genWheats)) {
		ts.Fatalf("the generated wheats are not reported %d of %d passed", genWheats, genWheats)
	}
	wheats += genWheats
	score := fmt.Sprintf("mutation score: required %d/%d, bonus %d/%d; wheats passed %d/%d", required, required, bonus, bonus, wheats, wheats)
	if gen > 0 {
		score += fmt.Sprintf("; generated %d/%d", gen, gen)
		if !strings.Contains(stdout, fmt.Sprintf("): %d of %d caught\n", gen, gen)) {
			ts.Fatalf("the generated mutants are not reported %d of %d caught", gen, gen)
		}
	}
	if !strings.Contains(stdout, "\n"+score+"\n") {
		ts.Fatalf("no line %q", score)
	}
	cp := strings.TrimLeft(filepath.Base(l.Checkpoint()), "0")
	verdict := fmt.Sprintf("verdict: PASSED: the answer passes on checkpoint %s and catches %d/%d required mutants", cp, required, required)
	if bonus > 0 {
		verdict += fmt.Sprintf(" (bonus: %d/%d)", bonus, bonus)
	}
	if gen > 0 {
		verdict += fmt.Sprintf(" and %d/%d generated ones", gen, gen)
	}
	if wheats > 0 {
		verdict += fmt.Sprintf(", and passes %d/%d wheats", wheats, wheats)
	}
	if !strings.Contains(stdout, "\n"+verdict+".\n") {
		ts.Fatalf("no line %q", verdict+".")
	}
	ts.Logf("%s: %d required, %d bonus and %d generated mutants caught, %d wheats passed", args[0], required, bonus, gen, wheats)
}

// header returns the value of a "key: value" line before a check's first
// "-- " section.
func header(def, key string) string {
	for line := range strings.SplitSeq(def, "\n") {
		if strings.HasPrefix(line, "-- ") {
			break
		}
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// cmdFreeport sets a variable to a free loopback port.
func cmdFreeport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	port, err := freePort()
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(port))
}

var handedPorts struct {
	sync.Mutex
	m map[int]bool
}

// freePort returns a loopback port that was free a moment ago, for a server
// a script starts with --addr. It is drawn below the kernel's ephemeral
// range, never handed out twice by this process: a port the kernel gave out
// for 127.0.0.1:0 goes back to the pool when closed, and a listener another
// parallel script (or its provider, its redis-server) opens on :0 could
// take it before the script's server binds it, so that waitport would see
// the other server's port open and the next request find it gone.
func freePort() (int, error) {
	lo := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				lo = n
			}
		}
	}
	const base = 20000
	handedPorts.Lock()
	defer handedPorts.Unlock()
	if handedPorts.m == nil {
		handedPorts.m = map[int]bool{}
	}
	for range 200 {
		if lo-base < 1000 {
			break // the ephemeral range starts too low to stay out of it
		}
		p := base + mrand.IntN(lo-base)
		if handedPorts.m[p] {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		ln.Close()
		handedPorts.m[p] = true
		return p, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// cmdWaitport waits until a TCP connect to an address succeeds.
func cmdWaitport(ts *testscript.TestScript, neg bool, args []string) {
	fs := flag.NewFlagSet("waitport", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	timeout := fs.Duration("timeout", 10*time.Second, "")
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 || fs.NArg() > 2 {
		ts.Fatalf("usage: waitport [-timeout D] HOST:PORT [D]")
	}
	addr := fs.Arg(0)
	if fs.NArg() == 2 {
		d, err := time.ParseDuration(fs.Arg(1))
		if err != nil {
			ts.Fatalf("waitport: timeout %q: %v", fs.Arg(1), err)
		}
		*timeout = d
	}
	ts.Check(loopbackOnly(addr))
	deadline := time.Now().Add(min(*timeout, maxWait))
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			if neg {
				ts.Fatalf("%s accepts connections", addr)
			}
			return
		}
		if time.Now().After(deadline) {
			if !neg {
				ts.Fatalf("%s did not accept a connection within %s: %v", addr, *timeout, err)
			}
			return
		}
		time.Sleep(20 * time.Millisecond) // polling another process's port: there is no event to wait on
	}
}

// cmdHTTP does one HTTP request and prints status, headers and body.
func cmdHTTP(ts *testscript.TestScript, neg bool, args []string) {
	out, reqErr, err := doHTTP(args)
	if err != nil {
		ts.Fatalf("%v", err)
	}
	fmt.Fprint(ts.Stdout(), out)
	switch {
	case reqErr != nil && !neg:
		ts.Fatalf("%v", reqErr)
	case reqErr != nil:
		fmt.Fprintln(ts.Stderr(), reqErr)
	case neg:
		ts.Fatalf("http %s: got a response, want a transport error", strings.Join(args, " "))
	}
}

// mainHTTP is `exec httpc ...`: the http command from a subprocess, so a
// script can run it in the background (`&name&`). Exit 1 on a transport
// error or an -until that never matched, 2 on a usage error.
func mainHTTP() int {
	out, reqErr, err := doHTTP(os.Args[1:])
	fmt.Print(out)
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	case reqErr != nil:
		fmt.Fprintln(os.Stderr, reqErr)
		return 1
	}
	return 0
}

var errUsage = errors.New("usage: http [-H 'Name: value']... [-timeout D] [-until REGEXP] [-n N] METHOD URL [BODY]")

// doHTTP does the request of an http command line (-n times, one after
// another) and returns what it prints. reqErr is a transport error of the
// last request (the answers before it are in out); err is anything else
// (usage, a refused host, an -until that never matched).
func doHTTP(args []string) (out string, reqErr, err error) {
	fs := flag.NewFlagSet("http", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var headers headerFlags
	fs.Var(&headers, "H", "")
	timeout := fs.Duration("timeout", 10*time.Second, "")
	until := fs.String("until", "", "")
	n := fs.Int("n", 1, "")
	if err := fs.Parse(args); err != nil || fs.NArg() < 2 || fs.NArg() > 3 || *n < 1 || *n > 1000 {
		return "", nil, errUsage
	}
	var want *regexp.Regexp
	if *until != "" {
		if want, err = regexp.Compile(*until); err != nil {
			return "", nil, err
		}
	}
	method, url := fs.Arg(0), fs.Arg(1)
	newRequest := func(ctx context.Context) (*http.Request, error) {
		var body io.Reader
		if fs.NArg() == 3 {
			body = strings.NewReader(fs.Arg(2))
		}
		req, err := http.NewRequestWithContext(ctx, method, url, body)
		if err != nil {
			return nil, err
		}
		if err := loopbackOnly(req.URL.Host); err != nil {
			return nil, err
		}
		for _, h := range headers {
			if http.CanonicalHeaderKey(h[0]) == "Host" {
				req.Host = h[1] // net/http sends req.Host, never a Host header of the map
				continue
			}
			req.Header.Add(h[0], h[1])
		}
		if body != nil && req.Header.Get("Content-Type") == "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, nil
	}
	client := &http.Client{
		// A fresh transport per request: no connection reuse, so no hidden
		// retry by net/http and every request is exactly one attempt.
		Transport: &http.Transport{DisableCompression: true, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	var all strings.Builder
	for range *n {
		one, reqErr, err := doOne(client, newRequest, want, min(*timeout, maxWait))
		all.WriteString(one)
		if err != nil {
			return all.String(), nil, err
		}
		if reqErr != nil {
			return all.String(), fmt.Errorf("http %s %s: %w", method, url, reqErr), nil
		}
	}
	return all.String(), nil, nil
}

// doOne does one request (with -until, until its answer matches) within
// timeout.
func doOne(client *http.Client, newRequest func(context.Context) (*http.Request, error), want *regexp.Regexp, timeout time.Duration) (out string, reqErr, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		req, err := newRequest(ctx)
		if err != nil {
			return "", nil, err
		}
		var resp *http.Response
		resp, reqErr = client.Do(req)
		out = ""
		if reqErr == nil {
			var data []byte
			data, reqErr = io.ReadAll(resp.Body)
			resp.Body.Close()
			out = formatResponse(resp, data)
		}
		if want == nil {
			return out, reqErr, nil
		}
		if reqErr == nil && want.MatchString(out) {
			return out, nil, nil
		}
		// -until: ask again shortly, until the answer matches or the cap ends.
		select {
		case <-ctx.Done():
			return "", nil, fmt.Errorf("http %s %s: no answer matched %q within %v; last: %s%v",
				req.Method, req.URL, want, timeout, out, reqErr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// formatResponse renders a response as the http command prints it.
func formatResponse(resp *http.Response, body []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %d\n", resp.StatusCode)
	names := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		if k != "Date" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range resp.Header[k] {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	b.WriteString("\n")
	b.Write(body)
	if len(body) > 0 && body[len(body)-1] != '\n' {
		b.WriteString("\n")
	}
	return b.String()
}

// headerFlags collects repeated -H 'Name: value' flags.
type headerFlags [][2]string

func (h *headerFlags) String() string { return fmt.Sprint(*h) }

func (h *headerFlags) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	if !ok {
		return fmt.Errorf("header %q: want 'Name: value'", s)
	}
	*h = append(*h, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
	return nil
}

// loopbackOnly refuses any host outside 127.0.0.0/8 and ::1: the course never
// dials the outside world. "localhost" is allowed.
func loopbackOnly(hostport string) error {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("refusing to dial %q: scripts may only dial loopback addresses", hostport)
}

// TestLabExitCodes checks the exit codes scripts cannot tell apart
// (testscript's `! exec` only knows "non-zero"): 2 for usage errors, 1 for
// failures.
func TestLabExitCodes(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	busy := ln.Addr().String()
	defer ln.Close()
	closed := freeAddr(t)
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"help"}, 0},
		{nil, 2},
		{[]string{"frobnicate"}, 2},
		{[]string{"provider", "--latency-scale", "fast"}, 2},
		{[]string{"provider", "--latency-scale", "-1"}, 2},
		{[]string{"provider", "extra"}, 2},
		{[]string{"provider", "-h"}, 0},
		{[]string{"provider", "--addr", busy, "--blackhole-addr", ""}, 1},
		{[]string{"stats", "--provider", "http://" + closed}, 1},
		{[]string{"reset", "--provider", "http://" + closed}, 1},
		{[]string{"stats", "--nope"}, 2},
	} {
		var stdout, stderr strings.Builder
		if got := cli.Main(c.args, &stdout, &stderr); got != c.want {
			t.Errorf("lab %q: exit %d, want %d; stderr: %s", c.args, got, c.want, stderr.String())
		}
		if c.want == 1 && strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
			t.Errorf("lab %q: want a one-line error, got %q", c.args, stderr.String())
		}
	}
}

// freeAddr returns a loopback address nobody listens on (a moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// cmdWeaken implements `weaken SRC DST OLD NEW [OLD NEW]...`: copy the
// answer folder SRC (relative to $REPO) to DST, with the text of each file
// OLD replaced, exactly once, by the text of the file NEW after it, in
// DST's main.go: a reference answer with a check loosened, as a weak
// answer would have it.
func cmdWeaken(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 || len(args)%2 != 0 {
		ts.Fatalf("usage: weaken SRC DST OLD NEW [OLD NEW]...")
	}
	src := filepath.Join(ts.Getenv("REPO"), filepath.FromSlash(args[0]))
	dst := ts.MkAbs(args[1])
	ts.Check(os.MkdirAll(dst, 0o755))
	files, err := filepath.Glob(filepath.Join(src, "*.go"))
	ts.Check(err)
	for _, f := range files {
		data, err := os.ReadFile(f)
		ts.Check(err)
		ts.Check(os.WriteFile(filepath.Join(dst, filepath.Base(f)), data, 0o644))
	}
	main := filepath.Join(dst, "main.go")
	data, err := os.ReadFile(main)
	ts.Check(err)
	text := string(data)
	for i := 2; i < len(args); i += 2 {
		old, new := ts.ReadFile(args[i]), ts.ReadFile(args[i+1])
		if n := strings.Count(text, old); n != 1 {
			ts.Fatalf("%s: the text of %s occurs %d times in main.go, want once", args[0], args[i], n)
		}
		text = strings.Replace(text, old, new, 1)
	}
	ts.Check(os.WriteFile(main, []byte(text), 0o644))
}

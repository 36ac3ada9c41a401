package budget

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
)

// runTimeout bounds one tool run; every scenario of a correct tool ends
// well before. Scenarios may set a tighter bound; Options.RunTimeout
// replaces it.
const runTimeout = 15 * time.Second

// A run is one tool process: its output and the wall time the grader measured.
type run struct {
	tool    string
	stdout  []byte
	stderr  []byte
	wall    time.Duration
	problem string // why no JSON can be checked; "" when stdout holds JSON
	killed  bool   // it ran past its time bound
	// heldUp: killed at its bound while the machine held it back (its
	// threads waited for a CPU a quarter of the run, or the lab's own timer
	// fired a second late): a correct tool can be, so it is a timing miss.
	heldUp bool
	// start is the grader's clock just before the process was started: the
	// tool's own clock cannot have started earlier.
	start time.Time
	// starvedMS is how long the process's threads waited for a CPU, summed
	// (Linux; -1 where it cannot be measured): the most that load can have
	// made any of its timers late.
	starvedMS float64
	// lagMS is the most the lab's own 10 ms timer fired late while the run
	// lasted (0 without a monitor): how late the machine made timers then.
	lagMS float64
}

// loadLate is how late the machine can have made a timer of run r: the
// time its threads waited for a CPU and the lab's own timer lag while it
// ran. It may turn a miss into a timing miss (run again, inconclusive
// when the machine is busy again), never into a pass.
func loadLate(r run) float64 { return max(r.starvedMS, 0) + max(r.lagMS, 0) }

// toolCPU is the CPU a tool may use besides a quarter of its wall time
// and still be judged as waiting: a tool that makes a few HTTP calls uses a
// few milliseconds; one that used more computed (or spun), and the time its
// own threads then waited for a CPU is its own doing.
const toolCPU = 150 * time.Millisecond

// computed reports whether a run used more CPU than a tool that waits can,
// or had more threads ready to run than it could get CPUs for, most of its
// run (its threads together waited for a CPU longer than it ran): a tool
// that waits on the network wakes a thread or two at a time, briefly.
func computed(res runner.Result) bool {
	return res.CPU > toolCPU+res.Elapsed/4 || res.Starved > 1 && res.CPU > spinCPU+res.Elapsed/20
}

// spinCPU is the CPU a tool whose threads together waited for a CPU
// longer than it ran may use besides a twentieth of its wall time: on a
// loaded machine the Go runtime's idle threads of a tool that waits pile up
// such waits too (6 ms of CPU in 1.55 s, load 16), a tool that spins
// threads to make its own wait uses far more (145 ms in 0.67 s).
const spinCPU = 30 * time.Millisecond

// wallMS is the measured wall time in milliseconds.
func (r run) wallMS() float64 { return float64(r.wall) / float64(time.Millisecond) }

// exec runs tool with args and measures its wall time. The run is killed
// after g.runBound().
func (g *grader) exec(ctx context.Context, tool string, args ...string) run {
	return g.execWithin(ctx, g.runBound(), tool, args...)
}

// runBound is how long a tool run may take where a scenario sets no
// tighter bound: Options.RunTimeout, or runTimeout.
func (g *grader) runBound() time.Duration {
	if g.opts.RunTimeout > 0 {
		return g.opts.RunTimeout
	}
	return runTimeout
}

// execWithin is exec with its own time bound. The tool runs in a process
// group of its own, killed whole at the bound.
func (g *grader) execWithin(parent context.Context, within time.Duration, tool string, args ...string) run {
	r := run{tool: tool}
	bin, ok := g.bins[tool]
	if !ok {
		r.problem = tool + " did not build"
		return r
	}
	// Each run in a folder of its own, its temporary folder inside, both
	// removed after it.
	scratch, err := g.scratch()
	if err != nil {
		r.problem = tool + " could not run: " + err.Error()
		return r
	}
	defer runner.RemoveAll(scratch)
	var stdout runner.Buffer
	mark := -1
	if g.mon != nil {
		mark = g.mon.Mark()
	}
	r.start = time.Now()
	res := runner.Run(parent, runner.Cmd{Name: bin, Args: args, Dir: scratch, TempDir: filepath.Join(scratch, "tmp"), Timeout: within, Stdout: &stdout})
	if mark >= 0 {
		r.lagMS = g.mon.Since(mark).LagMaxMS
	}
	g.left.Add(res)
	r.wall = res.Elapsed
	r.starvedMS = -1
	switch {
	case computed(res):
		// Its threads waited for a CPU because it kept the CPUs busy
		// itself: that excuses none of its timing, and says nothing about
		// the machine.
		r.starvedMS = 0
		g.mu.Lock()
		if g.computed == "" {
			g.computed = fmt.Sprintf("%s used %v of CPU in a run of %v", tool, res.CPU.Round(time.Millisecond), res.Elapsed.Round(time.Millisecond))
		}
		g.mu.Unlock()
	case res.Starved >= 0:
		r.starvedMS = res.Starved * r.wallMS()
		if g.mon != nil && (g.mon.HeldBack(res.Starved, res.Elapsed) ||
			g.mon.HeldBack(res.StarvedPeak, min(res.Elapsed, runner.StarvedWindow))) {
			g.mu.Lock()
			g.heldBack = true
			g.mu.Unlock()
			r.heldUp = res.TimedOut
		}
	}
	r.heldUp = r.heldUp || res.TimedOut && r.lagMS >= 1000
	r.stdout, r.stderr = stdout.Bytes(), []byte(res.Output)
	if res.ExitCode != 0 {
		err = fmt.Errorf("exit status %d", res.ExitCode)
	}
	switch {
	case res.Err != nil && parent.Err() != nil:
		r.problem = fmt.Sprintf("grading was stopped while %s ran: %v", tool, parent.Err())
	case res.TimedOut:
		r.killed = true
		r.problem = fmt.Sprintf("%s %s was still running after %v and was killed (with every process it started)", tool, strings.Join(args, " "), within)
	case res.Err != nil:
		r.problem = fmt.Sprintf("%s could not run: %v", tool, res.Err)
	case err != nil && bytes.Contains(append(r.stdout, r.stderr...), []byte("TODO")):
		g.mu.Lock()
		g.todo[tool] = true
		g.mu.Unlock()
		r.problem = tool + " still prints its TODO: " + report.Shorten(report.OneLine(string(r.stderr)+string(r.stdout)), 300)
	case !json.Valid(firstValue(r.stdout)):
		r.problem = fmt.Sprintf("%s printed no JSON on stdout (%v): %s", tool, exitText(err), report.Shorten(report.OneLine(string(r.stdout)+" "+string(r.stderr)), 300))
	}
	return r
}

// scratch makes a new folder for one tool run: in the cache's run folder
// (BinDir is <cache>/E15/<answer>; the run folder is <cache>/run, beside the
// exercises' folders, where no pruning of old builds looks), or in the
// system's temporary folder when the tools are built in a temporary folder
// of their own.
func (g *grader) scratch() (string, error) {
	base := os.TempDir()
	if g.opts.BinDir != "" {
		base = filepath.Join(filepath.Dir(filepath.Dir(g.opts.BinDir)), "run")
		if err := os.MkdirAll(base, 0o755); err != nil {
			return "", err
		}
	}
	return os.MkdirTemp(base, "")
}

// exitText describes a process's exit.
func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// firstValue returns the first JSON value on stdout (tools print one line,
// but a trailing log line must not break decoding).
func firstValue(stdout []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(stdout))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil
	}
	return raw
}

// decode decodes the run's JSON into v and reports missing keys of the top
// object; nested keys are checked by the callers.
func (r run) decode(v any, keys ...string) error {
	raw := firstValue(r.stdout)
	if err := missingKeys(raw, keys...); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s output: %v", r.tool, err)
	}
	return nil
}

// missingKeys reports the keys the JSON object raw lacks.
func missingKeys(raw []byte, keys ...string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("want a JSON object: %v", err)
	}
	var missing []string
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s in %s", strings.Join(missing, ", "), report.Shorten(report.OneLine(string(raw)), 300))
	}
	return nil
}

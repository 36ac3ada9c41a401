package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"quoteflowlab.dev/kit/load"
	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/lab/internal/watch"
)

const loadUsage = `[--target URL[,URL...]] (quote | basket --lines N) [--scenario S]
       (--concurrency N | --rate R) (--duration D | --requests N) [--provider URL] [--reset] [--json]
   or: lab load --rates R1,R2,... --duration D --target [NAME=]URL[,...] (quote | basket --lines N)
       [--scenario S] [--deadline D] [--svg FILE] [--provider URL[,URL...] --reset] [--json]`

const loadAbout = `Sends QuoteFlow requests (POST /api/quotes, or /api/baskets with --lines) and prints
the statuses, the per-supplier failure codes inside the answers, latency p50/p90/p99/max
with a histogram and, with --provider, what the provider lab counted over the run:
calls, max_active, 429s, early_retries, client_gone, abandoned. A progress line is
printed on a terminal for runs over 2 s. Ctrl-C stops the run and reports what came back.
`

// runLoad sends QuoteFlow requests at a concurrency or a rate (vegeta's
// attacker) and prints what came back and what the provider lab counted.
func runLoad(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("load", loadUsage, stderr)
	target := fs.String("target", "http://127.0.0.1:9100", "QuoteFlow base `URL`s, comma-separated, sent to round robin")
	lines := fs.Int("lines", 0, "basket: `N` lines per basket (1 to 50)")
	scenario := fs.String("scenario", "normal", "provider scenario the request names (normal, slow, outage, ratelimited, flaky, ...)")
	conc := fs.Int("concurrency", 0, fmt.Sprintf("keep `N` requests in flight (1 to %d): each answer starts the next", load.MaxConcurrency))
	rate := fs.Float64("rate", 0, fmt.Sprintf("send `R` requests per second (%g to %d), however slow the answers", load.MinRate, load.MaxRate))
	dur := fs.Duration("duration", 0, "stop sending after `D` (e.g. 10s)")
	reqs := fs.Int("requests", 0, "stop after `N` requests (with --duration: whichever comes first)")
	timeout := fs.Duration("timeout", 30*time.Second, "one request's limit (positive)")
	prov := fs.String("provider", "", "provider lab base `URL` (e.g. "+providerDefaultURL+"): print its /stats difference over the run")
	reset := fs.Bool("reset", false, "with --provider: POST /reset first, so max_active is this run's own peak (zeroes everyone's counters)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	rates := fs.String("rates", "", "a sweep: offered-load steps in requests per second, rising, comma-separated (10,20,40,80); each lasts --duration, every target gets it at once (side by side)")
	deadline := fs.Duration("deadline", 800*time.Millisecond, "with --rates: a good answer's limit (goodput: answers 200, complete, within it)")
	svg := fs.String("svg", "", "with --rates: write goodput and p99 against offered load, one curve per target, to `FILE` (SVG)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: lab load %s\n\n%s\nexample: lab load quote --scenario slow --concurrency 8 --duration 5s --provider %s\n\nflags:\n", loadUsage, loadAbout, providerDefaultURL)
		fs.PrintDefaults()
	}
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(fs, stderr, "want one request kind, quote or basket")
	}
	if *rates != "" || *svg != "" {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		return runSweep(fs, stderr, stdout, sweepArgs{request: pos[0], lines: *lines, scenario: *scenario, rates: *rates,
			step: *dur, target: *target, timeout: *timeout, deadline: *deadline, svg: *svg, provider: *prov,
			reset: *reset, json: *asJSON, set: set})
	}
	if fs.Lookup("deadline").Value.String() != fs.Lookup("deadline").DefValue {
		return usageError(fs, stderr, "--deadline is for a sweep: lab load --rates R1,R2,... --deadline D")
	}
	cfg := load.Config{
		Request: pos[0], Lines: *lines, Scenario: *scenario, Concurrency: *conc, Rate: *rate,
		Duration: *dur, Requests: *reqs, Timeout: *timeout, Provider: *prov, Reset: *reset, Targets: splitList(*target),
	}
	if cfg.Request == "quote" && *lines != 0 {
		return usageError(fs, stderr, "--lines is for baskets: lab load basket --lines N")
	}
	if *reset && *prov == "" {
		return usageError(fs, stderr, "--reset needs --provider URL")
	}
	if *timeout <= 0 {
		return usageError(fs, stderr, "--timeout %s: want a positive duration (one request's limit)", *timeout)
	}
	if err := cfg.Validate(); err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	ctx, stop := runner.StopContext()
	defer stop()
	progress := false
	if f, ok := stderr.(*os.File); ok && watch.IsTerminal(f) && (cfg.Duration > 2*time.Second || cfg.Duration == 0) {
		progress = true
		cfg.Progress = func(p load.Progress) {
			if p.Elapsed >= 2*time.Second {
				fmt.Fprintf(stderr, "\r%-70s", progressLine(p, cfg.Duration))
			}
		}
	}
	rep, err := load.Run(ctx, cfg)
	if progress {
		fmt.Fprintf(stderr, "\r%-60s\r", "")
	}
	if err != nil {
		return failed(stderr, "lab load", err)
	}
	if *asJSON {
		writeJSON(stdout, rep)
	} else {
		rep.Text(stdout)
	}
	switch {
	case rep.Requests == 0:
		fmt.Fprintln(stderr, "lab load: no request was sent")
		return 1
	case rep.Answered() == 0:
		fmt.Fprintf(stderr, "lab load: none of the %d requests was answered (is QuoteFlow running at %s?)\n", rep.Requests, rep.Target)
		return 1
	}
	return 0
}

// progressLine is the progress line: while the run sends, how far it is;
// once it stopped sending, how many answers it still waits for.
func progressLine(p load.Progress, duration time.Duration) string {
	if !p.Sending {
		return fmt.Sprintf("lab load: all %d sent; waiting for %d in flight (%.1f s)", p.Sent, p.Sent-p.Answered, p.Elapsed.Seconds())
	}
	line := fmt.Sprintf("lab load: %d sent, %d answered, %.1f s", p.Sent, p.Answered, p.Elapsed.Seconds())
	if duration > 0 {
		line += fmt.Sprintf(" of %s", duration)
	}
	return line
}

// sweepArgs are lab load's flags for a sweep.
type sweepArgs struct {
	request, scenario, rates, target, svg, provider string
	lines                                           int
	step, timeout, deadline                         time.Duration
	reset, json                                     bool
	set                                             map[string]bool // the flags given
}

// runSweep runs offered-load steps against several targets side by side
// and prints the table (or JSON), and writes the SVG.
func runSweep(fs *flag.FlagSet, stderr, stdout io.Writer, a sweepArgs) int {
	if a.rates == "" {
		return usageError(fs, stderr, "--svg draws a sweep: give --rates R1,R2,...")
	}
	for _, f := range []string{"rate", "concurrency", "requests"} {
		if a.set[f] {
			return usageError(fs, stderr, "--%s is not for a sweep: --rates R1,R2,... sets the load, --duration each step", f)
		}
	}
	rs, err := load.ParseRates(a.rates)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if len(rs) < 2 {
		return usageError(fs, stderr, "--rates %q: a sweep needs two steps or more (one rate: --rate R)", a.rates)
	}
	targets, err := load.ParseTargets(a.target)
	if err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if a.request == "quote" && a.lines != 0 {
		return usageError(fs, stderr, "--lines is for baskets: lab load basket --lines N")
	}
	if a.timeout <= 0 {
		return usageError(fs, stderr, "--timeout %s: want a positive duration (one request's limit)", a.timeout)
	}
	c := load.SweepConfig{Rates: rs, Step: a.step, Targets: targets, Reset: a.reset,
		Base: load.Config{Request: a.request, Lines: a.lines, Scenario: a.scenario, Timeout: a.timeout, Deadline: a.deadline}, Providers: splitList(a.provider)}
	if a.step == 0 {
		return usageError(fs, stderr, "give --duration D: how long each step lasts")
	}
	if err := c.Validate(); err != nil {
		return usageError(fs, stderr, "%v", err)
	}
	if a.svg != "" {
		// Refuse a file that cannot be written before the run, not after.
		f, err := os.OpenFile(a.svg, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return usageError(fs, stderr, "--svg %s: %v", a.svg, err)
		}
		f.Close()
	}
	ctx, stop := runner.StopContext()
	defer stop()
	if f, ok := stderr.(*os.File); ok && watch.IsTerminal(f) {
		c.Progress = func(i int, rate float64) {
			fmt.Fprintf(stderr, "\r%-70s", fmt.Sprintf("lab load: step %d of %d, %g/s, %s", i+1, len(rs), rate, a.step))
		}
		defer fmt.Fprintf(stderr, "\r%-70s\r", "")
	}
	sw, err := load.RunSweep(ctx, c)
	if err != nil {
		return failed(stderr, "lab load", err)
	}
	if a.json {
		writeJSON(stdout, sw)
	} else {
		sw.Text(stdout)
	}
	if a.svg != "" {
		var b strings.Builder
		sw.SVG(&b)
		if err := os.WriteFile(a.svg, []byte(b.String()), 0o644); err != nil {
			return failed(stderr, "lab load", err)
		}
		if !a.json {
			fmt.Fprintf(stdout, "wrote %s\n", a.svg)
		}
	}
	answered := 0
	for _, pts := range sw.Points {
		for _, p := range pts {
			answered += p.Requests - p.Statuses["error"]
		}
	}
	if answered == 0 {
		fmt.Fprintln(stderr, "lab load: no request of the sweep was answered (is QuoteFlow running at the targets?)")
		return 1
	}
	return 0
}

// splitList is a comma-separated flag's values, blanks dropped.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

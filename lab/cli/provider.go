package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"syscall"
	"time"

	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/provider"
)

// providerShutdownGrace is how long in-flight requests may run once it is stopped.
const providerShutdownGrace = 3 * time.Second

// runProvider runs the provider lab until it is stopped (stopContext).
func runProvider(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lab provider", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9101", "HTTP address of the suppliers, partner and control endpoints")
	bhAddr := fs.String("blackhole-addr", "127.0.0.1:9102", `address of the blackhole listener (connects time out); "" for none`)
	scale := fs.Float64("latency-scale", 1, fmt.Sprintf("multiplies every artificial delay, from 0 to %d; 0 removes them (for benchmarks)", provider.MaxLatencyScale))
	seed := fs.Uint64("seed", provider.DefaultSeed, "seed of the tail scenario's latency draws: the same seed and requests give the same latencies")
	shape := fs.String("brownout-shape", string(provider.Brownout503), `how boreal fails inside scenario brownout's window: "503" (at once) or "hang" (past any read limit)`)
	if code, ok := parseProviderFlags(fs, args); !ok {
		return code
	}
	if s := provider.BrownoutShape(*shape); s != provider.Brownout503 && s != provider.BrownoutHang {
		fmt.Fprintf(stderr, "lab provider: --brownout-shape must be 503 or hang (got %q)\n", *shape)
		return 2
	}
	if !(*scale >= 0 && *scale <= provider.MaxLatencyScale) { // NaN fails both
		fmt.Fprintf(stderr, "lab provider: --latency-scale must be a number from 0 to %d (got %v)\n", provider.MaxLatencyScale, *scale)
		return 2
	}

	srv, err := provider.Start(provider.Options{LatencyScale: *scale, Seed: *seed, BrownoutShape: provider.BrownoutShape(*shape)}, *addr, *bhAddr)
	if err != nil {
		fmt.Fprintln(stderr, "lab provider: "+providerListenProblem(err))
		return 1
	}
	// Subscribe before announcing, so a signal sent right after the
	// announcement is never missed.
	ctx, stop := runner.StopContext()
	defer stop()

	fmt.Fprintf(stdout, "provider lab serving on %s (suppliers, partner, control)\n", srv.URL)
	switch {
	case srv.BlackholeAddr != "":
		fmt.Fprintf(stdout, "blackhole listening on %s (connects time out)\n", srv.BlackholeAddr)
	case srv.BlackholeErr != nil:
		fmt.Fprintf(stdout, "no blackhole: %v\n", srv.BlackholeErr)
	}
	fmt.Fprintf(stdout, "dashboard: %s/ui (open it in a browser on this machine)\n", srv.URL)
	fmt.Fprintf(stdout, "try: curl -H 'X-Request-ID: demo' '%s/quotes/boreal?sku=KB-001&scenario=flaky'\n", srv.URL)
	fmt.Fprintln(stdout, "press Ctrl+C to stop")

	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping: letting in-flight requests finish…")
	grace, cancel := context.WithTimeout(context.Background(), providerShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(grace); errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(stdout, "grace of %s over: cut the requests still running\n", providerShutdownGrace)
	} else if err != nil {
		fmt.Fprintln(stderr, "lab provider: "+err.Error())
	}
	fmt.Fprintln(stdout, "provider lab stopped")
	return 0
}

// providerListenProblem explains a failure to start in one line.
func providerListenProblem(err error) string {
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Sprintf("address already in use (%v); is another lab provider running? Stop it or pick another port with --addr / --blackhole-addr", err)
	}
	return err.Error()
}

// parseProviderFlags parses args with fs. It reports ok false with the exit code when
// the command must stop: 0 for -h, 2 for a usage error.
func parseProviderFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	case err != nil:
		return 2, false // the flag package already printed the problem and usage
	case fs.NArg() > 0:
		fmt.Fprintf(fs.Output(), "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return 2, false
	}
	return 0, true
}

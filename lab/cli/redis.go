package cli

import (
	"flag"
	"fmt"
	"io"
	"net"

	"github.com/alicebob/miniredis/v2"

	"quoteflowlab.dev/kit/runner"
)

// redisInstall is how to get the real server, printed by lab redis first.
const redisInstall = "install the real one: Linux: sudo apt-get install redis-server; macOS: brew install redis; Windows: in WSL, sudo apt-get install redis-server"

// runRedis serves an embedded Redis-compatible stand-in until it is
// stopped (stopContext), for a student without Redis. It says so in its first line.
func runRedis(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lab redis", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:6379", "loopback address to serve on")
	if code, ok := parseProviderFlags(fs, args); !ok {
		return code
	}
	host, _, err := net.SplitHostPort(*addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(stderr, "lab redis: --addr %q must be a loopback IP and port, like 127.0.0.1:6379\n", *addr)
		return 2
	}
	fmt.Fprintln(stdout, "lab redis: an embedded stand-in for Redis (miniredis), NOT the real server; "+redisInstall)
	m := miniredis.NewMiniRedis()
	m.ClockTTL(true) // keys expire as time passes, as on a real server
	if err := m.StartAddr(*addr); err != nil {
		fmt.Fprintln(stderr, "lab redis: "+providerListenProblem(err))
		return 1
	}
	defer m.Close()
	ctx, stop := runner.StopContext()
	defer stop()
	fmt.Fprintf(stdout, "serving redis://%s (in memory: everything is gone when it stops)\n", m.Addr())
	fmt.Fprintf(stdout, "try: cd checkpoints/17 && go run ./cmd/quoteflow --redis redis://%s/0\n", m.Addr())
	fmt.Fprintln(stdout, "press Ctrl+C to stop")
	<-ctx.Done()
	fmt.Fprintln(stdout, "lab redis stopped")
	return 0
}

// Command quoteflow serves the QuoteFlow API against the provider lab.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/20/queue"
	"quoteflowlab.dev/checkpoints/20/quota"
	"quoteflowlab.dev/checkpoints/20/quoteflow"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run serves until SIGINT or SIGTERM, or with the compensate command drains
// the compensation queue once; it returns 2 for a usage error (a bad flag,
// a stray argument, a --provider that is not an http(s) URL).
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "compensate" {
		return runCompensate(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("quoteflow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: quoteflow [flags]             serve the API (and the compensation worker)")
		fmt.Fprintln(stderr, "       quoteflow compensate --once   drain the compensation queue once and exit")
		fs.PrintDefaults()
	}
	addr := fs.String("addr", "127.0.0.1:9100", "listen address")
	provider, data, shared := commonFlags(fs)
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2 // the flag package has printed the problem and the usage
	case fs.NArg() > 0:
		// Parsing stops at the first argument: a flag after it would be ignored.
		fmt.Fprintf(stderr, "quoteflow: unexpected argument %q (this command takes flags only)\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if code, ok := checkProvider(*provider, stderr); !ok {
		return code
	}
	if code, ok := shared.check(stderr); !ok {
		return code
	}
	if err := serve(*addr, *provider, *data, shared, stdout); err != nil {
		fmt.Fprintln(stderr, "quoteflow:", strings.TrimPrefix(err.Error(), "quoteflow: "))
		return 1
	}
	return 0
}

// checkProvider refuses an empty or non-http(s) --provider as a usage
// error, before anything is opened.
func checkProvider(provider string, stderr io.Writer) (int, bool) {
	if provider == "" {
		fmt.Fprintln(stderr, "quoteflow: --provider is empty: give the provider lab's base URL, e.g. --provider http://127.0.0.1:9101")
		return 2, false
	}
	svc, err := quoteflow.New(quoteflow.Config{ProviderURL: provider})
	if err != nil { // a --provider that is not an http(s) URL
		fmt.Fprintln(stderr, "quoteflow:", strings.TrimPrefix(err.Error(), "quoteflow: "))
		return 2, false
	}
	svc.Close()
	return 0, true
}

func commonFlags(fs *flag.FlagSet) (provider, data *string, shared *sharedFlags) {
	provider = fs.String("provider", cmp.Or(os.Getenv("QUOTEFLOW_PROVIDER_URL"), quoteflow.DefaultProviderURL),
		"provider lab base URL (env QUOTEFLOW_PROVIDER_URL)")
	data = fs.String("data", "./quoteflow-data", "directory of the baskets and compensation queue (one bbolt file; unused with --redis)")
	shared = &sharedFlags{}
	fs.StringVar(&shared.url, "redis", os.Getenv("QUOTEFLOW_REDIS_URL"),
		"Redis URL (redis://127.0.0.1:6379/0) of a quota, baskets and queue shared by every process on it; empty: this process alone, as checkpoint 16 (env QUOTEFLOW_REDIS_URL)")
	fs.StringVar(&shared.rate, "rate", "none",
		"with --redis: rate quota per supplier, all processes together, as N/duration (5/250ms) or none")
	fs.StringVar(&shared.rateBy, "rate-by", "calls",
		"with --rate: what N counts, calls (each call 1) or quantity (each call its order's quantity: a quota of cost)")
	shared.timings = timingFlags(fs)
	shared.hedging = newHedgeFlags(fs)
	shared.breaking = newBreakerFlags(fs)
	shared.limiting = newLimitFlags(fs)
	return provider, data, shared
}

// maxRateN is the largest N of --rate N/duration: a million calls a window
// is no quota any more.
const maxRateN = 1_000_000

// sharedFlags are --redis, --rate and --rate-by, and the timings (timings.go).
type sharedFlags struct {
	url, rate, rateBy string
	parsed            quota.Rate
	*timings
	hedging  *hedgeFlags
	breaking *breakerFlags
	limiting *limitFlags
}

// config is the service's configuration with the hedging and breaker flags.
func (f *sharedFlags) config() quoteflow.Config {
	c := f.hedging.config(f.timings)
	f.breaking.apply(&c)
	f.limiting.apply(&c)
	return c
}

// byQuantity reports --rate-by quantity.
func (f *sharedFlags) byQuantity() bool { return f.rateBy == "quantity" }

// check refuses a --redis that is not a redis:// URL, or a bad --rate, as a
// usage error, before anything is opened.
func (f *sharedFlags) check(stderr io.Writer) (int, bool) {
	if code, ok := f.timings.check(stderr); !ok {
		return code, false
	}
	if f.hedging != nil {
		if code, ok := f.hedging.check(stderr); !ok {
			return code, false
		}
	}
	if f.limiting != nil {
		if code, ok := f.limiting.check(stderr); !ok {
			return code, false
		}
	}
	if f.breaking != nil {
		if code, ok := f.breaking.check(stderr); !ok {
			return code, false
		}
	}
	var err error
	if f.parsed, err = quota.ParseRate(f.rate); err != nil {
		fmt.Fprintln(stderr, "quoteflow: --rate:", strings.TrimPrefix(err.Error(), "quota: "))
		return 2, false
	}
	if f.parsed.N > maxRateN || f.parsed.Per > maxTiming {
		fmt.Fprintf(stderr, "quoteflow: --rate %s: want N from 1 to %d in a window from 1ms to %s\n", f.rate, maxRateN, maxTiming)
		return 2, false
	}
	f.rateBy = cmp.Or(f.rateBy, "calls")
	if f.rateBy != "calls" && f.rateBy != "quantity" {
		fmt.Fprintf(stderr, "quoteflow: --rate-by %q: want calls or quantity\n", f.rateBy)
		return 2, false
	}
	if f.url == "" {
		if !f.parsed.Unlimited() {
			fmt.Fprintln(stderr, "quoteflow: --rate needs --redis: the rate quota is shared through Redis")
			return 2, false
		}
		return 0, true
	}
	if !strings.HasPrefix(f.url, "redis://") && !strings.HasPrefix(f.url, "rediss://") {
		fmt.Fprintf(stderr, "quoteflow: --redis %q is not a redis:// or rediss:// URL (like redis://127.0.0.1:6379/0)\n", f.url)
		return 2, false
	}
	if _, err := redis.ParseURL(f.url); err != nil {
		fmt.Fprintf(stderr, "quoteflow: --redis %q: %v\n", f.url, err)
		return 2, false
	}
	return 0, true
}

// runCompensate is `quoteflow compensate --once`: one drain, then the counts.
func runCompensate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("quoteflow compensate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	once := fs.Bool("once", false, "drain the due jobs once and exit (required: the server runs the worker itself)")
	provider, data, shared := commonFlags(fs)
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	case fs.NArg() > 0 || !*once:
		fmt.Fprintln(stderr, "usage: quoteflow compensate --once [--data DIR | --redis URL] [--provider URL]")
		return 2
	}
	if code, ok := checkProvider(*provider, stderr); !ok {
		return code
	}
	if code, ok := shared.check(stderr); !ok {
		return code
	}
	err := func() error {
		svc, closeData, _, err := open(*provider, *data, shared)
		if err != nil {
			return err
		}
		defer closeData()
		if err := svc.Drain(context.Background()); err != nil {
			return err
		}
		c, err := svc.CompensationCounts(context.Background())
		fmt.Fprintf(stdout, "compensation: pending %d, leased %d, done %d, dead %d, pruned %d\n", c.Pending, c.Leased, c.Done, c.Dead, c.Pruned)
		return err
	}()
	if err != nil {
		fmt.Fprintln(stderr, "quoteflow:", strings.TrimPrefix(err.Error(), "quoteflow: "))
		return 1
	}
	return 0
}

// open builds the service: with --redis on the shared quota, baskets and
// queue in Redis, otherwise on the data directory's one bbolt file. closeData
// closes what it opened; uses says which quota and queue it uses.
func open(provider, dir string, shared *sharedFlags) (svc *quoteflow.Service, closeData func(), uses string, err error) {
	if shared.url != "" {
		return openRedis(provider, shared)
	}
	svc, closeData, err = openBolt(provider, dir, shared.config())
	if err != nil {
		return nil, nil, "", err
	}
	uses = fmt.Sprintf("quota: local, %d supplier calls at once in this process; baskets and queue: bbolt in %s",
		shared.limiting.outboundLimit(), filepath.Join(dir, "quoteflow.db"))
	return svc, closeData, uses, nil
}

// openRedis builds the service on one Redis server: the concurrency and rate
// quota, the baskets and the compensation queue, all shared with every
// process on the same server. A Redis that does not answer is an error here;
// one that goes away later makes supplier calls fail closed until it is back.
func openRedis(provider string, shared *sharedFlags) (*quoteflow.Service, func(), string, error) {
	rdb, err := quota.NewClient(shared.url)
	if err != nil {
		return nil, nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		rdb.Close()
		return nil, nil, "", fmt.Errorf("cannot reach Redis at %s: %w (start redis-server, or `go run ./lab redis` for a stand-in)", shared.url, err)
	}
	q, err := queue.NewStream(ctx, rdb, queue.StreamConfig{})
	if err != nil {
		rdb.Close()
		return nil, nil, "", err
	}
	store, err := quoteflow.NewRedisStore(q, 0) // a basket and its jobs in one script
	if err != nil {
		rdb.Close()
		return nil, nil, "", err
	}
	cfg := shared.quota(shared.parsed)
	qt, err := quota.NewRedis(rdb, cfg)
	if err != nil {
		rdb.Close()
		return nil, nil, "", err
	}
	c := shared.config()
	c.ProviderURL, c.Quota, c.RateByQuantity, c.Store, c.Queue = provider, qt, shared.byQuantity(), store, q
	svc, err := quoteflow.New(c)
	if err != nil {
		qt.Close()
		rdb.Close()
		return nil, nil, "", err
	}
	rate := "no rate quota"
	if !shared.parsed.Unlimited() {
		rate = "rate " + shared.parsed.String() + " per supplier"
		if shared.byQuantity() {
			rate = "rate " + shared.parsed.String() + " units of quantity per supplier"
		}
	}
	uses := fmt.Sprintf("quota: redis %s, %d supplier calls at once for every process on it (leases, TTL %s), %s; baskets and queue: redis stream, consumer %s",
		shared.url, quoteflow.DefaultOutbound, cfg.TTL, rate, q.Consumer())
	return svc, func() { svc.Close(); qt.Close(); rdb.Close() }, uses, nil
}

// openBolt builds the service on the data directory's one bbolt file.
func openBolt(provider, dir string, cfg quoteflow.Config) (svc *quoteflow.Service, closeData func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	path := filepath.Join(dir, "quoteflow.db")
	db, err := openData(path) // a damaged file is refused here, in one sentence
	if err != nil {
		return nil, nil, err
	}
	q, err := queue.NewBolt(db, queue.Limits{})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	store, err := quoteflow.NewBoltStore(db, q, 0) // one file: a basket and its jobs commit together
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	cfg.ProviderURL, cfg.Store, cfg.Queue = provider, store, q
	svc, err = quoteflow.New(cfg)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return svc, func() { svc.Close(); db.Close() }, nil
}

// dataFile is where the bbolt file in dir lives, as an absolute path when
// it can be had: the start line says where the data is, wherever it ran from.
func dataFile(dir string) string {
	path := filepath.Join(dir, "quoteflow.db")
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

func serve(addr, provider, data string, shared *sharedFlags, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w (is another quoteflow running? Stop it or pick another port with --addr)", err)
	}
	if err != nil {
		return err
	}
	defer ln.Close()
	svc, closeData, uses, err := open(provider, data, shared)
	if err != nil {
		return err
	}
	defer closeData()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := quoteflow.NewServer(svc.Handler()) // every read bounded
	worker := make(chan struct{})
	go func() {
		defer close(worker)
		svc.RunCompensation(ctx) // finishes what a restart left in the queue, too
	}()
	defer func() { stop(); <-worker }()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		grace, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(grace) // in-flight quotes end within their budget
	}()
	where := "data " + dataFile(data)
	if shared.url != "" {
		where = "redis " + shared.url
	}
	fmt.Fprintf(stdout, "quoteflow listening on http://%s (provider %s, %s)\n", ln.Addr(), provider, where)
	fmt.Fprintln(stdout, uses)
	fmt.Fprintln(stdout, shared.hedging.describe())
	fmt.Fprintln(stdout, shared.breaking.describe())
	fmt.Fprintln(stdout, shared.limiting.describe())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-drained // Serve returns as soon as Shutdown starts; wait for in-flight requests
	fmt.Fprintln(stdout, "quoteflow stopped")
	return nil
}

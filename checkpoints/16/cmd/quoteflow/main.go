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

	"quoteflowlab.dev/checkpoints/16/queue"
	"quoteflowlab.dev/checkpoints/16/quoteflow"
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
	provider, data := commonFlags(fs)
	tm := timingFlags(fs)
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
	if code, ok := tm.check(stderr); !ok {
		return code
	}
	if err := serve(*addr, *provider, *data, tm, stdout); err != nil {
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

func commonFlags(fs *flag.FlagSet) (provider, data *string) {
	provider = fs.String("provider", cmp.Or(os.Getenv("QUOTEFLOW_PROVIDER_URL"), quoteflow.DefaultProviderURL),
		"provider lab base URL (env QUOTEFLOW_PROVIDER_URL)")
	data = fs.String("data", "./quoteflow-data", "directory of the baskets and compensation queue (one bbolt file)")
	return provider, data
}

// runCompensate is `quoteflow compensate --once`: one drain, then the counts.
func runCompensate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("quoteflow compensate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	once := fs.Bool("once", false, "drain the due jobs once and exit (required: the server runs the worker itself)")
	provider, data := commonFlags(fs)
	tm := timingFlags(fs)
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		return 2
	case fs.NArg() > 0 || !*once:
		fmt.Fprintln(stderr, "usage: quoteflow compensate --once [--data DIR] [--provider URL]")
		return 2
	}
	if code, ok := checkProvider(*provider, stderr); !ok {
		return code
	}
	if code, ok := tm.check(stderr); !ok {
		return code
	}
	err := func() error {
		svc, closeData, err := open(*provider, *data, tm)
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

// open builds the service on the data directory's one bbolt file; closeData
// closes both.
func open(provider, dir string, tm *timings) (svc *quoteflow.Service, closeData func(), err error) {
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
	svc, err = quoteflow.New(quoteflow.Config{ProviderURL: provider, Store: store, Queue: q, Basket: tm.basket()})
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

func serve(addr, provider, data string, tm *timings, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w (is another quoteflow running? Stop it or pick another port with --addr)", err)
	}
	if err != nil {
		return err
	}
	defer ln.Close()
	svc, closeData, err := open(provider, data, tm)
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
	fmt.Fprintf(stdout, "quoteflow listening on http://%s (provider %s, data %s)\n", ln.Addr(), provider, dataFile(data))
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-drained // Serve returns as soon as Shutdown starts; wait for in-flight requests
	fmt.Fprintln(stdout, "quoteflow stopped")
	return nil
}

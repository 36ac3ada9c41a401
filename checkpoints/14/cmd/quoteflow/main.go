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
	"strings"
	"syscall"
	"time"

	"quoteflowlab.dev/checkpoints/14/quoteflow"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run serves until SIGINT or SIGTERM; it returns 2 for a usage error
// (a bad flag, a stray argument, a --provider that is not an http(s) URL).
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("quoteflow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:9100", "listen address")
	provider := fs.String("provider", cmp.Or(os.Getenv("QUOTEFLOW_PROVIDER_URL"), quoteflow.DefaultProviderURL),
		"provider lab base URL (env QUOTEFLOW_PROVIDER_URL)")
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
	if *provider == "" {
		fmt.Fprintln(stderr, "quoteflow: --provider is empty: give the provider lab's base URL, e.g. --provider http://127.0.0.1:9101")
		return 2
	}
	svc, err := quoteflow.New(quoteflow.Config{ProviderURL: *provider})
	if err != nil { // a --provider that is not an http(s) URL
		fmt.Fprintln(stderr, "quoteflow:", strings.TrimPrefix(err.Error(), "quoteflow: "))
		return 2
	}
	defer svc.Close()
	if err := serve(svc, *addr, *provider, stdout); err != nil {
		fmt.Fprintln(stderr, "quoteflow:", strings.TrimPrefix(err.Error(), "quoteflow: "))
		return 1
	}
	return 0
}

func serve(svc *quoteflow.Service, addr, provider string, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("%w (is another quoteflow running? Stop it or pick another port with --addr)", err)
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := quoteflow.NewServer(svc.Handler()) // every read bounded
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		<-ctx.Done()
		grace, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(grace) // in-flight quotes end within their budget
	}()
	fmt.Fprintf(stdout, "quoteflow listening on http://%s (provider %s)\n", ln.Addr(), provider)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	<-drained // Serve returns as soon as Shutdown starts; wait for in-flight requests
	fmt.Fprintln(stdout, "quoteflow stopped")
	return nil
}

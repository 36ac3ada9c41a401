package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// providerDefaultURL is where `lab provider` listens by default.
const providerDefaultURL = "http://127.0.0.1:9101"

// controlTimeout caps a call to the provider's control endpoints.
const controlTimeout = 5 * time.Second

// runStats prints a running provider lab's /stats, indented.
func runStats(args []string, stdout, stderr io.Writer) int {
	return runControl("stats", http.MethodGet, "/stats", args, stdout, stderr)
}

// runReset zeroes a running provider lab's counters and per-key state (POST /reset).
func runReset(args []string, stdout, stderr io.Writer) int {
	return runControl("reset", http.MethodPost, "/reset", args, stdout, stderr)
}

// runControl calls one control endpoint and prints its JSON answer indented.
func runControl(name, method, path string, args []string, stdout, stderr io.Writer) int {
	fs := newFlags(name, "[--provider URL]", stderr)
	base := fs.String("provider", providerDefaultURL, "base `URL` of the running provider lab")
	if code, ok := parseProviderFlags(fs, args); !ok {
		return code
	}
	if !isBaseURL(*base) {
		return usageError(fs, stderr, "--provider %q is not a base URL like %s", *base, providerDefaultURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	endpoint := strings.TrimSuffix(*base, "/") + path
	body, status, err := controlFetch(ctx, method, endpoint)
	if err != nil {
		fmt.Fprintf(stderr, "lab %s: %s\n", name, controlUnreachable(*base, err))
		return 1
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, body, "", "  ") != nil {
		pretty.Reset()
		pretty.Write(body)
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "lab %s: %s answered %d: %s\n", name, endpoint, status, bytes.TrimSpace(pretty.Bytes()))
		return 1
	}
	fmt.Fprintln(stdout, strings.TrimSpace(pretty.String()))
	return 0
}

// isBaseURL reports whether s is an http(s) URL with a host.
func isBaseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// controlFetch does one request and returns the body and status.
func controlFetch(ctx context.Context, method, url string) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return nil, 0, err
	}
	if method != http.MethodGet {
		// The lab takes a change of state only as JSON (a web page on
		// another origin cannot send that without a preflight).
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return body, resp.StatusCode, err
}

// controlUnreachable explains in one line why the provider could not be asked.
func controlUnreachable(base string, err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("no provider lab at %s (connection refused); start one with `go run ./lab provider`", base)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("provider lab at %s did not answer within %s", base, controlTimeout)
	}
	return fmt.Sprintf("cannot reach the provider lab at %s: %v", base, err)
}

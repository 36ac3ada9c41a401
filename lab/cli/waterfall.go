package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"

	"quoteflowlab.dev/lab/internal/waterfall"
	"quoteflowlab.dev/provider"
)

// runWaterfall draws one X-Request-ID's attempts, as a running provider lab
// recorded them, as an SVG.
func runWaterfall(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("waterfall", "--id ID [--provider URL] [--out FILE.svg] [--deadline-ms N]", stderr)
	id := fs.String("id", "", "the `X-Request-ID` to draw (QuoteFlow prints it as request_id)")
	base := fs.String("provider", providerDefaultURL, "base `URL` of the running provider lab")
	out := fs.String("out", "", "write the SVG to `FILE` and print a summary; without it the SVG goes to stdout")
	deadline := fs.Float64("deadline-ms", 0, "draw the deadline `N` ms after the first attempt (default: from the X-Budget-Ms the attempts carried, if any)")
	if code, ok := parseProviderFlags(fs, args); !ok {
		return code
	}
	switch {
	case *id == "":
		return usageError(fs, stderr, "--id is required: the X-Request-ID whose attempts to draw")
	case len(*id) > provider.MaxKeyBytes:
		return usageError(fs, stderr, "--id is %d bytes; the lab keeps IDs of at most %d", len(*id), provider.MaxKeyBytes)
	case !(*deadline >= 0 && *deadline <= 86400000) || math.IsInf(*deadline, 0):
		return usageError(fs, stderr, "--deadline-ms must be a number of ms from 0 to 86400000 (got %v)", *deadline)
	}
	if u, err := url.Parse(*base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError(fs, stderr, "--provider %q is not a base URL like %s", *base, providerDefaultURL)
	}

	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	endpoint := strings.TrimSuffix(*base, "/") + "/stats/requests?id=" + url.QueryEscape(*id)
	body, status, err := controlFetch(ctx, http.MethodGet, endpoint)
	if err != nil {
		fmt.Fprintf(stderr, "lab waterfall: %s\n", controlUnreachable(*base, err))
		return 1
	}
	if status != http.StatusOK {
		fmt.Fprintf(stderr, "lab waterfall: %s answered %d: %s\n", endpoint, status, bytes.TrimSpace(body))
		return 1
	}
	var rs provider.RequestStats
	if err := json.Unmarshal(body, &rs); err != nil {
		fmt.Fprintf(stderr, "lab waterfall: %s answered something that is not a request log: %v\n", endpoint, err)
		return 1
	}
	if len(rs.Log.Atlas)+len(rs.Log.Boreal)+len(rs.Log.Cedar) == 0 {
		fmt.Fprintf(stderr, "lab waterfall: the provider lab at %s has no attempts logged for X-Request-ID %q (a typo? a reset or restart forgets them)\n", *base, *id)
		return 1
	}
	opt := waterfall.Options{DeadlineMs: *deadline}
	if *out == "" {
		if err := waterfall.Render(stdout, rs, opt); err != nil {
			fmt.Fprintf(stderr, "lab waterfall: %v\n", err)
			return 1
		}
		return 0
	}
	var svg bytes.Buffer
	waterfall.Render(&svg, rs, opt)
	if err := os.WriteFile(*out, svg.Bytes(), 0o644); err != nil {
		fmt.Fprintf(stderr, "lab waterfall: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s: X-Request-ID %s\n", *out, *id)
	for _, line := range waterfall.Summary(rs, opt) {
		fmt.Fprintln(stdout, "  "+line)
	}
	return 0
}

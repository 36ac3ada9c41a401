package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"quoteflowlab.dev/kit/api"
	"quoteflowlab.dev/lab/internal/waterfall"
	"quoteflowlab.dev/provider"
)

// runWaterfall draws one X-Request-ID's attempts, as a running provider lab
// recorded them, as an SVG.
func runWaterfall(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("waterfall", "(--id ID | --basket FILE [--status N]) [--provider URL] [--out FILE.svg] [--deadline-ms N]", stderr)
	id := fs.String("id", "", "the `X-Request-ID` to draw (QuoteFlow prints it as request_id)")
	basket := fs.String("basket", "", "instead of --id: a saved basket answer (`FILE`, - for stdin); draw its first line with a --status attempt")
	wantStatus := fs.Int("status", 429, "with --basket: the attempt status a line must show (e.g. 429, 503)")
	base := fs.String("provider", providerDefaultURL, "base `URL` of the running provider lab")
	out := fs.String("out", "", "write the SVG to `FILE` and print a summary; without it the SVG goes to stdout")
	deadline := fs.Float64("deadline-ms", 0, "draw the deadline `N` ms after the first attempt (default: from the X-Budget-Ms the attempts carried, if any)")
	if code, ok := parseProviderFlags(fs, args); !ok {
		return code
	}
	if *wantStatus < 100 || *wantStatus > 599 {
		return usageError(fs, stderr, "--status %d: want an HTTP status from 100 to 599 (e.g. 429, 503)", *wantStatus)
	}
	if *basket != "" {
		if *id != "" {
			return usageError(fs, stderr, "give --id or --basket, not both")
		}
		picked, code := pickLine(*basket, *base, *wantStatus, stderr)
		if code != 0 {
			return code
		}
		*id = picked
	}
	switch {
	case *id == "":
		return usageError(fs, stderr, "--id is required: the X-Request-ID whose attempts to draw")
	case len(*id) > provider.MaxKeyBytes:
		return usageError(fs, stderr, "--id is %d bytes; the lab keeps IDs of at most %d", len(*id), provider.MaxKeyBytes)
	case !(*deadline >= 0 && *deadline <= 86400000): // NaN and infinities fail it too
		return usageError(fs, stderr, "--deadline-ms must be a number of ms from 0 to 86400000 (got %v)", *deadline)
	}
	if !isBaseURL(*base) {
		return usageError(fs, stderr, "--provider %q is not a base URL like %s", *base, providerDefaultURL)
	}

	ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
	defer cancel()
	rs, err := api.RequestLog(ctx, nil, *base, *id)
	var status *api.StatusError
	var body *api.BodyError
	switch {
	case errors.As(err, &status):
		fmt.Fprintf(stderr, "lab waterfall: %s answered %d: %s\n", status.URL, status.Code, bytes.TrimSpace(status.Body))
		return 1
	case errors.As(err, &body):
		fmt.Fprintf(stderr, "lab waterfall: %v\n", body)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "lab waterfall: %s\n", controlUnreachable(*base, err))
		return 1
	}
	if len(rs.Log.Atlas)+len(rs.Log.Boreal)+len(rs.Log.Cedar) == 0 {
		fmt.Fprintf(stderr, "lab waterfall: the provider lab at %s has no attempts logged for X-Request-ID %q (a typo? a reset or restart forgets them)\n", *base, *id)
		return 1
	}
	opt := waterfall.Options{DeadlineMs: *deadline}
	if *out == "" {
		if err := waterfall.Render(stdout, rs, opt); err != nil {
			return failed(stderr, "lab waterfall", err)
		}
		return 0
	}
	var svg bytes.Buffer
	waterfall.Render(&svg, rs, opt)
	if err := os.WriteFile(*out, svg.Bytes(), 0o644); err != nil {
		return failed(stderr, "lab waterfall", err)
	}
	fmt.Fprintf(stdout, "wrote %s: X-Request-ID %s\n", *out, *id)
	for _, line := range waterfall.Summary(rs, opt) {
		fmt.Fprintln(stdout, "  "+line)
	}
	return 0
}

// pickLine reads a saved basket answer and returns the request_id of its
// first line whose attempts, as the provider lab logged them, include one
// answered with status.
func pickLine(file, base string, status int, stderr io.Writer) (string, int) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lab waterfall: %v\n", err)
		return "", 1
	}
	var b api.Answer
	if err := json.Unmarshal(data, &b); err != nil || len(b.Items) == 0 {
		fmt.Fprintf(stderr, "lab waterfall: %s is not a basket answer with lines (save one with curl ... > FILE)\n", file)
		return "", 1
	}
	for _, it := range b.Items {
		if len(it.RequestID) == 0 || len(it.RequestID) > provider.MaxKeyBytes {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
		rs, err := api.RequestLog(ctx, nil, base, it.RequestID)
		cancel()
		var refused *api.StatusError
		var odd *api.BodyError
		if errors.As(err, &refused) || errors.As(err, &odd) {
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "lab waterfall: %s\n", controlUnreachable(base, err))
			return "", 1
		}
		for _, a := range slices.Concat(rs.Log.Atlas, rs.Log.Boreal, rs.Log.Cedar) {
			if a.Status == status {
				fmt.Fprintf(stderr, "line %d has a %d: X-Request-ID %s\n", it.Index, status, it.RequestID)
				return it.RequestID, 0
			}
		}
	}
	fmt.Fprintf(stderr, "lab waterfall: no line of %s has an attempt answered %d\n", file, status)
	return "", 1
}

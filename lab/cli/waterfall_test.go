package cli

import (
	"context"
	"encoding/xml"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

// lab waterfall against a real provider lab: a flaky request retried once
// becomes two boreal bars in a well-formed SVG; bad use exits 2, an unknown
// ID or no lab exits 1.
func TestWaterfallDrawsARetriedRequestFromALiveLab(t *testing.T) {
	srv, err := provider.Start(provider.Options{LatencyScale: 0.2}, "127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for i, want := range []int{503, 200} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/quotes/boreal?sku=KB-001&scenario=flaky", nil)
		req.Header.Set("X-Request-ID", "wf-1")
		req.Header.Set("X-Budget-Ms", []string{"500", "450"}[i])
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("attempt %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}

	out := filepath.Join(t.TempDir(), "wf.svg")
	var stdout, stderr strings.Builder
	if code := Main([]string{"waterfall", "--provider", srv.URL, "--id", "wf-1", "--out", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"wrote " + out, "boreal  503 done", "wait ", "200 done", "→ 200 after 2 attempts", "(X-Budget-Ms)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("summary %q lacks %q", stdout.String(), want)
		}
	}
	svg, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName xml.Name
		Lanes   []struct {
			Supplier string `xml:"data-supplier,attr"`
			Rects    []struct {
				Class string `xml:"class,attr"`
			} `xml:"rect"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("the SVG is not XML: %v", err)
	}
	bars := map[string]int{}
	for _, l := range doc.Lanes {
		for _, r := range l.Rects {
			if r.Class == "attempt" {
				bars[l.Supplier]++
			}
		}
	}
	if doc.XMLName.Local != "svg" || bars["boreal"] != 2 || bars["atlas"] != 0 || bars["cedar"] != 0 {
		t.Errorf("<%s> with bars %v, want an svg with boreal's 2 attempts only", doc.XMLName.Local, bars)
	}

	// Without --out the SVG is the whole of stdout.
	stdout.Reset()
	if code := Main([]string{"waterfall", "--provider", srv.URL, "--id", "wf-1"}, &stdout, &stderr); code != 0 ||
		!strings.HasPrefix(stdout.String(), "<svg ") || !strings.HasSuffix(stdout.String(), "</svg>\n") {
		t.Errorf("exit %d, stdout %.60q…: want the SVG alone", code, stdout.String())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"--provider", srv.URL}, 2, "--id is required"},
		{[]string{"--provider", srv.URL, "--id", strings.Repeat("x", 129)}, 2, "at most 128"},
		{[]string{"--provider", srv.URL, "--id", "wf-1", "--deadline-ms", "-5"}, 2, "--deadline-ms must be"},
		{[]string{"--provider", srv.URL, "--id", "wf-1", "--deadline-ms", "NaN"}, 2, "--deadline-ms must be"},
		{[]string{"--provider", srv.URL, "--id", "wf-1", "--deadline-ms", "Inf"}, 2, "--deadline-ms must be"},
		{[]string{"--provider", srv.URL, "--basket", "-", "--status", "0"}, 2, "--status 0: want an HTTP status"},
		{[]string{"--provider", srv.URL, "--basket", "-", "--status", "4290"}, 2, "--status 4290: want an HTTP status"},
		{[]string{"--provider", srv.URL, "--basket", "-", "--status", "-429"}, 2, "--status -429: want an HTTP status"},
		{[]string{"--provider", "ftp://x", "--id", "wf-1"}, 2, "not a base URL"},
		{[]string{"--provider", srv.URL, "--id", "wf-1", "extra"}, 2, "unexpected argument"},
		{[]string{"--provider", srv.URL, "--id", "never-sent"}, 1, `no attempts logged for X-Request-ID "never-sent"`},
		{[]string{"--provider", closed, "--id", "wf-1"}, 1, "no provider lab at"},
		{[]string{"--provider", srv.URL, "--id", "wf-1", "--out", filepath.Join(t.TempDir(), "no", "such", "dir.svg")}, 1, "no such file"},
	} {
		stdout.Reset()
		stderr.Reset()
		code := Main(append([]string{"waterfall"}, c.args...), &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("lab waterfall %v: exit %d, stderr %q; want exit %d saying %q", c.args, code, stderr.String(), c.code, c.says)
		}
	}
}

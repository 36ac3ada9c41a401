package uitest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"quoteflowlab.dev/provider"
)

// latencyScale doubles the lab's delays (slow: 3 s), so the browser has a
// wide window to show six calls in flight even on a busy machine.
const latencyScale = 2

// slowCalls is how many quote requests run at once in the slow scenario;
// each asks all three suppliers, as QuoteFlow does.
const slowCalls = 6

// TestDashboardShowsWhatTheLabSees opens /ui in headless Chromium, makes
// traffic whose shape is known, and checks the page: boreal's calls in
// flight reach the known number, a retried request's row shows two attempts
// with a gap between them, the counts match the traffic, reset empties
// them, and a dead feed is shown as dead.
func TestDashboardShowsWhatTheLabSees(t *testing.T) {
	t.Parallel() // each test has a browser and a lab of its own
	browser := findBrowser(t)
	srv, err := provider.Start(provider.Options{LatencyScale: latencyScale}, "127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(ctx)
		}
	}
	t.Cleanup(stop)
	page := openBrowser(t, browser)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t.Cleanup(client.CloseIdleConnections)

	if err := chromedp.Do(page.ctx, chromedp.EmulateViewport(1280, 860), chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatalf("opening %s/ui: %v", srv.URL, err)
	}
	page.waitFor("the feed to be live", `document.getElementById("conn").dataset.state === "live"`,
		`document.getElementById("conn").textContent`, 10*time.Second)

	// A retry: the first boreal attempt of "ui-flaky-1" gets 503, the
	// second, 50 ms after the first ended, 200.
	quote(t, client, srv.URL, "boreal", "flaky", "ui-flaky-1", http.StatusServiceUnavailable)
	time.Sleep(50 * time.Millisecond) // the client's backoff: the gap the page must show
	quote(t, client, srv.URL, "boreal", "flaky", "ui-flaky-1", http.StatusOK)

	// Six quotes at once in the slow scenario: boreal holds six calls for
	// 3 s; atlas and cedar answer within 100 ms.
	var wg sync.WaitGroup
	for i := range slowCalls {
		for _, sup := range provider.Suppliers {
			wg.Go(func() { quote(t, client, srv.URL, sup, "slow", fmt.Sprintf("ui-slow-%d", i+1), http.StatusOK) })
		}
	}
	slowDone := make(chan struct{})
	go func() { wg.Wait(); close(slowDone) }()

	page.waitFor("boreal's in-flight count to show 6", `document.getElementById("inflight-boreal").textContent === "6"`,
		`"boreal shows " + document.getElementById("inflight-boreal").textContent`, 2500*time.Millisecond)
	// Atlas and cedar answer within 100 ms; boreal still holds its six.
	page.waitFor("atlas and cedar to be done", `["atlas", "cedar"].every((s) => document.getElementById("inflight-" + s).textContent === "0")`,
		`"atlas shows " + document.getElementById("inflight-atlas").textContent + ", cedar " + document.getElementById("inflight-cedar").textContent`,
		2*time.Second)
	if got := page.text("#inflight-boreal"); got != "6" {
		t.Errorf("boreal in flight: %s, want 6 (its slow calls take 3 s)", got)
	}
	if over := page.eval(`String(document.getElementById("inflight-boreal").classList.contains("over"))`); over != "false" {
		t.Errorf("6 in flight against the default limit 6 is marked over the limit")
	}

	// The retried request's row: two boreal bars, 503 then 200, with empty
	// space between them, as laid out on the screen.
	var row struct {
		Found bool
		Bars  []struct {
			Left, Right, Width float64
			Status, End, Text  string
			Visible            bool
		}
		Gap string
	}
	page.evalJSON(`(() => {
		const row = [...document.querySelectorAll("#rows .row")].find((r) => r.dataset.id === "ui-flaky-1");
		if (!row) return {found: false, bars: [], gap: ""};
		const lane = row.querySelector('.lane[data-supplier="boreal"]');
		const bars = [...(lane ? lane.querySelectorAll(".bar") : [])].map((b) => {
			const r = b.getBoundingClientRect();
			return {left: r.left, right: r.right, width: r.width, status: b.dataset.status, end: b.dataset.end,
				text: b.textContent, visible: r.width > 0 && r.height > 0 && getComputedStyle(b).visibility === "visible"};
		});
		const gap = lane && lane.querySelector(".gap");
		return {found: true, bars, gap: gap ? gap.textContent : ""};
	})()`, &row)
	switch {
	case !row.Found:
		t.Errorf("no timeline row for X-Request-ID ui-flaky-1")
	case len(row.Bars) != 2:
		t.Errorf("row ui-flaky-1 shows %d boreal attempts, want 2: %+v", len(row.Bars), row.Bars)
	default:
		a, b := row.Bars[0], row.Bars[1]
		if a.Status != "503" || a.End != "done" || b.Status != "200" || b.End != "done" {
			t.Errorf("row ui-flaky-1: attempts %s/%s then %s/%s, want 503/done then 200/done", a.Status, a.End, b.Status, b.End)
		}
		if !a.Visible || !b.Visible {
			t.Errorf("row ui-flaky-1: a bar is not visible: %+v", row.Bars)
		}
		if gap := b.Left - a.Right; gap < 3 {
			t.Errorf("row ui-flaky-1: %.1f px between the attempts (first ends at %.1f, second starts at %.1f); want a visible gap",
				gap, a.Right, b.Left)
		}
		if !strings.HasSuffix(row.Gap, "ms") {
			t.Errorf("row ui-flaky-1: gap label %q, want the backoff in ms", row.Gap)
		}
	}
	// Mid-run: the slow calls have been running for a second and a half.
	page.waitFor("boreal's slow bars to reach 1.5 s", `[...document.querySelectorAll(".bar.running")].some((b) => Number(b.dataset.ms) >= 1500)`,
		`document.querySelectorAll(".bar.running").length + " running bars"`, 5*time.Second)
	shot := filepath.Join(t.ArtifactDir(), "dashboard.png")
	page.screenshot(shot)
	t.Logf("screenshot mid-run: %s (kept with go test -artifacts -outputdir DIR)", shot)

	select {
	case <-slowDone:
	case <-time.After(15 * time.Second):
		t.Fatal("the slow requests did not finish within 15 s")
	}
	// 1 + 18 answers of 200, one 503; nothing in flight any more.
	want := map[string]string{"total": "20", "200": "19", "503": "1", "504": "0", "429": "0", "resets": "0"}
	page.waitFor("the counts to match the traffic", countsAre(want), countsNow, 5*time.Second)
	for _, sup := range provider.Suppliers {
		page.waitFor(sup+"'s in-flight count to return to 0", `document.getElementById("inflight-`+sup+`").textContent === "0"`,
			`"`+sup+` shows " + document.getElementById("inflight-`+sup+`").textContent`, 5*time.Second)
	}
	if got := page.text("#peak-boreal"); got != "peak 6" {
		t.Errorf("boreal's peak shows %q, want \"peak 6\"", got)
	}

	// Reset: the page's button posts /reset; the counts and the timeline empty.
	clickCtx, cancelClick := context.WithTimeout(page.ctx, 5*time.Second)
	err = chromedp.Do(clickCtx, chromedp.Click(chromedp.CSS("#reset"), chromedp.NodeVisible))
	cancelClick()
	if err != nil {
		t.Fatalf("clicking reset: %v", err)
	}
	zero := map[string]string{"total": "0", "200": "0", "503": "0", "504": "0", "429": "0", "resets": "0"}
	page.waitFor("reset to empty the counts", countsAre(zero), countsNow, 5*time.Second)
	page.waitFor("reset to empty the timeline", `document.querySelectorAll("#rows .row").length === 0`,
		`document.querySelectorAll("#rows .row").length + " rows"`, 5*time.Second)
	if st := srv.Provider.Snapshot(); st.Total != 0 {
		t.Errorf("after the page's reset the lab counts %d requests, want 0", st.Total)
	}

	// A feed that stops must not look live.
	stop()
	page.waitFor("the page to show the feed is lost", `document.getElementById("conn").dataset.state !== "live"`,
		`document.getElementById("conn").textContent`, 6*time.Second)
}

// countsAre is a predicate: every count cell shows its wanted text.
func countsAre(want map[string]string) string {
	b, _ := json.Marshal(want)
	return `Object.entries(` + string(b) + `).every(([k, v]) => document.getElementById("count-" + k).textContent === v)`
}

// countsNow describes the count cells, for a failure message.
const countsNow = `[...document.querySelectorAll("[id^=count-]")].map((e) => e.id.slice(6) + "=" + e.textContent).join(" ")`

// quote GETs one supplier quote with an X-Request-ID and checks its status.
func quote(t *testing.T, c *http.Client, base, supplier, scenario, id string, want int) {
	req, err := http.NewRequest(http.MethodGet, base+"/quotes/"+supplier+"?sku=KB-001&scenario="+scenario, nil)
	if err != nil {
		t.Error(err)
		return
	}
	req.Header.Set("X-Request-ID", id)
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("%s %s %s: %v", supplier, scenario, id, err)
		return
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != want {
		t.Errorf("%s %s %s: status %d, want %d", supplier, scenario, id, resp.StatusCode, want)
	}
}

// findBrowser returns the path of a Chromium. Without one it skips the
// test, except under CI=true, where a missing browser is a failure.
func findBrowser(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const how = "no Chromium found (looked for chromium, chromium-browser, google-chrome; or set CHROMIUM=path): install one with `apt-get install chromium`"
	if os.Getenv("CI") == "true" {
		t.Fatal(how + " — under CI=true the browser test must run")
	}
	t.Skip(how)
	return ""
}

// A page is one tab of a headless browser.
type page struct {
	t   *testing.T
	ctx context.Context
}

// openBrowser starts a headless Chromium that talks to the test over a
// pipe and reaches only loopback, with a fresh profile; it is stopped, with
// its whole process group, when the test ends.
//
// A browser that exits before it is up (on a busy machine Chromium now and
// then crashes while it starts, with nothing of the test yet run) is
// started again, at most startAttempts times in all; one that never comes
// up fails the test, saying each attempt's error.
func openBrowser(t *testing.T, path string) *page {
	t.Helper()
	var errs []string
	for attempt := 1; attempt <= startAttempts; attempt++ {
		p, err := startBrowser(t, path)
		if err == nil {
			if attempt > 1 {
				t.Logf("%s started on attempt %d; before: %s", path, attempt, strings.Join(errs, "; "))
			}
			return p
		}
		errs = append(errs, fmt.Sprintf("attempt %d: %v", attempt, err))
	}
	t.Fatalf("starting %s: %s", path, strings.Join(errs, "\n"))
	return nil
}

// startAttempts bounds how often openBrowser starts a browser.
const startAttempts = 3

// startBrowser starts one browser; it is stopped when the test ends.
func startBrowser(t *testing.T, path string) (*page, error) {
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.ModifyCmdFunc(ownGroup),
	)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	stop := func() {
		var pid int
		if b := chromedp.FromContext(ctx).Browser; b != nil && b.Process() != nil {
			pid = b.Process().Pid
		}
		cancelTab()
		cancelAlloc()
		if pid > 0 {
			killGroup(pid)
		}
	}
	// The first Run starts the browser; bound it without bounding the
	// browser's life (a timeout on this context would end the browser).
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			stop()
			return nil, err
		}
	case <-time.After(30 * time.Second):
		stop()
		return nil, fmt.Errorf("did not start within 30 s")
	}
	t.Cleanup(stop)
	return &page{t: t, ctx: ctx}, nil
}

// waitFor waits until the JavaScript predicate holds, at most limit; on
// timeout it fails the test with what describe evaluates to (what the page
// shows instead) and saves a screenshot.
func (p *page) waitFor(what, predicate, describe string, limit time.Duration) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, limit+2*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(limit)))
	if err == nil {
		return
	}
	shot := filepath.Join(p.t.ArtifactDir(), "failure.png")
	p.screenshot(shot)
	p.t.Fatalf("waited %v for %s: %v; the page shows: %s (screenshot %s)", limit, what, err, p.eval(describe), shot)
}

// eval returns a JavaScript expression's value as a string.
func (p *page) eval(expr string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`String(`+expr+`)`))
	if err != nil {
		return "(cannot evaluate: " + err.Error() + ")"
	}
	return v
}

// evalJSON evaluates expr and decodes its value into v.
func (p *page) evalJSON(expr string, v any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	b, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr))
	if err != nil {
		p.t.Fatalf("evaluating in the page: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		p.t.Fatalf("decoding %s: %v", b, err)
	}
}

// text returns the text content of the element sel selects.
func (p *page) text(sel string) string {
	p.t.Helper()
	return p.eval(`document.querySelector(` + jsString(sel) + `).textContent`)
}

// screenshot saves the page as a PNG at path.
func (p *page) screenshot(path string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Errorf("screenshot: %v", err)
		return
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Errorf("screenshot: %v", err)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

package uitest_test

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"quoteflowlab.dev/provider"
)

// TestDashboardShowsAHedgedPair makes one hedged pair at boreal — a second,
// fast request of an X-Request-ID while the first (slow) still runs, then the caller
// hangs up on the first once the second has answered — and checks the
// page: hedged 1 and lost 1 in the counts, and the ID's boreal lane with
// two bars that overlap in time, the hedge on a line of its own below the
// first, the first marked lost.
func TestDashboardShowsAHedgedPair(t *testing.T) {
	t.Parallel() // each test has a browser and a lab of its own
	browser := findBrowser(t)
	// slow at scale 0.2: each boreal call takes 300 ms.
	srv, err := provider.Start(provider.Options{LatencyScale: 0.2}, "127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	page := openBrowser(t, browser)
	if err := chromedp.Do(page.ctx, chromedp.EmulateViewport(1280, 860), chromedp.Navigate(srv.URL+"/ui")); err != nil {
		t.Fatalf("opening %s/ui: %v", srv.URL, err)
	}
	page.waitFor("the feed to be live", `document.getElementById("conn").dataset.state === "live"`,
		`document.getElementById("conn").textContent`, 10*time.Second)

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	t.Cleanup(client.CloseIdleConnections)
	const url = "/quotes/boreal?sku=KB-001&scenario=slow"
	ctx, hangUp := context.WithCancel(context.Background())
	defer hangUp()
	firstDone := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+url, nil)
		req.Header.Set("X-Request-ID", "ui-hedge-1")
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		firstDone <- err
	}()
	// The hedge: once the first is running, a second copy with the same ID.
	deadline := time.Now().Add(5 * time.Second)
	for srv.Provider.Snapshot().Active == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the first request did not start within 5 s")
		}
		time.Sleep(5 * time.Millisecond) // polling the lab's gauge: no event to wait on
	}
	time.Sleep(100 * time.Millisecond) // the hedge delay the page must show as an offset
	// The hedge is fast (normal: 6 ms): it answers while the first still runs.
	quote(t, client, srv.URL, "boreal", "normal", "ui-hedge-1", http.StatusOK)
	hangUp() // the winner answered: cancel the loser
	if err := <-firstDone; err == nil {
		t.Fatal("the first request finished before the hedge answered; it must still be running")
	}

	page.waitFor("hedged and lost to be counted", `document.getElementById("count-hedged").textContent === "1" && document.getElementById("count-lost_cancelled").textContent === "1"`,
		`"hedged " + document.getElementById("count-hedged").textContent + ", lost " + document.getElementById("count-lost_cancelled").textContent`, 5*time.Second)
	var lane struct {
		Found, Pair bool
		Bars        []struct {
			Left, Right, Top, Bottom float64
			Hedge, Lost              bool
			End                      string
		}
	}
	page.waitFor("the lost attempt's bar", `!!document.querySelector('#rows .row[data-id="ui-hedge-1"] .bar[data-lost="true"]')`,
		`document.querySelectorAll('#rows .row[data-id="ui-hedge-1"] .bar').length + " bars"`, 5*time.Second)
	page.evalJSON(`(() => {
		const l = document.querySelector('#rows .row[data-id="ui-hedge-1"] .lane[data-supplier="boreal"]');
		if (!l) return {found: false, pair: false, bars: []};
		return {found: true, pair: l.classList.contains("pair"), bars: [...l.querySelectorAll(".bar")].map((b) => {
			const r = b.getBoundingClientRect();
			return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, hedge: b.dataset.hedged === "true", lost: b.dataset.lost === "true", end: b.dataset.end};
		})};
	})()`, &lane)
	shot := filepath.Join(t.ArtifactDir(), "hedged.png")
	page.screenshot(shot)
	t.Logf("screenshot: %s (kept with go test -artifacts -outputdir DIR)", shot)
	switch {
	case !lane.Found:
		t.Fatal("no boreal lane for ui-hedge-1")
	case len(lane.Bars) != 2:
		t.Fatalf("boreal lane of ui-hedge-1 has %d bars, want 2: %+v", len(lane.Bars), lane.Bars)
	}
	a, b := lane.Bars[0], lane.Bars[1]
	if !lane.Pair || !b.Hedge || a.Hedge || !a.Lost || b.Lost || a.End != "client_gone" || b.End != "done" {
		t.Errorf("lane pair=%v; bars %+v; want the first lost (client_gone), the second hedged (done)", lane.Pair, lane.Bars)
	}
	if !(b.Left > a.Left && b.Left < a.Right) {
		t.Errorf("the hedge starts at %.1f px, the first spans %.1f-%.1f: want them to overlap in time", b.Left, a.Left, a.Right)
	}
	if b.Top < a.Bottom {
		t.Errorf("the hedge's bar (top %.1f) is not below the first's (bottom %.1f): they would cover each other", b.Top, a.Bottom)
	}
}

package uitest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"quoteflowlab.dev/provider"
)

// TestDashboardShowsCapacity sends one capacity call and checks the page:
// a note with C = 12 (the schedule's first step) and, in every supplier's
// sparkline, the solid line of C.
func TestDashboardShowsCapacity(t *testing.T) {
	t.Parallel() // each test has a browser and a lab of its own
	browser := findBrowser(t)
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
	if got := page.text("#capacity-note"); got != "" {
		t.Errorf("before any capacity call the note says %q, want nothing", got)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	quote(t, client, srv.URL, "atlas", "capacity", "ui-capacity-1", http.StatusOK)
	page.waitFor("the capacity note", `document.getElementById("capacity-note").textContent.includes("C = 12 calls at once now (step 1 of 3")`,
		`document.getElementById("capacity-note").textContent`, 5*time.Second)
	page.waitFor("the line of C in every sparkline",
		`["atlas","boreal","cedar"].every((s) => document.querySelector("#spark-" + s + " .capacity-line") !== null && document.querySelector("#spark-" + s + " .capacity-text").textContent === "C 12")`,
		`document.getElementById("spark-atlas").innerHTML`, 5*time.Second)
}

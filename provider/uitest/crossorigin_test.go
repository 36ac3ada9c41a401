package uitest_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"quoteflowlab.dev/provider"
)

// attackPage is a page on another origin that tries, in every way a page
// can without asking, to reset the lab at %[1]s: a no-cors POST with no
// body and with a text body, a JSON fetch (which needs a CORS preflight)
// and a form posted into a hidden frame. It writes what each try saw into
// window.outcome and sets done.
const attackPage = `<!doctype html><html><head><title>attack</title></head><body>
<iframe name="sink" id="sink"></iframe>
<form id="form" method="POST" action="%[1]s" target="sink" enctype="text/plain"><input name="a" value="b"></form>
<script>
window.outcome = {};
(async () => {
  const target = %[2]q;
  try { await fetch(target, {method: "POST", mode: "no-cors"}); outcome.nocors = "sent"; } catch (e) { outcome.nocors = "error " + e; }
  try { await fetch(target, {method: "POST", mode: "no-cors", body: "x"}); outcome.nocorsText = "sent"; } catch (e) { outcome.nocorsText = "error " + e; }
  try { const r = await fetch(target, {method: "POST", headers: {"Content-Type": "application/json"}, body: "{}"}); outcome.json = "status " + r.status; }
  catch (e) { outcome.json = "blocked"; }
  await new Promise((resolve) => { document.getElementById("sink").onload = resolve; document.getElementById("form").submit(); });
  outcome.form = "submitted";
  outcome.done = true;
})();
</script></body></html>`

// arrival is one request that reached the lab's /reset, and its answer.
type arrival struct {
	method, contentType, fetchSite, origin string
	status                                 int
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// TestAPageOnAnotherOriginCannotResetTheLab opens a page on
// http://localhost:PORT in headless Chromium that aims a no-cors POST, a
// JSON fetch and a form at the lab's POST /reset on 127.0.0.1 (another
// origin and another site: the shape of a page you happen to have open).
// Every try reaches the lab (so the test is not passing on requests the
// browser never sent) and none resets it; then the dashboard's own reset
// button, same-origin, still does.
func TestAPageOnAnotherOriginCannotResetTheLab(t *testing.T) {
	t.Parallel() // each test has a browser and a lab of its own
	browser := findBrowser(t)
	p := provider.New(provider.Options{})
	var (
		mu       sync.Mutex
		arrivals []arrival
	)
	routes := p.Routes()
	labLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lab := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/reset" {
			routes.ServeHTTP(w, r)
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		routes.ServeHTTP(sw, r)
		mu.Lock()
		arrivals = append(arrivals, arrival{r.Method, r.Header.Get("Content-Type"), r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin"), sw.status})
		mu.Unlock()
	})}
	go lab.Serve(labLn)
	labURL := "http://" + labLn.Addr().String()

	evilLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, evilPort, _ := net.SplitHostPort(evilLn.Addr().String())
	evil := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, attackPage, labURL+"/reset", labURL+"/reset")
	})}
	go evil.Serve(evilLn)
	// Registered before the browser opens, so it runs after the browser is
	// gone: with the browser still open, the dashboard's feed reconnects as
	// soon as CloseStreams ends it, and Shutdown waited out its 5 s bound.
	t.Cleanup(func() {
		p.CloseStreams()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := lab.Shutdown(ctx); err != nil {
			t.Errorf("shutting the lab down: %v (a connection still open after the browser closed)", err)
		}
		evil.Shutdown(ctx)
	})
	page := openBrowser(t, browser)

	// Something to lose: three requests counted.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for _, sup := range provider.Suppliers {
		quote(t, client, labURL, sup, "normal", "before-attack", http.StatusOK)
	}

	evilURL := "http://localhost:" + evilPort + "/"
	if err := chromedp.Do(page.ctx, chromedp.Navigate(evilURL)); err != nil {
		t.Fatalf("opening %s: %v", evilURL, err)
	}
	page.waitFor("the page's tries to finish", `window.outcome && window.outcome.done === true`,
		`JSON.stringify(window.outcome)`, 15*time.Second)
	var outcome map[string]any
	page.evalJSON(`window.outcome`, &outcome)
	t.Logf("the page saw: %v", outcome)
	if outcome["json"] != "blocked" {
		t.Errorf("the JSON fetch from another origin: %v, want blocked (its preflight refused)", outcome["json"])
	}

	if st := p.Snapshot(); st.Total != 3 {
		t.Errorf("after the page's tries the lab counts %d requests, want 3: a page on another origin reset it", st.Total)
	}
	mu.Lock()
	got := append([]arrival(nil), arrivals...)
	mu.Unlock()
	posts := 0
	for _, a := range got {
		t.Logf("reached /reset: %s Content-Type %q Sec-Fetch-Site %q Origin %q -> %d", a.method, a.contentType, a.fetchSite, a.origin, a.status)
		if a.method == http.MethodPost {
			posts++
			if a.status == http.StatusOK {
				t.Errorf("POST /reset from %q (Content-Type %q) was answered 200", a.origin, a.contentType)
			}
			if a.contentType == "application/json" {
				t.Errorf("a JSON POST from another origin reached /reset: its preflight was granted")
			}
		}
	}
	// Two no-cors fetches and the form: Chromium sends all three.
	if posts < 3 {
		t.Errorf("%d POSTs reached /reset, want the page's 3 (two no-cors fetches and a form): the test saw too little", posts)
	}

	// The lab's own page, same origin: its reset button works.
	if err := chromedp.Do(page.ctx, chromedp.Navigate(labURL+"/ui")); err != nil {
		t.Fatalf("opening %s/ui: %v", labURL, err)
	}
	page.waitFor("the feed to be live", `document.getElementById("conn").dataset.state === "live"`,
		`document.getElementById("conn").textContent`, 10*time.Second)
	clickCtx, cancelClick := context.WithTimeout(page.ctx, 5*time.Second)
	err = chromedp.Do(clickCtx, chromedp.Click(chromedp.CSS("#reset"), chromedp.NodeVisible))
	cancelClick()
	if err != nil {
		t.Fatalf("clicking reset: %v", err)
	}
	page.waitFor("the page to report the reset", `document.getElementById("reset-note").textContent.startsWith("reset at")`,
		`document.getElementById("reset-note").textContent`, 5*time.Second)
	if st := p.Snapshot(); st.Total != 0 {
		t.Errorf("after the dashboard's reset the lab counts %d requests, want 0", st.Total)
	}
	if note := page.text("#reset-note"); !strings.HasPrefix(note, "reset at") {
		t.Errorf("reset note %q", note)
	}
}

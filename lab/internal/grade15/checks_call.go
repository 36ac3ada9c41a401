package grade15

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Timing tolerances. A limit never fires early by more than early; a process
// may take up to slack longer than what it waited for (start-up and
// scheduling on a busy two-core machine). Every scenario keeps a correct tool
// and its broken variants further apart than slack.
const (
	early = 30.0  // ms
	slack = 700.0 // ms
)

// runAll runs tool once per argument list, concurrently, each bounded by
// within, and returns the runs by key.
func (g *grader) runAll(ctx context.Context, tool string, within time.Duration, jobs map[string][]string) map[string]run {
	out := make(map[string]run, len(jobs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for key, args := range jobs {
		wg.Go(func() {
			r := g.execWithin(ctx, within, tool, args...)
			mu.Lock()
			out[key] = r
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// nonce makes partner keys unique to one grading run.
func nonce() string { return fmt.Sprintf("e15-%d", time.Now().UnixNano()) }

// failAllOf fails the named properties, which could not be checked, with
// one detail saying why.
func (g *grader) failAllOf(detail string, names ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range names {
		g.findings[n] = finding{detail: detail, unchecked: true}
	}
}

type callOut struct {
	OK        bool     `json:"ok"`
	Status    *float64 `json:"status"`
	Phase     string   `json:"phase"`
	ElapsedMS float64  `json:"elapsed_ms"`
	Error     *string  `json:"error"`
}

var callKeys = []string{"ok", "status", "phase", "elapsed_ms", "error"}

// checkCall runs call against a quick 200, a 503, a slow answer, the
// blackhole and a closed port.
func (g *grader) checkCall(ctx context.Context) {
	base := g.lab.base
	jobs := map[string][]string{
		"done":    {"--url", base + "/call?ms=50", "--connect", "1", "--read", "2"},
		"503":     {"--url", base + "/call?ms=0&fail=1&key=" + nonce(), "--connect", "1", "--read", "2"},
		"read":    {"--url", base + "/call?ms=4000", "--connect", "3", "--read", "0.5"},
		"refused": {"--url", "http://" + g.lab.closed + "/", "--connect", "5", "--read", "5"},
	}
	if g.lab.blackhole != "" {
		jobs["connect"] = []string{"--url", "http://" + g.lab.blackhole + "/", "--connect", "0.3", "--read", "4"}
	}
	runs := g.runAll(ctx, "call", runTimeout, jobs)
	outs := map[string]callOut{}
	for key, r := range runs {
		if r.problem != "" {
			g.failAllOf(r.problem, "call_json", "call_done", "call_http_error", "call_read_limit", "call_connect_phase", "call_connect_limit", "call_refused")
			return
		}
		var o callOut
		if err := r.decode(&o, callKeys...); err != nil {
			g.failAllOf("call "+key+": "+err.Error(), "call_json", "call_done", "call_http_error", "call_read_limit", "call_connect_phase", "call_connect_limit", "call_refused")
			return
		}
		outs[key] = o
	}
	g.set("call_json", true, "")

	o, r := outs["done"], runs["done"]
	g.set("call_done", o.OK && status(o.Status) == 200 && o.Phase == "done" && r.wallMS() < 2000,
		"GET /call?ms=50: ok %v, status %v, phase %q, %.0f ms", o.OK, statusText(o.Status), o.Phase, r.wallMS())

	o = outs["503"]
	g.set("call_http_error", !o.OK && status(o.Status) == 503 && o.Phase == "done",
		"GET /call?fail=1: ok %v, status %v, phase %q", o.OK, statusText(o.Status), o.Phase)

	o, r = outs["read"], runs["read"]
	g.set("call_read_limit", o.Phase == "read" && r.wallMS() >= 500-early && r.wallMS() <= 500+slack,
		"GET /call?ms=4000 with --connect 3 --read 0.5: phase %q after %.0f ms (want read, 500–%.0f ms)", o.Phase, r.wallMS(), 500+slack)

	o, r = outs["refused"], runs["refused"]
	g.set("call_refused", o.Phase == "connect" && r.wallMS() < 1500,
		"closed port %s with --connect 5: phase %q after %.0f ms (want connect, under 1500 ms)", g.lab.closed, o.Phase, r.wallMS())

	if g.lab.blackhole == "" {
		g.set("call_connect_phase", true, "skipped: this system has no blackhole (Linux only)")
		g.set("call_connect_limit", true, "skipped: this system has no blackhole (Linux only)")
		return
	}
	o, r = outs["connect"], runs["connect"]
	g.set("call_connect_phase", o.Phase == "connect",
		"blackhole %s: phase %q (want connect)", g.lab.blackhole, o.Phase)
	g.set("call_connect_limit", r.wallMS() >= 300-early && r.wallMS() <= 300+slack,
		"blackhole with --connect 0.3 --read 4: ended after %.0f ms (want 300–%.0f ms)", r.wallMS(), 300+slack)
}

// status is a JSON status or 0 for null.
func status(s *float64) int {
	if s == nil {
		return 0
	}
	return int(*s)
}

func statusText(s *float64) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprint(*s)
}

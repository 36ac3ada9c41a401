package provider_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"

	"quoteflowlab.dev/provider"
)

// BenchmarkNormalScenario measures boreal's normal answer at LatencyScale 0
// against a bare net/http handler serving the same bytes, in one run, and
// logs the provider's throughput as a fraction of the bare handler's
// (target ≥ 0.9), and the same for the CPU time per request (client and
// server in this process), which a busy machine disturbs less.
// Run: go test -run '^$' -bench NormalScenario ./provider/
func BenchmarkNormalScenario(b *testing.B) {
	const path = "/quotes/boreal?sku=KB-001&scenario=normal"
	p := provider.New(provider.Options{LatencyScale: 0})
	body := fetchBody(b, p.Routes(), path)
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	// Interleaved rounds, each side first in every other one, so a noisy
	// neighbour slows both sides alike; the median round's ratio is the
	// result.
	const rounds = 6
	var ratios, cpuRatios []float64
	for round := range rounds {
		var bare_, lab benchResult
		runBare := func() { b.Run("bare", func(b *testing.B) { bare_ = benchHandler(b, bare, path) }) }
		runLab := func() { b.Run("provider", func(b *testing.B) { lab = benchHandler(b, p.Routes(), path) }) }
		if round%2 == 0 {
			runBare()
			runLab()
		} else {
			runLab()
			runBare()
		}
		if bare_.ns > 0 && lab.ns > 0 {
			ratios = append(ratios, bare_.ns/lab.ns)
			b.Logf("round %d: provider %.0f req/s, bare %.0f req/s: ratio %.2f",
				len(ratios), 1e9/lab.ns, 1e9/bare_.ns, bare_.ns/lab.ns)
		}
		if bare_.cpuNs > 0 && lab.cpuNs > 0 {
			cpuRatios = append(cpuRatios, bare_.cpuNs/lab.cpuNs)
			b.Logf("round %d: CPU per request: provider %.1f µs, bare %.1f µs: bare / provider %.2f",
				len(cpuRatios), lab.cpuNs/1e3, bare_.cpuNs/1e3, bare_.cpuNs/lab.cpuNs)
		}
	}
	if len(ratios) > 0 {
		b.Logf("provider throughput = %.2f × bare net/http (median of %d rounds; target ≥ 0.90)",
			median(ratios), len(ratios))
	}
	if len(cpuRatios) > 0 {
		b.Logf("CPU per request: bare / provider = %.2f (median of %d rounds)",
			median(cpuRatios), len(cpuRatios))
	}
}

// benchHandler serves h on loopback and GETs path as wrk does: 64
// keep-alive connections, each sending a request as soon as it has read
// the answer to the last, with a client that only frames the answers (the
// net/http client costs more CPU than either server, which would hide
// their difference).
func benchHandler(b *testing.B, h http.Handler, path string) benchResult {
	srv := httptest.NewServer(h)
	defer srv.Close()
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + srv.Listener.Addr().String() + "\r\n\r\n")
	b.SetParallelism(64 / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for pb.Next() {
			if _, err := c.Write(req); err != nil {
				b.Error(err)
				return
			}
			if err := readAnswer(br); err != nil {
				b.Error(err)
				return
			}
		}
	})
	cpuNs := float64(processCPU()-cpu0) / float64(b.N)
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(1e9/ns, "req/s")
	if cpuNs > 0 {
		b.ReportMetric(cpuNs/1e3, "cpu-µs/req")
	}
	return benchResult{ns: ns, cpuNs: cpuNs}
}

// readAnswer reads one HTTP/1.1 answer with a Content-Length from br and
// fails unless it is a 200.
func readAnswer(br *bufio.Reader) error {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("answer %q, want a 200", bytes.TrimSpace(line))
	}
	length := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return err
		}
		if len(line) <= 2 { // the blank line after the headers
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			if length, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return err
			}
		}
	}
	if length < 0 {
		return fmt.Errorf("an answer without a Content-Length")
	}
	_, err = br.Discard(length)
	return err
}

// fetchBody returns the body h serves for path.
func fetchBody(b *testing.B, h http.Handler, path string) []byte {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != 200 {
		b.Fatalf("%s: %d", path, rec.Code)
	}
	return rec.Body.Bytes()
}

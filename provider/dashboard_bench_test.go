package provider_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"quoteflowlab.dev/provider"
)

// BenchmarkDashboardStream measures what an open dashboard costs the lab:
// boreal's normal answer at LatencyScale 0, with one /stats/stream client
// reading the feed (what a /ui page keeps open) against none, in
// interleaved rounds, for plain requests and for requests that each carry a
// new X-Request-ID (every one goes into the feed and out on the stream).
// It logs the throughput with the stream as a fraction of without (target
// ≥ 0.95), and the CPU time per request (client and lab, in one process)
// without and with, which a busy machine disturbs less than throughput.
// Run: go test -run '^$' -bench DashboardStream -benchtime 1s -v ./provider/
func BenchmarkDashboardStream(b *testing.B) {
	const path = "/quotes/boreal?sku=KB-001&scenario=normal"
	for _, withID := range []bool{false, true} {
		name := "no-id"
		if withID {
			name = "with-id"
		}
		// Many short interleaved rounds, so a noisy neighbour slows both
		// sides alike; the median round's ratio is the result.
		const rounds = 9
		var ratios, cpuRatios []float64
		for range rounds {
			var none, stream benchResult
			b.Run(name+"/none", func(b *testing.B) { none = benchDashboard(b, path, withID, false) })
			b.Run(name+"/stream", func(b *testing.B) { stream = benchDashboard(b, path, withID, true) })
			if none.ns > 0 && stream.ns > 0 {
				ratios = append(ratios, none.ns/stream.ns)
				if none.cpuNs > 0 && stream.cpuNs > 0 {
					cpuRatios = append(cpuRatios, none.cpuNs/stream.cpuNs)
				}
				b.Logf("%s round %d: with a stream %.0f req/s, without %.0f req/s: ratio %.2f (CPU per request %.0f ns vs %.0f ns)",
					name, len(ratios), 1e9/stream.ns, 1e9/none.ns, none.ns/stream.ns, stream.cpuNs, none.cpuNs)
			}
		}
		if len(ratios) > 0 {
			b.Logf("%s: throughput with one dashboard stream open = %.2f × without (median of %d rounds; target ≥ 0.95)",
				name, median(ratios), len(ratios))
		}
		if len(cpuRatios) > 0 {
			b.Logf("%s: CPU per request without / with the stream = %.2f (median of %d rounds)", name, median(cpuRatios), len(cpuRatios))
		}
	}
}

func median(xs []float64) float64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// benchResult is one run: wall-clock and CPU (client and lab together)
// nanoseconds per request.
type benchResult struct{ ns, cpuNs float64 }

// benchDashboard serves a new lab and GETs path from parallel clients over
// keep-alive connections, each request with a new X-Request-ID when withID,
// while one client reads /stats/stream when stream. It returns ns per
// request.
func benchDashboard(b *testing.B, path string, withID, stream bool) benchResult {
	srv := httptest.NewServer(provider.New(provider.Options{LatencyScale: 0}).Routes())
	defer srv.Close()
	// The stream's reader: it reads and throws away, as fast as it comes.
	var streamed atomic.Int64
	stopStream := func() {}
	if stream {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/stats/stream", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			n, _ := io.Copy(io.Discard, resp.Body)
			streamed.Store(n)
		}()
		stopStream = func() { cancel(); <-done; resp.Body.Close() }
		defer stopStream()
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := srv.URL + path
	var ids atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if withID {
				req.Header["X-Request-Id"] = []string{"bench-" + strconv.FormatInt(ids.Add(1), 10)}
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.StopTimer()
	cpuNs := float64(processCPU()-cpu0) / float64(b.N)
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(1e9/ns, "req/s")
	if cpuNs > 0 {
		b.ReportMetric(cpuNs, "cpu-ns/op")
	}
	if stream {
		stopStream()
		stopStream = func() {}
		if streamed.Load() == 0 {
			b.Error("the stream sent nothing: nothing was measured")
		}
		b.ReportMetric(float64(streamed.Load())/b.Elapsed().Seconds(), "stream-B/s")
	}
	return benchResult{ns: ns, cpuNs: cpuNs}
}

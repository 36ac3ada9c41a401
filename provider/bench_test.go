package provider_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"quoteflowlab.dev/provider"
)

// BenchmarkNormalScenario measures boreal's normal answer at LatencyScale 0
// against a bare net/http handler serving the same bytes, in one run, and
// logs the provider's throughput as a fraction of the bare handler's
// (target ≥ 0.8). Run: go test -run '^$' -bench NormalScenario ./provider/
func BenchmarkNormalScenario(b *testing.B) {
	const path = "/quotes/boreal?sku=KB-001&scenario=normal"
	p := provider.New(provider.Options{LatencyScale: 0})
	body := fetchBody(b, p.Routes(), path)
	bare := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	// Interleaved rounds, so a noisy neighbour slows both sides alike;
	// the median round's ratio is the result.
	const rounds = 3
	ratios := make([]float64, 0, rounds)
	for range rounds {
		var bareNs, providerNs float64
		b.Run("bare", func(b *testing.B) { bareNs = benchHandler(b, bare, path) })
		b.Run("provider", func(b *testing.B) { providerNs = benchHandler(b, p.Routes(), path) })
		if bareNs > 0 && providerNs > 0 {
			ratios = append(ratios, bareNs/providerNs)
			b.Logf("round %d: provider %.0f req/s, bare %.0f req/s: ratio %.2f",
				len(ratios), 1e9/providerNs, 1e9/bareNs, bareNs/providerNs)
		}
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		b.Logf("provider throughput = %.2f × bare net/http (median of %d rounds; target ≥ 0.80)",
			ratios[len(ratios)/2], len(ratios))
	}
}

// benchHandler serves h on loopback and GETs path from parallel clients
// over keep-alive connections; it returns ns per request.
func benchHandler(b *testing.B, h http.Handler, path string) float64 {
	srv := httptest.NewServer(h)
	defer srv.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: 1024, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := srv.URL + path
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(url)
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
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(1e9/ns, "req/s")
	return ns
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

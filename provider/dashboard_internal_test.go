package provider

import (
	"strings"
	"testing"
	"time"
)

// BenchmarkStreamEvent measures the worst event a dashboard stream builds:
// a full feed of FeedSize attempts with the longest IDs, all still running
// (so every one is sent), plus the counters. A stream builds at most one per
// StreamInterval, so ns/event ÷ StreamInterval is the share of one CPU an
// open dashboard can take. Run: go test -run '^$' -bench StreamEvent ./provider/
func BenchmarkStreamEvent(b *testing.B) {
	p := New(Options{})
	st := p.state.Load()
	now := time.Now()
	for i := range FeedSize {
		id := strings.Repeat("x", MaxKeyBytes-4) + string(rune('a'+i%26)) + "123"
		st.feed.start(id[:MaxKeyBytes], i%3, now, false)
	}
	var size int
	b.ReportAllocs()
	for b.Loop() {
		var c streamCursor // a new stream: everything is sent
		size = len(p.nextEvent(&c, now))
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(float64(size), "B/event")
	b.ReportMetric(100*ns/float64(StreamInterval.Nanoseconds()), "%cpu-at-10/s")
}

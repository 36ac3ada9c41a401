package quoteflow

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkQuotesAtConcurrency8 runs quotes from 8 goroutines against a fake
// provider whose every call takes 20 ms. Each quote needs three calls and only
// six calls run at once, so the ceiling is outbound/latency/3 = 6/0.020 s/3 =
// 100 quotes/s; quotes/s close to bound_quotes/s means the limits, not the
// code, set the pace.
func BenchmarkQuotesAtConcurrency8(b *testing.B) {
	const latency = 20 * time.Millisecond
	fake := newFake(nil)
	fake.latency = latency
	s, err := New(Config{Transport: fake})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if _, err := s.Quote(context.Background(), kb(2)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "quotes/s")
	b.ReportMetric(float64(DefaultOutbound)/latency.Seconds()/3, "bound_quotes/s")
}

// BenchmarkTwelveSlowQuotes sends 12 quotes at once while boreal takes 1.5 s:
// eight are admitted and answer at the 0.8 s deadline, four are refused at
// once. worst_ms is the slowest admitted quote; budget_ms is the deadline.
func BenchmarkTwelveSlowQuotes(b *testing.B) {
	fake := newFake(map[string]reply{"boreal": after(1500*time.Millisecond, normal)})
	s, err := New(Config{Transport: fake})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var worst time.Duration
	var busy atomic.Int64
	for range b.N {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 12 {
			wg.Go(func() {
				start := time.Now()
				_, err := s.Quote(context.Background(), kb(2))
				if errors.Is(err, ErrBusy) {
					busy.Add(1)
					return
				}
				mu.Lock()
				worst = max(worst, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst_ms")
	b.ReportMetric(float64(DefaultBudget.Milliseconds()), "budget_ms")
	b.ReportMetric(float64(busy.Load())/float64(b.N), "busy/op")
}

// BenchmarkFiftyLineBasket sends 50-line baskets (150 supplier calls) to a
// fake whose every call takes 20 ms. Six slots of 20 ms bound the pace at
// 6/0.020 s = 300 calls/s; calls/s near bound_calls/s means the shared limit,
// not the code, sets it.
func BenchmarkFiftyLineBasket(b *testing.B) {
	const latency = 20 * time.Millisecond
	fake := newFake(nil)
	fake.latency = latency
	d := openBenchData(b)
	s, err := New(Config{Transport: fake, Store: d.store, Queue: d.queue})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	for range b.N {
		bk, err := s.Basket(context.Background(), lines(50))
		if err != nil || bk.Pending != 0 {
			b.Fatalf("basket: pending %d, %v", bk.Pending, err)
		}
	}
	b.ReportMetric(float64(b.N*150)/time.Since(start).Seconds(), "calls/s")
	b.ReportMetric(float64(DefaultOutbound)/latency.Seconds(), "bound_calls/s")
}

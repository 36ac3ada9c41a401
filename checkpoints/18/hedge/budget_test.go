package hedge_test

import (
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/checkpoints/18/hedge"
)

func TestTheBudgetPaysATenthOfTheFirstCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := hedge.NewBudget(hedge.BudgetConfig{Ratio: 0.1, Cap: 3, MinPerSecond: 0.1})
		spent := 0
		for range 3 + 5 { // it starts full: 3 tokens, then nothing until first calls pay in
			if b.TrySpend() {
				spent++
			}
		}
		if spent != 3 {
			t.Fatalf("a full budget of cap 3 paid for %d extra calls, want 3", spent)
		}
		for range 100 { // an outage: every first call wants an extra one
			b.First()
			if b.TrySpend() {
				spent++
			}
		}
		if spent != 3+10 {
			t.Errorf("100 first calls paid for %d extra calls in all, want 13 (cap 3 + 10 %%)", spent)
		}
		s := b.Stats()
		if s.FirstCalls != 100 || s.ExtraCalls != 13 || s.Denied != 5+90 {
			t.Errorf("stats %+v, want 100 first, 13 extra, 95 denied", s)
		}
	})
}

func TestTheBudgetRefillsAtItsMinimumRateAndStopsAtTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := hedge.NewBudget(hedge.BudgetConfig{Ratio: 0.5, Cap: 2, MinPerSecond: 0.1})
		b.TrySpend()
		b.TrySpend()
		if b.TrySpend() {
			t.Fatal("an empty budget paid for a call")
		}
		time.Sleep(9 * time.Second)
		if b.TrySpend() {
			t.Fatal("0.9 token after 9s at 0.1/s paid for a call")
		}
		time.Sleep(time.Second)
		if !b.TrySpend() {
			t.Fatal("1 token after 10s at 0.1/s did not pay for a call")
		}
		for range 10 {
			b.First()
		}
		if got := b.Stats().Tokens; got != 2 {
			t.Errorf("tokens %g after 10 first calls of 0.5, want the cap, 2", got)
		}
		b.TrySpend()
		b.Refund()
		if got := b.Stats(); got.Tokens != 2 || got.ExtraCalls != 3 {
			t.Errorf("after a refund: %+v, want 2 tokens and 3 extra calls (the ones before)", got)
		}
	})
}

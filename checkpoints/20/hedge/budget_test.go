package hedge_test

import (
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/checkpoints/20/hedge"
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

// The minimum rate is a floor: while first calls pay in more than it, it
// adds nothing, so a busy service's extra calls stay at Ratio of its first
// calls however long it runs (an addition would give 0.1 more a second).
func TestTheMinimumRateAddsNothingWhileFirstCallsPayMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := hedge.NewBudget(hedge.BudgetConfig{Ratio: 0.1, Cap: 1, MinPerSecond: 0.1})
		b.TrySpend() // empty
		spent := 0
		for range 40 { // 20 s of a first call every 500 ms: 0.2 token a second
			time.Sleep(500 * time.Millisecond)
			b.First()
			if b.TrySpend() {
				spent++
			}
		}
		if spent != 4 {
			t.Errorf("40 first calls over 20 s paid for %d extra calls, want 4 (10 %%): the minimum rate of 0.1/s must not add to the 0.2/s the first calls paid", spent)
		}
	})
}

// Ten first calls pay a whole token, though ten tenths add up to a little
// less than 1 in floating point: HasToken and TrySpend agree that it is one.
func TestTenTenthsAreAToken(t *testing.T) {
	b := hedge.NewBudget(hedge.BudgetConfig{Cap: 1})
	if !b.TrySpend() {
		t.Fatal("a new budget of cap 1 has no token")
	}
	if b.HasToken() {
		t.Fatal("HasToken after the only token was spent")
	}
	for range 10 {
		b.First()
	}
	if !b.HasToken() {
		t.Errorf("after ten first calls (%v tokens), HasToken = false, want true", b.Stats().Tokens)
	}
	if !b.TrySpend() {
		t.Errorf("after ten first calls, TrySpend = false, want true")
	}
}

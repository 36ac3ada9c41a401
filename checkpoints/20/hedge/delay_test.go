package hedge_test

import (
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/checkpoints/20/hedge"
)

func TestTheDelayIsTheRecentP95WithinFloorAndCeiling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := hedge.NewDelays(hedge.DelayConfig{Floor: 10 * time.Millisecond, Ceiling: 500 * time.Millisecond})
		if got := d.Delay("atlas"); got != 500*time.Millisecond {
			t.Errorf("with nothing known the delay is %s, want the ceiling", got)
		}
		for i := 1; i <= 100; i++ { // 1..100 ms: p95 is 95 ms
			d.Observe("atlas", time.Duration(i)*time.Millisecond)
		}
		if got := d.Delay("atlas"); got < 94*time.Millisecond || got > 96*time.Millisecond {
			t.Errorf("p95 of 1..100ms is %s, want 95ms ±1", got)
		}
		if got := d.Delay("boreal"); got != 500*time.Millisecond {
			t.Errorf("another supplier's delay is %s, want the ceiling: each supplier has its own", got)
		}
		for range 100 {
			d.Observe("cedar", time.Millisecond)
			d.Observe("boreal", 2*time.Second)
		}
		if got := d.Delay("cedar"); got != 10*time.Millisecond {
			t.Errorf("a 1ms supplier's delay is %s, want the floor, 10ms", got)
		}
		if got := d.Delay("boreal"); got != 500*time.Millisecond {
			t.Errorf("a 2s supplier's delay is %s, want the ceiling, 500ms", got)
		}
	})
}

func TestTheDelayFollowsTheSupplier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := hedge.NewDelays(hedge.DelayConfig{Window: 10 * time.Second, Slices: 5})
		for range 100 {
			d.Observe("atlas", 200*time.Millisecond)
		}
		near200 := func(d time.Duration) bool { return d >= 198*time.Millisecond && d <= 202*time.Millisecond } // the sketch's 1 %
		if got := d.Delay("atlas"); !near200(got) {
			t.Fatalf("delay %s, want 200ms ±1%%", got)
		}
		time.Sleep(6 * time.Second) // the supplier got faster
		for range 400 {
			d.Observe("atlas", 30*time.Millisecond)
		}
		if got := d.Delay("atlas"); !near200(got) {
			t.Errorf("with a fifth of the window at 200ms, p95 is %s, want still 200ms ±1%%", got)
		}
		time.Sleep(5 * time.Second) // the 200ms latencies have left the window
		if got := d.Delay("atlas"); got != 30*time.Millisecond {
			t.Errorf("11s on, the delay is %s, want 30ms: the old latencies count no more", got)
		}
		time.Sleep(11 * time.Second) // nothing heard for a whole window
		if got := d.Delay("atlas"); got != hedge.DefaultCeiling {
			t.Errorf("after a silent window the delay is %s, want the ceiling", got)
		}
	})
}

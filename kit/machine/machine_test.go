package machine

import (
	"testing"
	"time"
)

// A machine that stopped everything for 240 ms once, in a run of 2.5 s that
// was otherwise quiet, held back any timed check running then by 240 ms:
// busy, though the stall is one sample of about 250.
func TestOneLongStallIsBusy(t *testing.T) {
	lags := make([]time.Duration, 250)
	for i := range lags {
		lags[i] = time.Millisecond
	}
	lags[100] = 240 * time.Millisecond
	if m := summarize(lags, nil); !m.Busy {
		t.Errorf("a 240 ms stall in a 2.5 s run: Busy = false (lag p99 %.0f ms, max %.0f ms), want true", m.LagP99MS, m.LagMaxMS)
	}
}

// A few late timers over a long quiet run are not busy: 30 ms late once in
// 10 s is 0.4% of the time.
func TestAHiccupInALongRunIsNotBusy(t *testing.T) {
	lags := make([]time.Duration, 1000)
	for i := range lags {
		lags[i] = time.Millisecond
	}
	lags[500] = 30 * time.Millisecond
	m := summarize(lags, nil)
	if m.Busy {
		t.Errorf("one 30 ms lag in a 10 s run: Busy = true (lag p99 %.0f ms), want false", m.LagP99MS)
	}
	if m.LagP50MS != 1 || m.LagMaxMS != 30 {
		t.Errorf("p50 %.1f ms, max %.1f ms, want 1 and 30", m.LagP50MS, m.LagMaxMS)
	}
}

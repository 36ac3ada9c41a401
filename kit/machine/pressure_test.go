package machine

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// stalls is a stall reading that grows by share of the time that passes
// between reads, share set by the test.
type stalls struct {
	mu    sync.Mutex
	share float64
	total time.Duration
	at    time.Time
}

func (s *stalls) read() (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if !s.at.IsZero() {
		s.total += time.Duration(s.share * float64(now.Sub(s.at)))
	}
	s.at = now
	return s.total, true
}

func (s *stalls) set(share float64) {
	s.mu.Lock()
	s.share = share
	s.mu.Unlock()
}

// It waits while tasks wait for a CPU most of the time, and returns once
// they wait less than half of it.
func TestWaitQuieterWaitsForLessThanHalf(t *testing.T) {
	s := &stalls{share: 0.9}
	time.AfterFunc(100*time.Millisecond, func() { s.set(0.1) })
	start := time.Now()
	got := waitQuieter(context.Background(), time.Minute, 10*time.Millisecond, s.read)
	if took := time.Since(start); took < 100*time.Millisecond || !strings.Contains(got, "once tasks waited") {
		t.Errorf("returned after %s saying %q; want after the 100 ms of 90 %%, once quieter", took, got)
	}
}

// A machine that stays busy is waited for at most limit, and it says so.
func TestWaitQuieterIsBounded(t *testing.T) {
	s := &stalls{share: 0.9}
	start := time.Now()
	got := waitQuieter(context.Background(), 100*time.Millisecond, 10*time.Millisecond, s.read)
	if took := time.Since(start); took < 100*time.Millisecond || took > 30*time.Second || !strings.Contains(got, "still busy") {
		t.Errorf("returned after %s saying %q; want after its 100 ms limit, still busy", took, got)
	}
}

// Where the pressure is not reported, it does not wait.
func TestWaitQuieterWithoutPressure(t *testing.T) {
	got := waitQuieter(context.Background(), time.Minute, 10*time.Millisecond, func() (time.Duration, bool) { return 0, false })
	if !strings.HasPrefix(got, "at once") {
		t.Errorf("%q; want at once", got)
	}
}

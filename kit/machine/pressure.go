package machine

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// CPUStall is the cumulative time some task of the machine waited for a
// CPU (/proc/pressure/cpu, Linux 4.20+); false where it is not reported.
func CPUStall() (time.Duration, bool) {
	data, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	_, total, ok := strings.Cut(line, "total=")
	if !ok {
		return 0, false
	}
	us, err := strconv.ParseInt(strings.TrimSpace(total), 10, 64)
	return time.Duration(us) * time.Microsecond, err == nil
}

// WaitQuieter waits until, over one second, tasks waited for a CPU less
// than half the time, at most limit or until ctx ends, and says how long it
// waited and whether the machine was quieter then. Where the pressure is
// not reported it does not wait. A check that found the machine too busy to
// judge a timing waits here before it runs again, as a student is told to
// ("close what keeps the machine busy, or wait for it").
func WaitQuieter(ctx context.Context, limit time.Duration) string {
	return waitQuieter(ctx, limit, time.Second, CPUStall)
}

// waitQuieter is WaitQuieter reading the stall with read every period.
func waitQuieter(ctx context.Context, limit, period time.Duration, read func() (time.Duration, bool)) string {
	start := time.Now()
	prev, ok := read()
	if !ok {
		return "at once (no CPU pressure to wait on)"
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(period)
	defer tick.Stop()
	at := start
	for {
		select {
		case <-ctx.Done():
			return fmt.Sprintf("after %s, the machine still busy", time.Since(start).Round(period))
		case <-tick.C:
		}
		cur, _ := read()
		now := time.Now()
		share := float64(cur-prev) / float64(now.Sub(at))
		if share < 0.5 {
			return fmt.Sprintf("after %s, once tasks waited for a CPU %.0f%% of the time", now.Sub(start).Round(period), 100*share)
		}
		prev, at = cur, now
	}
}

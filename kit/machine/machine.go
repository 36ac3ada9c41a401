// Package machine tells a wrong answer from a busy machine. A Monitor
// samples, every 10 ms while a check runs, how late a 10 ms timer fires in
// the lab's own process and (on Linux) the kernel's machine-wide CPU
// pressure, which is reported but does not decide: a loaded machine can
// still serve an answer that mostly waits promptly. What decides is whether
// the run itself was held back (HeldBack: its own threads waited for a CPU,
// measured by the runner) or the lab's timer fired late. A correct build
// that fails while the answer was held back is re-run; when it fails again,
// held back again, and in a different way, the verdict is "inconclusive";
// the same failure twice, or a run that kept every CPU busy itself, is the
// answer's (package mutation decides). WaitQuieter waits for the CPU
// pressure to drop, for a caller about to check again after a busy run.
package machine

import (
	"slices"
	"strconv"
	"sync"
	"time"

	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
)

const tick = 10 * time.Millisecond

// BusyLagP99 is the threshold for Busy: a 10 ms timer that fires 25 ms
// late for one hundredth of the time means the machine cannot keep the
// tens-of-milliseconds promises that the course's timed checks rely on.
// The share is of wall time, not of samples: a timer held back 240 ms is
// one sample, but 240 ms during which the machine ran nothing of the lab,
// and a timed check running then missed its bound by as much (summarize).
// The CPU pressure is reported but does not decide: it is machine-wide, and
// a loaded machine can still serve an answer that mostly waits promptly.
// What held a child back is measured on the child itself (runner's Starved).
const BusyLagP99 = 25 * time.Millisecond

// A run was held back too much for its timing to mean anything when its
// threads together waited for a CPU a quarter of its wall time, and at
// least 50 ms in all (a run of a few milliseconds spends most of them
// starting threads: its share says nothing).
const (
	StarvedBusy    = 0.25
	StarvedAtLeast = 50 * time.Millisecond
)

// HeldBack reports whether a run of this wall time, starved this much (the
// share of its wall time its threads waited for a CPU; negative: not
// measured), was held back too much for its timing to mean anything. Ask it
// of the whole run and of its worst runner.StarvedWindow (Result.StarvedPeak):
// a stall of a few hundred milliseconds that a long run's share hides still
// makes a check timed in hundreds of milliseconds miss.
func (m *Monitor) HeldBack(starved float64, elapsed time.Duration) bool {
	return starved >= StarvedBusy && time.Duration(starved*float64(elapsed)) >= StarvedAtLeast
}

// A Monitor samples the machine until Stop.
type Monitor struct {
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex
	lags  []time.Duration
	stall []sample // cumulative CPU stall, when the kernel reports it
}

// sample is the kernel's cumulative CPU stall at one moment.
type sample struct {
	at    time.Time
	stall time.Duration
}

// Start begins sampling.
func Start() *Monitor {
	m := &Monitor{stop: make(chan struct{}), done: make(chan struct{})}
	go m.loop()
	return m
}

func (m *Monitor) loop() {
	defer close(m.done)
	t := time.NewTimer(tick)
	defer t.Stop()
	want := time.Now().Add(tick)
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			// Not the time the channel carries: since Go 1.23 it is the
			// time the timer was due, however late it fired.
			now := time.Now()
			lag := max(now.Sub(want), 0)
			st, ok := CPUStall()
			m.mu.Lock()
			m.lags = append(m.lags, lag)
			if ok {
				m.stall = append(m.stall, sample{now, st})
			}
			if len(m.lags) > 1<<16 { // an hour of samples is plenty
				m.lags, m.stall = m.lags[len(m.lags)/2:], m.stall[len(m.stall)/2:]
			}
			m.mu.Unlock()
			want = time.Now().Add(tick)
			t.Reset(tick)
		}
	}
}

// Mark returns the number of samples so far, to read a window with Since.
func (m *Monitor) Mark() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.lags)
}

// Since summarizes the samples taken after mark.
func (m *Monitor) Since(mark int) report.Machine {
	m.mu.Lock()
	defer m.mu.Unlock()
	mark = min(mark, len(m.lags))
	return summarize(m.lags[mark:], m.stall[min(mark, len(m.stall)):])
}

// Stop ends sampling and summarizes every sample.
func (m *Monitor) Stop() report.Machine {
	close(m.stop)
	<-m.done
	return m.Since(0)
}

func summarize(lags []time.Duration, stall []sample) report.Machine {
	if len(lags) == 0 {
		return report.Machine{}
	}
	s := slices.Clone(lags)
	slices.Sort(s)
	// Each sample stands for the wall time it covers, its tick and its lag:
	// the quantiles are of time, so one long stall weighs as the many
	// ticks that could not fire during it.
	var total time.Duration
	for _, l := range s {
		total += tick + l
	}
	at := func(q float64) time.Duration {
		var sum time.Duration
		for _, l := range s {
			if sum += tick + l; float64(sum) > q*float64(total) {
				return l
			}
		}
		return s[len(s)-1]
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	m := report.Machine{LagP50MS: ms(at(0.5)), LagP99MS: ms(at(0.99)), LagMaxMS: ms(s[len(s)-1])}
	if len(stall) >= 2 {
		first, last := stall[0], stall[len(stall)-1]
		if wall := last.at.Sub(first.at); wall > 0 {
			m.CPUPressure = min(float64(last.stall-first.stall)/float64(wall), 1)
		}
	}
	m.Busy = at(0.99) >= BusyLagP99
	return m
}

// Describe says in a sentence how busy the machine was.
func Describe(m report.Machine) string {
	s := msg.T("machine.lag", strconv.FormatFloat(m.LagMaxMS, 'f', 0, 64), strconv.FormatFloat(m.LagP99MS, 'f', 0, 64))
	if m.CPUPressure > 0 {
		s += msg.T("machine.pressure", strconv.FormatFloat(100*m.CPUPressure, 'f', 0, 64))
	}
	return s
}

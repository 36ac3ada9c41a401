// Package adaptive finds how many calls a supplier can take at once, and
// sheds what does not fit, early and by priority.
//
// A Limit is the number: it grows while the latency of its calls stays at
// its baseline and shrinks when latency rises (calls queue inside the
// supplier) or calls fail (503s, timeouts), always within [Min, Max]. Its
// signal is a gradient of two windows, as Netflix's Gradient2: the mean
// latency of the last Window calls (short) against a slow average of those
// means (long). A Limiter is a semaphore whose size is a Limit, with a
// bounded line of waiters served by priority, each waiting no longer than
// its target and never past the point where its deadline could still be met.
//
// The package needs nothing but the standard library; every time it reads
// is time.Now, so testing/synctest drives it exactly.
package adaptive

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Config sets a Limit; a zero field takes its default.
type Config struct {
	Initial int // the limit before any sample: 4
	Min     int // never below: 1
	Max     int // never above: 24
	// Window is how many calls make one short window; the limit moves once
	// per window: 10.
	Window int
	// LongWindows is the long window, in short windows: the long latency
	// is an exponential average of the short ones with weight
	// 2/(LongWindows+1): 20.
	LongWindows int
	// Tolerance is how far the short latency may rise above the long one
	// before the limit shrinks: 1.25 (a quarter slower is still no queue).
	Tolerance float64
	// Backoff multiplies the limit after a window with a failed call (a
	// 503, a timeout): 0.8.
	Backoff float64
	// Smoothing is the share of a larger limit taken at each step up: 0.5.
	// A step down (a queue) is taken whole: every call waits in it now.
	Smoothing float64
	// QueueSize is what the limit grows by (times Smoothing) in a window
	// whose latency stays at the baseline: 2.
	QueueSize float64
	// Allowed is a latency the caller can afford whatever the baseline:
	// when set, the gradient is Allowed over the window's slowest call,
	// within [0.5, 2], not the baseline's, so a window whose every call came
	// back within Allowed never shrinks the limit. For a limit on whole
	// requests with a deadline (QuoteFlow's inbound limit), a queue every
	// request's deadline allows is no reason to refuse work. 0: the
	// baseline alone decides, as in Gradient2.
	Allowed time.Duration
}

// Defaults of Config.
const (
	DefaultInitial     = 4
	DefaultMin         = 1
	DefaultMax         = 24
	DefaultWindow      = 10
	DefaultLongWindows = 20
	DefaultTolerance   = 1.25
	DefaultBackoff     = 0.8
	DefaultSmoothing   = 0.5
	DefaultQueueSize   = 2
)

// ErrConfig is wrapped by every error of New about its Config.
var ErrConfig = errors.New("adaptive: bad config")

func (c Config) withDefaults() (Config, error) {
	or := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	orF := func(v, d float64) float64 {
		if v == 0 {
			return d
		}
		return v
	}
	c.Min, c.Max = or(c.Min, DefaultMin), or(c.Max, DefaultMax)
	c.Initial = or(c.Initial, min(max(DefaultInitial, c.Min), c.Max))
	c.Window, c.LongWindows = or(c.Window, DefaultWindow), or(c.LongWindows, DefaultLongWindows)
	c.Tolerance, c.Backoff = orF(c.Tolerance, DefaultTolerance), orF(c.Backoff, DefaultBackoff)
	c.Smoothing, c.QueueSize = orF(c.Smoothing, DefaultSmoothing), orF(c.QueueSize, DefaultQueueSize)
	switch {
	case c.Min < 1 || c.Max < c.Min || c.Initial < c.Min || c.Initial > c.Max:
		return c, fmt.Errorf("%w: want 1 <= Min <= Initial <= Max (got %d, %d, %d)", ErrConfig, c.Min, c.Initial, c.Max)
	case c.Window < 1 || c.LongWindows < 1:
		return c, fmt.Errorf("%w: Window and LongWindows must be at least 1", ErrConfig)
	case !(c.Tolerance >= 1 && c.Tolerance <= 10):
		return c, fmt.Errorf("%w: Tolerance must be in [1, 10] (got %v)", ErrConfig, c.Tolerance)
	case !(c.Backoff > 0 && c.Backoff < 1), !(c.Smoothing > 0 && c.Smoothing <= 1):
		return c, fmt.Errorf("%w: Backoff must be in (0, 1) and Smoothing in (0, 1] (got %v, %v)", ErrConfig, c.Backoff, c.Smoothing)
	case !(c.QueueSize >= 0 && c.QueueSize <= 1000):
		return c, fmt.Errorf("%w: QueueSize must be in [0, 1000] (got %v)", ErrConfig, c.QueueSize)
	case c.Allowed < 0:
		return c, fmt.Errorf("%w: Allowed must not be negative (got %v)", ErrConfig, c.Allowed)
	}
	return c, nil
}

// An Outcome is what a call tells the limit.
type Outcome int

const (
	// Success: the supplier answered (a quote, and also a 4xx or data we
	// reject: it answered, and its latency is a true sample).
	Success Outcome = iota
	// Dropped: the supplier failed under load (a 503 or another 5xx, a
	// timeout): the limit backs off.
	Dropped
	// Ignore: the call says nothing of the supplier (cancelled by its
	// caller, a hedge that lost, never sent).
	Ignore
)

// A Step is one move of a Limit, for its history.
type Step struct {
	At      time.Time     `json:"at"`
	Limit   int           `json:"limit"`
	ShortMs float64       `json:"short_ms"` // the window's mean latency
	LongMs  float64       `json:"long_ms"`  // the long average after it
	Drops   int           `json:"drops"`    // failed calls in the window
	Reason  string        `json:"reason"`   // grow, shrink, backoff, hold (app-limited), start
	short   time.Duration // unexported copies for exact tests
}

// HistorySize is how many steps a Limit keeps.
const HistorySize = 240

// Limit is an adaptive concurrency limit. Safe for concurrent use.
type Limit struct {
	cfg     Config
	mu      sync.Mutex
	limit   float64
	long    float64 // ns; 0 before the first window
	sum     time.Duration
	slowest time.Duration // the window's slowest answered call
	n       int           // samples in the window
	drops   int
	busiest int // the most calls in flight any sample of the window saw
	cuts    int // how many times a step lowered the limit
	history []Step
	onMove  func() // called (unlocked) when the limit may have grown
}

// New returns a Limit at cfg.Initial.
func New(cfg Config) (*Limit, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &Limit{cfg: c, limit: float64(c.Initial)}
	l.history = append(l.history, Step{At: time.Now(), Limit: c.Initial, Reason: "start"})
	return l, nil
}

// Fixed returns a Limit that stays at n whatever its samples say (n >= 1).
func Fixed(n int) *Limit {
	l, err := New(Config{Initial: n, Min: n, Max: n})
	if err != nil {
		panic(err)
	}
	return l
}

// Config returns the Limit's settings, defaults filled in.
func (l *Limit) Config() Config { return l.cfg }

// Current is the limit now: a whole number in [Min, Max].
func (l *Limit) Current() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current()
}

func (l *Limit) current() int {
	return min(max(int(l.limit), l.cfg.Min), l.cfg.Max)
}

// Sample records one call: its latency, how many calls were in flight when
// it started (itself included) and its outcome. Every Window samples (not
// counting Ignore) the limit moves once.
func (l *Limit) Sample(rtt time.Duration, inFlight int, o Outcome) {
	if o == Ignore {
		return
	}
	l.mu.Lock()
	l.n++
	l.busiest = max(l.busiest, inFlight)
	if o == Dropped {
		l.drops++
	} else {
		l.sum += rtt
		l.slowest = max(l.slowest, rtt)
	}
	moved := false
	if l.n >= l.cfg.Window {
		moved = l.step()
	}
	grow := l.onMove
	l.mu.Unlock()
	if moved && grow != nil {
		grow()
	}
}

// step moves the limit at the end of a window, and starts the next one.
// It reports whether the limit changed.
func (l *Limit) step() bool {
	before, was := l.current(), l.limit
	c := l.cfg
	st := Step{At: time.Now(), Drops: l.drops}
	good := l.n - l.drops
	switch {
	case l.drops > 0:
		// A failed call: back off at once, whatever the latency says.
		l.limit = l.limit * c.Backoff
		st.Reason = "backoff"
	case good > 0:
		short := float64(l.sum) / float64(good)
		st.short = time.Duration(short)
		// The long average is the supplier's latency without a queue of
		// ours: only a window as fast or faster moves it, unless the limit
		// is at its minimum (then the supplier is simply slower). A window
		// a little slower may be a queue a little longer: let it move the
		// average and the average creeps up a window at a time, and the
		// limit with it, to its maximum.
		switch {
		case l.long == 0:
			l.long = short
		case short <= l.long || l.current() <= c.Min:
			l.long += (short - l.long) * 2 / float64(c.LongWindows+1)
		}
		if float64(l.busiest) < l.limit/2 {
			// Half the limit unused: the window says nothing of a larger one.
			st.Reason = "hold"
			break
		}
		gradient := max(0.5, min(1, c.Tolerance*l.long/short))
		if c.Allowed > 0 {
			// Measured against what the caller can afford, not against the
			// baseline: Allowed / the slowest call, within [0.5, 2] (as
			// Envoy's adaptive concurrency filter bounds its gradient):
			// below 1 by how far the slowest call went past it, above 1,
			// growing faster, while every call came back well within it.
			gradient = max(0.5, min(2, float64(c.Allowed)/float64(l.slowest)))
		}
		next := l.limit*gradient + c.QueueSize
		if next < l.limit {
			// A queue: every call waits in it now, so the limit takes the
			// whole step at once.
			l.limit = next
			st.Reason = "shrink"
			break
		}
		l.limit = l.limit*(1-c.Smoothing) + next*c.Smoothing
		st.Reason = "grow"
	}
	l.limit = min(max(l.limit, float64(c.Min)), float64(c.Max))
	if l.limit < was {
		l.cuts++
	}
	st.Limit = l.current()
	st.ShortMs = math.Round(float64(st.short)/1e3) / 1e3
	st.LongMs = math.Round(l.long/1e3) / 1e3
	l.history = append(l.history, st)
	if len(l.history) > HistorySize {
		l.history = append(l.history[:0], l.history[len(l.history)-HistorySize:]...)
	}
	l.sum, l.slowest, l.n, l.drops, l.busiest = 0, 0, 0, 0, 0
	return st.Limit != before
}

// cutsNow is how many times a step lowered the limit (a Token notes it
// when its call is let through).
func (l *Limit) cutsNow() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cuts
}

// Failing reports whether the Limit's last step was a backoff: its calls
// fail, it is not only busy.
func (l *Limit) Failing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.history) > 0 && l.history[len(l.history)-1].Reason == "backoff"
}

// History returns the Limit's last steps, oldest first.
func (l *Limit) History() []Step {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Step(nil), l.history...)
}

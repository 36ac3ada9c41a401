package adaptive

import (
	"context"
	"errors"
	"sync"
	"time"
)

// A Priority says who is served first and shed last.
type Priority int

const (
	// Low is a basket line: many of them, each worth little alone.
	Low Priority = iota
	// High is a single quote: a person waits for it.
	High
	// Probe is a breaker's probe: it decides whether a supplier is back.
	Probe
	priorities = 3
)

func (p Priority) String() string {
	switch p {
	case Low:
		return "low"
	case High:
		return "high"
	case Probe:
		return "probe"
	}
	return "priority?"
}

// ErrShed is returned by Acquire when the call is refused rather than made
// late: the line was full of calls at least as important, it waited its
// target, or its deadline left no time to wait.
var ErrShed = errors.New("adaptive: shed")

// Queue sets a Limiter's line of waiters; a zero field takes its default.
type Queue struct {
	// Max is how many may wait at once: 16. When it is full, a newcomer
	// takes the place of the newest waiter of a lower priority (shed), or
	// is shed itself.
	Max int
	// Target is the longest anyone waits: 50 ms. A waiter still in line
	// then is shed: a call that waited that long will be late anyway.
	Target time.Duration
	// Reserve is what a waiter must have left of its deadline when it is
	// let through (the time a call needs): it waits no longer than its
	// deadline minus Reserve, and not at all when that has passed: 50 ms.
	Reserve time.Duration
	// Kept is the share of the limit a Low call never takes: those slots
	// are kept for High and Probe calls, so a line of Low calls holding
	// every slot cannot make the important ones wait past their target.
	// floor(Kept x limit) slots: none at a limit of 3 or less with 0.25.
	// 0: none kept.
	Kept float64
}

// DefaultKept is a share of the limit kept from Low calls that a user of
// priorities may set as Queue.Kept.
const DefaultKept = 0.25

// Defaults of Queue.
const (
	DefaultQueueMax     = 16
	DefaultQueueTarget  = 50 * time.Millisecond
	DefaultQueueReserve = 50 * time.Millisecond
)

func (q Queue) withDefaults() Queue {
	if q.Max == 0 {
		q.Max = DefaultQueueMax
	}
	if q.Target == 0 {
		q.Target = DefaultQueueTarget
	}
	if q.Reserve == 0 {
		q.Reserve = DefaultQueueReserve
	}
	return q
}

// A Limiter lets at most Limit.Current() calls through at once; the rest
// wait in one bounded line, the highest priority first and, within one,
// the oldest first. Safe for concurrent use.
type Limiter struct {
	limit *Limit
	q     Queue

	mu       sync.Mutex
	inFlight int
	line     [priorities][]*waiter // FIFO per priority
	waiting  int
	shed     [priorities]int64
	passed   [priorities]int64
}

type waiter struct {
	ready chan struct{} // closed when granted or shed (see granted)
	// granted: let through (it holds a slot); false when closed: shed.
	granted  bool
	inFlight int
}

// NewLimiter returns a Limiter of limit's size with line q. A Limiter
// watches its Limit: when the limit grows, waiters are let through.
func NewLimiter(limit *Limit, q Queue) *Limiter {
	lim := &Limiter{limit: limit, q: q.withDefaults()}
	limit.mu.Lock()
	limit.onMove = lim.admitWaiters
	limit.mu.Unlock()
	return lim
}

// Limit returns the Limit that sizes l.
func (l *Limiter) Limit() *Limit { return l.limit }

// A Token is one call let through: Done gives its slot back.
type Token struct {
	l        *Limiter
	start    time.Time
	inFlight int
	cuts     int // the limit's cuts when it was let through
	once     sync.Once
}

// Done gives the slot back and tells the limit the call's outcome and its
// latency (from the moment it was let through). Calls after the first do
// nothing. A call let through before the limit's last cut says nothing of
// the lower limit by its latency: its success is no sample (its failure
// is, the supplier's own word), as TCP lowers its window once for the
// losses of one window of data. Without that, the calls in flight when
// latency jumped (a pause of our own process, a supplier's brief stall)
// cut a limit again and again, 17 to 10 to 7 to 6 in three windows, for
// one event.
func (t *Token) Done(o Outcome) {
	t.once.Do(func() {
		if o == Success && t.l.limit.cutsNow() != t.cuts {
			o = Ignore
		}
		t.l.limit.Sample(time.Since(t.start), t.inFlight, o)
		t.l.mu.Lock()
		t.l.inFlight--
		t.l.mu.Unlock()
		t.l.admitWaiters()
	})
}

// TryAcquire lets the call through if a slot is free now and nobody of its
// priority or higher waits; it never waits.
func (l *Limiter) TryAcquire(p Priority) (*Token, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.freeFor(p) {
		return nil, false
	}
	return l.grant(p), true
}

// room is how many calls of priority p may be in flight (under mu): the
// limit, less the slots kept from Low calls.
func (l *Limiter) room(p Priority) int {
	n := l.limit.Current()
	if p == Low && l.q.Kept > 0 {
		n -= int(min(l.q.Kept, 1) * float64(n))
	}
	return n
}

// freeFor says whether a call of priority p may pass now (under mu).
func (l *Limiter) freeFor(p Priority) bool {
	if l.inFlight >= l.room(p) {
		return false
	}
	for q := p; q < priorities; q++ {
		if len(l.line[q]) > 0 {
			return false
		}
	}
	return true
}

func (l *Limiter) grant(p Priority) *Token {
	l.inFlight++
	l.passed[p]++
	return &Token{l: l, start: time.Now(), inFlight: l.inFlight, cuts: l.limit.cutsNow()}
}

// Acquire lets the call through at once when a slot is free, or waits in
// line for one: at most the line's Target, and never past ctx's deadline
// minus its Reserve. It returns ErrShed when the call is refused (the
// line full of calls at least as important, its wait over, no time left
// before its deadline) and ctx's error when ctx ends first.
func (l *Limiter) Acquire(ctx context.Context, p Priority) (*Token, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wait := l.q.Target
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)-l.q.Reserve)
	}
	l.mu.Lock()
	if l.freeFor(p) {
		t := l.grant(p)
		l.mu.Unlock()
		return t, nil
	}
	if wait <= 0 || !l.makeRoom(p) {
		l.shed[p]++
		l.mu.Unlock()
		return nil, ErrShed
	}
	w := &waiter{ready: make(chan struct{})}
	l.line[p] = append(l.line[p], w)
	l.waiting++
	l.mu.Unlock()

	timer := time.NewTimer(wait)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
	case <-timer.C:
		err = ErrShed
	case <-ctx.Done():
		err = ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.granted {
		// Let through, perhaps at the very moment its wait ended: take it.
		return &Token{l: l, start: time.Now(), inFlight: w.inFlight, cuts: l.limit.cutsNow()}, nil
	}
	if !closed(w.ready) { // still in line: leave it
		l.remove(p, w)
		if err == ErrShed {
			l.shed[p]++
		}
		return nil, err
	}
	return nil, ErrShed // pushed out of the line by a more important call
}

// makeRoom says whether a waiter of priority p can join the line (under
// mu): yes while it has room; when full, the newest waiter of the lowest
// priority below p is shed to make room; otherwise no.
func (l *Limiter) makeRoom(p Priority) bool {
	if l.waiting < l.q.Max {
		return true
	}
	for q := Low; q < p; q++ {
		if n := len(l.line[q]); n > 0 {
			w := l.line[q][n-1]
			l.line[q] = l.line[q][:n-1]
			l.waiting--
			l.shed[q]++
			close(w.ready)
			return true
		}
	}
	return false
}

func (l *Limiter) remove(p Priority, w *waiter) {
	for i, x := range l.line[p] {
		if x == w {
			l.line[p] = append(l.line[p][:i], l.line[p][i+1:]...)
			l.waiting--
			return
		}
	}
}

// admitWaiters lets waiters through while slots are free, the highest
// priority first, the oldest first within one.
func (l *Limiter) admitWaiters() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := Probe; p >= Low; p-- {
		for len(l.line[p]) > 0 && l.inFlight < l.room(p) {
			w := l.line[p][0]
			l.line[p] = l.line[p][1:]
			l.waiting--
			l.inFlight++
			l.passed[p]++
			w.granted, w.inFlight = true, l.inFlight
			close(w.ready)
		}
	}
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// Stats is a Limiter's state now.
type Stats struct {
	Limit    int              `json:"limit"`
	Min      int              `json:"min"`
	Max      int              `json:"max"`
	InFlight int              `json:"in_flight"`
	Waiting  int              `json:"waiting"`
	Passed   map[string]int64 `json:"passed"` // per priority
	Shed     map[string]int64 `json:"shed"`   // per priority
}

// Stats reports l now.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.limit.Config()
	s := Stats{Limit: l.limit.Current(), Min: c.Min, Max: c.Max, InFlight: l.inFlight, Waiting: l.waiting,
		Passed: map[string]int64{}, Shed: map[string]int64{}}
	for p := Low; p < priorities; p++ {
		s.Passed[p.String()], s.Shed[p.String()] = l.passed[p], l.shed[p]
	}
	return s
}

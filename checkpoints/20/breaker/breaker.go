// Package breaker is a circuit breaker: it counts the recent outcomes of the
// calls to one dependency and, when too many failed, stops the calls for a
// while instead of letting each one wait for the same failure.
//
// Closed, every call is allowed and its outcome goes into a window of the
// last Window outcomes. Once the window holds at least MinCalls outcomes
// and the share of failures in it reaches FailureRate, the breaker opens:
// Allow refuses every call at once (ErrOpen) for a cool-down drawn
// uniformly from [CoolDown, CoolDown·(1+Jitter)], so processes that opened
// together do not all come back together. Then it is half-open: it lets at
// most Probes calls through; one failure opens it again (a new cool-down),
// Probes successes close it with an empty window. Which outcomes count is
// the caller's decision (Done's Outcome): a dependency that answers a
// client error is up, and a call cancelled by its caller says nothing.
//
// It is usable alone: Allow before a call, Done with its outcome after.
package breaker

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// ErrOpen is Allow's refusal: the breaker is open, or half-open with every
// probe already let through.
var ErrOpen = errors.New("breaker: open")

// State is where a breaker is.
type State int

const (
	Closed State = iota
	Open
	HalfOpen
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	}
	return "half_open"
}

// MarshalText writes the state's name.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Outcome is what a call let through says about the dependency.
type Outcome int

const (
	// Success: the dependency answered (a client error or a bad body
	// included: it is up, the caller or the data is at fault).
	Success Outcome = iota
	// Failure: it failed (a 5xx, a timeout, a transport error).
	Failure
	// Ignore: the call says nothing (it was not made after all, or its
	// caller cancelled it); a probe so ended is given back.
	Ignore
)

// Defaults and bounds of Config.
const (
	DefaultWindow      = 20
	DefaultMinCalls    = 10
	DefaultFailureRate = 0.5
	DefaultCoolDown    = time.Second
	DefaultJitter      = 0.2
	DefaultProbes      = 3

	MaxWindow   = 1000
	MaxProbes   = 100
	MaxCoolDown = 10 * time.Minute
)

// Config sets a breaker; a zero field takes its default.
type Config struct {
	Window      int           // outcomes kept, the newest (1..MaxWindow)
	MinCalls    int           // outcomes in the window before it may open (1..Window)
	FailureRate float64       // opens when failures/outcomes ≥ this (0 < rate ≤ 1)
	CoolDown    time.Duration // shortest time open (0 < cool-down ≤ MaxCoolDown)
	// Jitter stretches each cool-down by a uniform share of it in
	// [0, Jitter] (0..1). Zero takes DefaultJitter; NoJitter turns it off.
	Jitter   float64
	NoJitter bool
	Probes   int // half-open: calls let through, and successes that close it (1..MaxProbes)
	// Rand draws the jitter in [0, 1); nil: math/rand/v2. For tests.
	Rand func() float64
}

func (c Config) withDefaults() Config {
	if c.Window == 0 {
		c.Window = DefaultWindow
	}
	if c.MinCalls == 0 {
		c.MinCalls = min(DefaultMinCalls, c.Window)
	}
	if c.FailureRate == 0 {
		c.FailureRate = DefaultFailureRate
	}
	if c.CoolDown == 0 {
		c.CoolDown = DefaultCoolDown
	}
	if c.Jitter == 0 {
		c.Jitter = DefaultJitter
	}
	if c.NoJitter {
		c.Jitter = 0
	}
	if c.Probes == 0 {
		c.Probes = DefaultProbes
	}
	if c.Rand == nil {
		c.Rand = rand.Float64
	}
	return c
}

// Check says what is wrong with c (its zero fields taken as their
// defaults), or nil.
func (c Config) Check() error {
	c = c.withDefaults()
	switch {
	case c.Window < 1 || c.Window > MaxWindow:
		return fmt.Errorf("breaker: window %d: want 1 to %d outcomes", c.Window, MaxWindow)
	case c.MinCalls < 1 || c.MinCalls > c.Window:
		return fmt.Errorf("breaker: minimum calls %d: want 1 to the window (%d)", c.MinCalls, c.Window)
	case !(c.FailureRate > 0 && c.FailureRate <= 1): // NaN fails too
		return fmt.Errorf("breaker: failure rate %v: want a number in (0, 1]", c.FailureRate)
	case c.CoolDown <= 0 || c.CoolDown > MaxCoolDown:
		return fmt.Errorf("breaker: cool-down %s: want more than 0 and at most %s", c.CoolDown, MaxCoolDown)
	case !(c.Jitter >= 0 && c.Jitter <= 1) || math.IsInf(c.Jitter, 0):
		return fmt.Errorf("breaker: jitter %v: want a number in [0, 1]", c.Jitter)
	case c.Probes < 1 || c.Probes > MaxProbes:
		return fmt.Errorf("breaker: probes %d: want 1 to %d", c.Probes, MaxProbes)
	}
	return nil
}

// Breaker is one dependency's circuit breaker; safe for concurrent use.
type Breaker struct {
	cfg Config

	mu        sync.Mutex
	state     State
	gen       uint64 // changes with every state change: a ticket of an older one is ignored
	ring      []bool // the window: true is a failure
	n, next   int    // outcomes in the ring; where the next one goes
	failures  int    // failures in the ring
	openUntil time.Time
	probing   int // half-open: probes let through and not yet done
	probed    int // half-open: probes that succeeded

	opened, refused int64 // times it opened; calls it refused
}

// New returns a closed breaker, or Check's error.
func New(cfg Config) (*Breaker, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Breaker{cfg: cfg, ring: make([]bool, cfg.Window)}, nil
}

// A Ticket is a call let through; its Done must be called once.
type Ticket struct {
	b     *Breaker
	gen   uint64
	probe bool
}

// Probe says whether the call is a half-open probe.
func (t Ticket) Probe() bool { return t.probe }

// Allow lets a call through (a Ticket) or refuses it at once (ErrOpen).
func (b *Breaker) Allow() (Ticket, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && !time.Now().Before(b.openUntil) {
		b.move(HalfOpen)
	}
	switch {
	case b.state == Closed:
		return Ticket{b: b, gen: b.gen}, nil
	case b.state == HalfOpen && b.probing+b.probed < b.cfg.Probes:
		b.probing++
		return Ticket{b: b, gen: b.gen, probe: true}, nil
	}
	b.refused++
	return Ticket{}, ErrOpen
}

// Done records the call's outcome. An outcome of a call let through before
// the breaker last changed state is ignored.
func (t Ticket) Done(o Outcome) {
	b := t.b
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.gen != b.gen {
		return
	}
	if t.probe {
		b.probing--
		switch o {
		case Failure:
			b.move(Open)
		case Success:
			if b.probed++; b.probed >= b.cfg.Probes {
				b.move(Closed)
			}
		}
		return
	}
	if o == Ignore {
		return
	}
	if b.n == len(b.ring) {
		if b.ring[b.next] {
			b.failures--
		}
	} else {
		b.n++
	}
	b.ring[b.next] = o == Failure
	if o == Failure {
		b.failures++
	}
	b.next = (b.next + 1) % len(b.ring)
	if b.n >= b.cfg.MinCalls && float64(b.failures) >= b.cfg.FailureRate*float64(b.n) {
		b.move(Open)
	}
}

// move changes state, starting what the new state needs.
func (b *Breaker) move(to State) {
	b.state = to
	b.gen++
	b.probing, b.probed = 0, 0
	b.n, b.next, b.failures = 0, 0, 0
	if to == Open {
		b.opened++
		stretch := time.Duration(b.cfg.Jitter * b.cfg.Rand() * float64(b.cfg.CoolDown))
		b.openUntil = time.Now().Add(b.cfg.CoolDown + stretch)
	}
}

// Stats is a breaker as GET /api/breakers shows it.
type Stats struct {
	State    State `json:"state"`
	Calls    int   `json:"calls"`    // outcomes in the window (closed)
	Failures int   `json:"failures"` // failures among them
	Window   int   `json:"window"`
	MinCalls int   `json:"min_calls"`
	// FailureRate is the threshold; OpenForMs the cool-down left (open).
	FailureRate float64 `json:"failure_rate"`
	OpenForMs   int64   `json:"open_for_ms"`
	Probing     int     `json:"probing"` // half-open: probes in flight
	Probed      int     `json:"probed"`  // half-open: probes that succeeded
	Opened      int64   `json:"opened"`  // times it opened
	Refused     int64   `json:"refused"` // calls it refused
}

// Stats reports the breaker now. An open breaker whose cool-down is over
// reads as half-open.
func (b *Breaker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Stats{State: b.state, Calls: b.n, Failures: b.failures, Window: b.cfg.Window, MinCalls: b.cfg.MinCalls,
		FailureRate: b.cfg.FailureRate, Probing: b.probing, Probed: b.probed, Opened: b.opened, Refused: b.refused}
	if b.state == Open {
		if left := time.Until(b.openUntil); left > 0 {
			s.OpenForMs = (left + time.Millisecond - 1).Milliseconds()
		} else {
			s.State = HalfOpen
		}
	}
	return s
}

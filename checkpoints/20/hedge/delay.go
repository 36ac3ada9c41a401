package hedge

import (
	"sync"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"
)

// DelayConfig sets a Delays; a zero field takes its default.
type DelayConfig struct {
	Quantile float64       // the latency quantile to hedge at (default 0.95)
	Floor    time.Duration // the delay is never shorter (default 10 ms)
	Ceiling  time.Duration // nor longer (default 500 ms); also the delay while too little is known
	// Window is how far back latencies count (default 10 s), kept as Slices
	// sub-sketches (default 5) of Window/Slices each: the oldest is dropped
	// as time moves on, so the delay follows the supplier.
	Window     time.Duration
	Slices     int
	MinSamples int // fewer latencies than this in the window: the delay is Ceiling (default 10)
}

// Defaults for the zero fields of DelayConfig.
const (
	DefaultQuantile = 0.95
	DefaultFloor    = 10 * time.Millisecond
	DefaultCeiling  = 500 * time.Millisecond
	DefaultWindow   = 10 * time.Second
	DefaultSlices   = 5
	// DefaultMinSamples: until a supplier has answered this many calls in
	// the window, its delay is the Ceiling. Ten successes give a p95 that
	// is the second-slowest of them, good enough to start with; every call
	// before that is hedged late (a fresh process's first quotes).
	DefaultMinSamples = 10
)

// maxKeys bounds the table of keys (suppliers) a Delays keeps.
const maxKeys = 64

// relativeAccuracy is the sketch's error on any quantile: 1 %.
const relativeAccuracy = 0.01

func (c DelayConfig) withDefaults() DelayConfig {
	if c.Quantile <= 0 || c.Quantile >= 1 {
		c.Quantile = DefaultQuantile
	}
	if c.Floor <= 0 {
		c.Floor = DefaultFloor
	}
	if c.Ceiling <= 0 {
		c.Ceiling = DefaultCeiling
	}
	c.Ceiling = max(c.Ceiling, c.Floor)
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Slices <= 0 {
		c.Slices = DefaultSlices
	}
	if c.MinSamples <= 0 {
		c.MinSamples = DefaultMinSamples
	}
	return c
}

// Delays keeps, per key (a supplier), the latencies of the last Window in
// an online quantile sketch (DDSketch, 1 % relative accuracy, fixed memory
// whatever the number of calls) and says how long to wait before hedging:
// the key's recent Quantile, clamped to [Floor, Ceiling].
// It is safe for concurrent use.
type Delays struct {
	cfg DelayConfig

	mu   sync.Mutex
	keys map[string]*window
}

// NewDelays returns an empty Delays: every key starts at Ceiling.
func NewDelays(cfg DelayConfig) *Delays {
	return &Delays{cfg: cfg.withDefaults(), keys: map[string]*window{}}
}

// window is a ring of sub-sketches; slices[cur] covers [start, start+slice).
type window struct {
	slices []*ddsketch.DDSketch
	cur    int
	start  time.Time
}

func newSketch() *ddsketch.DDSketch {
	s, err := ddsketch.NewDefaultDDSketch(relativeAccuracy)
	if err != nil {
		panic(err) // only for an accuracy outside (0, 1)
	}
	return s
}

// rotate drops the sub-sketches that have left the window by now.
func (w *window) rotate(now time.Time, slice time.Duration) {
	for n := 0; now.Sub(w.start) >= slice; n++ {
		if n >= len(w.slices) { // idle for a whole window: start afresh
			for _, s := range w.slices {
				s.Clear()
			}
			w.start = now
			return
		}
		w.cur = (w.cur + 1) % len(w.slices)
		w.slices[w.cur].Clear()
		w.start = w.start.Add(slice)
	}
}

// get returns key's window, making it if there is room; d.mu is held.
func (d *Delays) get(key string, now time.Time) *window {
	w := d.keys[key]
	if w == nil {
		if len(d.keys) >= maxKeys {
			return nil
		}
		w = &window{slices: make([]*ddsketch.DDSketch, d.cfg.Slices), start: now}
		for i := range w.slices {
			w.slices[i] = newSketch()
		}
		d.keys[key] = w
	}
	w.rotate(now, d.cfg.Window/time.Duration(d.cfg.Slices))
	return w
}

// Observe records one latency of key.
func (d *Delays) Observe(key string, latency time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.get(key, time.Now()); w != nil && latency >= 0 {
		w.slices[w.cur].Add(float64(latency) / float64(time.Millisecond))
	}
}

// Delay is how long a call to key may run before it is hedged: key's
// Quantile over the window to the nearest millisecond, clamped to [Floor,
// Ceiling]; Ceiling while the window holds fewer than MinSamples latencies.
func (d *Delays) Delay(key string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	w := d.get(key, time.Now())
	if w == nil {
		return d.cfg.Ceiling
	}
	merged := newSketch()
	for _, s := range w.slices {
		if err := merged.MergeWith(s); err != nil {
			return d.cfg.Ceiling
		}
	}
	if merged.GetCount() < float64(d.cfg.MinSamples) {
		return d.cfg.Ceiling
	}
	ms, err := merged.GetValueAtQuantile(d.cfg.Quantile)
	if err != nil {
		return d.cfg.Ceiling
	}
	q := time.Duration(ms * float64(time.Millisecond)).Round(time.Millisecond) // the sketch is 1 % accurate: whole ms say no more
	return min(max(q, d.cfg.Floor), d.cfg.Ceiling)
}

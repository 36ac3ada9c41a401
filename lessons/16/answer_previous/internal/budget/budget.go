package budget

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// Budget is a fixed amount of time measured from one start.
type Budget struct {
	start time.Time
	total time.Duration
}

// Start starts a budget of total now.
func Start(total time.Duration) Budget { return Budget{start: time.Now(), total: total} }

// Used is the time spent since the start.
func (b Budget) Used() time.Duration { return time.Since(b.start) }

// Left is the time remaining, never negative.
func (b Budget) Left() time.Duration { return max(b.total-b.Used(), 0) }

// Context returns a context that ends when the budget does.
func (b Budget) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, b.start.Add(b.total))
}

// FullJitter returns a wait drawn uniformly from [0, ceiling]. Waiting a
// random part of the ceiling, rather than the ceiling, spreads out clients
// that failed together so they do not come back together.
func FullJitter(r *rand.Rand, ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(r.Int64N(int64(ceiling) + 1))
}

// NewRand returns a generator seeded with seed, or from the clock when seed is 0.
func NewRand(seed uint64) *rand.Rand {
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Sleep waits for d or until ctx ends, and reports whether it waited in full.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Millis converts d to milliseconds with one decimal, for JSON output.
func Millis(d time.Duration) float64 { return math.Round(float64(d)/1e5) / 10 }

// Seconds converts a flag in (fractional) seconds to a duration.
func Seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// MS converts a flag in whole milliseconds to a duration.
func MS(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// ErrText is an error's text for JSON output, or nil for no error.
func ErrText(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}

// Print writes v as one line of JSON.
func Print(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// URLs is a repeatable --url flag of absolute http URLs (see CheckURL).
type URLs []string

func (u *URLs) String() string { return strings.Join(*u, ",") }

// Set adds one URL; one that CheckURL refuses makes flag parsing fail, a
// usage error.
func (u *URLs) Set(s string) error {
	if err := CheckURL(s); err != nil {
		return err
	}
	*u = append(*u, s)
	return nil
}

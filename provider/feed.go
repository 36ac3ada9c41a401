package provider

import (
	"sync"
	"time"
)

// FeedSize is how many recent supplier attempts (with an X-Request-ID) the
// dashboard's feed keeps; an older attempt is overwritten. Each entry is
// fixed size plus its ID (at most MaxKeyBytes), so the feed is bounded in
// count and in bytes.
const FeedSize = 256

// attemptFeed is the ring of the last FeedSize supplier attempts that
// carried an X-Request-ID, for GET /stats/stream. Each change bumps rev and
// stamps the entry with it, so a stream sends only what changed since its
// last event. It belongs to a state: a reset starts an empty one.
type attemptFeed struct {
	mu   sync.Mutex
	born time.Time // arrival times are sent relative to this
	ring [FeedSize]feedEntry
	next uint64 // seq of the next attempt; the first is 1
	rev  uint64 // revision of the last change
}

// A feedEntry is one attempt in the feed.
type feedEntry struct {
	seq, rev     uint64 // seq 0: an empty slot
	id           string
	arrival      time.Time
	duration     time.Duration // arrival to end (0 while running)
	budgetMs     int64         // X-Budget-Ms, -1 for none
	retryAfterMs int64         // a 429's Retry-After-Ms, 0 for none
	status       int16
	end          endKind
	supplier     uint8
	hedged, lost bool // arrived while a sibling ran; lost_cancelled
}

func newAttemptFeed(now time.Time) *attemptFeed { return &attemptFeed{born: now, next: 1} }

// start records an attempt arriving and returns its seq for finish.
func (f *attemptFeed) start(id string, supplier int, arrival time.Time, hedged bool) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	seq := f.next
	f.next++
	f.rev++
	f.ring[seq%FeedSize] = feedEntry{seq: seq, rev: f.rev, id: id, arrival: arrival, budgetMs: -1, supplier: uint8(supplier), hedged: hedged}
	return seq
}

// finish records how attempt seq ended, unless the ring has overwritten it.
func (f *attemptFeed) finish(seq uint64, now time.Time, status int, end endKind, budgetMs, retryAfterMs int64, lost bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := &f.ring[seq%FeedSize]
	if e.seq != seq {
		return
	}
	f.rev++
	e.rev, e.status, e.end = f.rev, int16(status), end
	e.duration = now.Sub(e.arrival)
	e.budgetMs, e.retryAfterMs, e.lost = budgetMs, retryAfterMs, lost
}

// FeedAttempt is one attempt as GET /stats/stream sends it.
type FeedAttempt struct {
	Seq      uint64  `json:"seq"` // 1, 2, … since the last reset: the attempt's key
	ID       string  `json:"id"`  // its X-Request-ID
	Supplier string  `json:"supplier"`
	AtMs     float64 `json:"at_ms"` // arrival, in ms since the last reset (or start)
	Status   int     `json:"status"`
	End      string  `json:"end"`         // running, done, client_gone, abandoned, reset
	Duration float64 `json:"duration_ms"` // arrival to end (so far, while running)
	BudgetMs *int64  `json:"budget_ms,omitempty"`
	// RetryAfterMs is the Retry-After-Ms a 429 gave (omitted otherwise).
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
	// Hedged: it arrived while another attempt of its ID ran at this
	// supplier; LostCancelled: its client hung up after such a sibling
	// answered (both omitted when false).
	Hedged        bool `json:"hedged,omitempty"`
	LostCancelled bool `json:"lost_cancelled,omitempty"`
}

// since appends to out, in arrival order, the attempts changed after rev
// and those still running (their duration grows), and returns the feed's
// current revision.
func (f *attemptFeed) since(rev uint64, now time.Time, out []FeedAttempt) ([]FeedAttempt, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	first := uint64(1)
	if f.next > FeedSize {
		first = f.next - FeedSize
	}
	for seq := first; seq < f.next; seq++ {
		e := &f.ring[seq%FeedSize]
		if e.seq != seq || (e.rev <= rev && e.end != endRunning) {
			continue
		}
		d := e.duration
		if e.end == endRunning {
			d = now.Sub(e.arrival)
		}
		a := FeedAttempt{
			Seq: e.seq, ID: e.id, Supplier: Suppliers[e.supplier], AtMs: durationMs(e.arrival.Sub(f.born)),
			Status: int(e.status), End: e.end.String(), Duration: durationMs(d), RetryAfterMs: e.retryAfterMs,
			Hedged: e.hedged, LostCancelled: e.lost,
		}
		if e.budgetMs >= 0 {
			b := e.budgetMs
			a.BudgetMs = &b
		}
		out = append(out, a)
	}
	return out, f.rev
}

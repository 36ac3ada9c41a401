package provider

import (
	"math"
	"time"
)

// How a logged request ended.
type endKind uint8

const (
	endRunning    endKind = iota // still being served
	endDone                      // a whole answer was written (any status)
	endClientGone                // the client left before the answer was complete
	endAbandoned                 // planned work longer than X-Budget-Ms: stopped at the budget or when the client left
	endReset                     // the connection was reset on purpose (scenario reset)
)

var endNames = [...]string{"running", "done", "client_gone", "abandoned", "reset"}

func (e endKind) String() string { return endNames[e] }

// A logEntry is one request in a per-key log (an X-Request-ID's attempts,
// a partner key's calls). Fixed size: a log is bounded in bytes as well as
// in entries.
type logEntry struct {
	arrival      time.Duration // since the key's first request
	duration     time.Duration // from arrival to the end (0 while running)
	budgetMs     int64         // X-Budget-Ms received, -1 for none (partner log)
	retryAfterMs int64         // the Retry-After-Ms of a 429, 0 for none
	status       int16         // status written, 0 for none
	end          endKind
	where        uint8 // supplier index (request log) or partner path index (partner log)
	hedged, lost bool  // request log: arrived while a sibling ran; lost_cancelled
}

// keyLog is the bounded log of one key: its first MaxLogPerKey requests,
// and how many more came.
type keyLog struct {
	first   time.Time
	entries []logEntry
	dropped int64
}

// start logs a request arriving at now and returns its index in the log
// (-1 when the log is full and the request is only counted).
func (l *keyLog) start(now time.Time, e logEntry) int {
	if l.first.IsZero() {
		l.first = now
	}
	if len(l.entries) >= MaxLogPerKey {
		l.dropped++
		return -1
	}
	e.arrival = now.Sub(l.first)
	l.entries = append(l.entries, e)
	return len(l.entries) - 1
}

// finish records how entry i ended, at now.
func (l *keyLog) finish(i int, now time.Time, status int, end endKind) {
	if i < 0 || i >= len(l.entries) {
		return
	}
	e := &l.entries[i]
	e.status, e.end = int16(status), end
	e.duration = now.Sub(l.first) - e.arrival
}

// durationMs is d in milliseconds, to the microsecond.
func durationMs(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)) / 1000
}

// entryTimes returns an entry's arrival_ms and duration_ms as of now
// (a running entry's duration is its time so far).
func (l *keyLog) entryTimes(e logEntry, now time.Time) (arrivalMs, durMs float64) {
	d := e.duration
	if e.end == endRunning {
		d = now.Sub(l.first) - e.arrival
	}
	return durationMs(e.arrival), durationMs(d)
}

// idRecord is what the lab remembers of one X-Request-ID.
type idRecord struct {
	attempts   [len(Suppliers)]int64     // requests per supplier, all of them
	retryAt    [len(Suppliers)]time.Time // when the last 429 said to come back, per supplier
	inFlight   [len(Suppliers)]int32     // requests running now, per supplier (hedged)
	answeredAt [len(Suppliers)]time.Time // when the last one written whole ended, per supplier (lost_cancelled)
	log        keyLog
}

// partnerRecord is what the lab remembers of one partner key.
type partnerRecord struct {
	calls int64 // /call requests (the fail=K count)
	log   keyLog
}

// The partner paths, in the order partner_paths and logs name them.
var partnerPaths = [...]string{"/health", "/call", "/budget"}

const (
	pathHealth = iota
	pathCall
	pathBudget
)

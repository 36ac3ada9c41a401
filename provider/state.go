package provider

import (
	"sync"
	"sync/atomic"
	"time"
)

// A state is everything a reset forgets: the counters and every piece of
// per-key state. Reset does not zero it field by field (a request running
// meanwhile could count its start before the reset and its status after,
// so /stats would show more statuses than requests); it swaps in a new
// state. A request keeps the state it arrived in to the end, so each
// request counts wholly in one state, and the old one, with all its keys,
// is garbage once its last request returns.
type state struct {
	counters
	seen     *keyTable[int64]         // scenario+request ID → requests seen (flaky, reset)
	partners *keyTable[partnerRecord] // partner key → /call count and the log of calls
	ids      *keyTable[idRecord]      // request ID → attempts per supplier and their log
	feed     *attemptFeed             // the last FeedSize attempts with an ID, for /stats/stream

	supplierPeak [len(Suppliers)]atomic.Int64 // peak of Provider.supplierActive per supplier

	window rateWindowLog // ratelimited: boreal's admissions in the last 200 ms
	costs  costWindowLog // costlimited: boreal's admissions in the last 1000 ms, with their cost

	outageMu    sync.Mutex
	outageStart time.Time // outage: boreal's first outage request; zero before it
	// brownout: boreal's first brownout request, when its schedule began;
	// zero before it (under outageMu).
	brownoutBegan time.Time
	// capacity: the first capacity request, when its schedule began; zero
	// before it (under outageMu).
	capacityBegan time.Time
	// capacity: each supplier's capacity calls in flight.
	capacityInFlight [len(Suppliers)]atomic.Int64

	blackholeBase uint32 // the blackhole's SYN drop counter when this state began
}

// counters are the statistics of one state. Every field is an atomic, so
// counting takes no lock on the hot path. A request adds to them in this
// order: total; per_supplier or partner; hedged, early_retries,
// stragglers, cost_admitted; abandoned, client_gone, lost_cancelled;
// per_status; rate_limited or cost_limited, and resets. Snapshot reads them in the reverse order, so every sum it
// reports is at most the total it reports (a request it sees the end of,
// it also sees the start of).
type counters struct {
	total          atomic.Int64
	maxActive      atomic.Int64
	perSupplier    [len(Suppliers)]atomic.Int64
	partnerReqs    atomic.Int64                    // /call and /budget requests
	partnerPaths   [len(partnerPaths)]atomic.Int64 // /health, /call, /budget
	perStatus      [600]atomic.Int64
	abandoned      atomic.Int64 // planned work longer than X-Budget-Ms
	clientGone     atomic.Int64 // the client left before the answer was complete
	earlyRetries   atomic.Int64 // requests back before the Retry-After-Ms of their last 429
	rateLimited    atomic.Int64 // 429s written by scenario ratelimited
	costLimited    atomic.Int64 // 429s written by scenario costlimited
	costAdmitted   atomic.Int64 // units of cost (qty) costlimited admitted
	hedged         atomic.Int64 // requests that arrived while another of their X-Request-ID ran at that supplier
	lostCancelled  atomic.Int64 // requests of such a pair whose client hung up after a sibling answered
	stragglers     atomic.Int64 // tail: requests drawn as stragglers
	tailAnon       atomic.Int64 // tail: requests without an X-Request-ID so far (their key)
	brownoutFailed atomic.Int64 // brownout: boreal requests that arrived inside the window
	capacityQueued atomic.Int64 // capacity: requests that arrived with more than C in flight (slower)
	capacityShed   atomic.Int64 // capacity: requests answered 503 beyond 3×C
	resets         atomic.Int64 // connections reset on purpose (scenario reset)
}

// newState returns an empty state.
func (p *Provider) newState() *state {
	st := &state{
		seen:     newKeyTable[int64](p.maxKeys),
		partners: newKeyTable[partnerRecord](p.maxKeys),
		ids:      newKeyTable[idRecord](p.maxKeys),
		feed:     newAttemptFeed(time.Now()),
	}
	if p.blackhole != nil {
		st.blackholeBase, _ = p.blackhole.synDrops()
	}
	return st
}

// Reset zeroes every counter and forgets all per-key state: the per-key
// tables are dropped whole, so their memory is given back. The active gauge
// is left alone (those handlers are still running) and max_active restarts
// from it. Requests that arrived before the reset finish in the old state
// and are not counted in the new one.
func (p *Provider) Reset() {
	st := p.newState()
	p.state.Store(st)
	// A request that raised active just before the swap raised the old
	// state's peak; read active again, after the swap, so the new peak is
	// never below the gauge.
	raiseMax(&st.maxActive, p.active.Load())
	for i := range p.supplierActive {
		raiseMax(&st.supplierPeak[i], p.supplierActive[i].Load())
	}
}

// raiseMax sets peak to v if v is larger (a CAS loop: no lock).
func raiseMax(peak *atomic.Int64, v int64) {
	for {
		old := peak.Load()
		if v <= old || peak.CompareAndSwap(old, v) {
			return
		}
	}
}

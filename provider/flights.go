package provider

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// flights are the requests in progress, each with the connection it came
// on, so that the gauges (active, a supplier's active) and the peaks
// (max_active, a supplier's peak) leave out the requests whose client has
// already hung up.
//
// Why: a client that cancels a call closes its connection and may send its
// next call at once (a hedge's loser is cancelled, its slot comes back, a
// waiting call takes it). The handler of the cancelled call learns of the
// hang-up only when net/http's reader of that connection has run, which on
// a busy machine can come after the next call was counted: the peak would
// read one above the client's limit although the client never had more
// calls open than its limit. The closing FIN reaches the socket before the
// next call's bytes can (the client closes, then sends), so a peek at the
// socket tells a call whose client is gone from a running one.
//
// A gauge moves under the same lock as the table, so the table holds
// exactly the requests the gauges count: a request counted is always one
// live can look at.
type flights struct {
	mu sync.Mutex
	m  map[*http.Request]flight
}

// A flight is held in the map by value: the hot path allocates nothing for
// it beyond the map's slot (and no func to take it back: see remove).
type flight struct {
	conn     net.Conn // nil when the server does not use ConnContext
	supplier int      // -1 until a supplier handler says which
}

// add registers r and raises gauge with it; it returns the gauge's new
// value. remove takes both back.
func (f *flights) add(r *http.Request, gauge *atomic.Int64) int64 {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	f.mu.Lock()
	if f.m == nil {
		f.m = map[*http.Request]flight{}
	}
	f.m[r] = flight{conn: c, supplier: -1}
	n := gauge.Add(1)
	f.mu.Unlock()
	return n
}

// remove takes back what add(r, gauge) did.
func (f *flights) remove(r *http.Request, gauge *atomic.Int64) {
	f.mu.Lock()
	delete(f.m, r)
	gauge.Add(-1)
	f.mu.Unlock()
}

// setSupplier records that r is a call to supplier s and raises gauge (that
// supplier's) with it; it returns the gauge's new value. unsetSupplier
// takes both back.
func (f *flights) setSupplier(r *http.Request, s int, gauge *atomic.Int64) int64 {
	f.mu.Lock()
	if fl, ok := f.m[r]; ok {
		fl.supplier = s
		f.m[r] = fl
	}
	n := gauge.Add(1)
	f.mu.Unlock()
	return n
}

// unsetSupplier takes back what setSupplier(r, s, gauge) did.
func (f *flights) unsetSupplier(r *http.Request, gauge *atomic.Int64) {
	f.mu.Lock()
	if fl, ok := f.m[r]; ok {
		fl.supplier = -1
		f.m[r] = fl
	}
	gauge.Add(-1)
	f.mu.Unlock()
}

// live counts the running requests (of supplier s, or all when s < 0)
// whose client has not closed its connection.
func (f *flights) live(s int) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	var n int64
	for _, fl := range f.m {
		if (s < 0 || fl.supplier == s) && (fl.conn == nil || !hungUp(fl.conn)) {
			n++
		}
	}
	return n
}

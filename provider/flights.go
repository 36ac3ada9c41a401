package provider

import (
	"net"
	"net/http"
	"sync"
)

// flights are the requests in progress, each with the connection it came
// on, so that a new peak (max_active, a supplier's peak) leaves out the
// requests whose client has already hung up.
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
type flights struct {
	mu sync.Mutex
	m  map[*http.Request]*flight
}

type flight struct {
	conn     net.Conn // nil when the server does not use ConnContext
	supplier int      // -1 until a supplier handler says which
}

// add registers r; the returned func removes it.
func (f *flights) add(r *http.Request) func() {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	f.mu.Lock()
	if f.m == nil {
		f.m = map[*http.Request]*flight{}
	}
	f.m[r] = &flight{conn: c, supplier: -1}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.m, r)
		f.mu.Unlock()
	}
}

// setSupplier records that r is a call to supplier s.
func (f *flights) setSupplier(r *http.Request, s int) {
	f.mu.Lock()
	if fl := f.m[r]; fl != nil {
		fl.supplier = s
	}
	f.mu.Unlock()
}

// live returns n, a count of running requests (of supplier s, or of all
// when s < 0), less those whose client has closed its connection.
func (f *flights) live(n int64, s int) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fl := range f.m {
		if (s < 0 || fl.supplier == s) && fl.conn != nil && hungUp(fl.conn) {
			n--
		}
	}
	return max(n, 0)
}

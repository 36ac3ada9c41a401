package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"quoteflowlab.dev/provider"
)

// lab is the provider lab and the addresses the tools are pointed at.
type lab struct {
	server    *provider.Server
	base      string    // partner base URL, http://127.0.0.1:port
	addr      string    // partner host:port
	blackhole string    // blackhole host:port; "" when the system has none (or none was asked for)
	closed    string    // a loopback host:port nobody listens on
	release   io.Closer // frees closed's port
	// statuses answers GET /status/N with status N at once (404, 429...):
	// the received failures the partner's /call (always 503) cannot give;
	// and GET /reset with a TCP reset before any byte.
	statuses *http.Server
	status   string // its base URL
}

// resetConn answers a request with a TCP reset before any byte: the
// connection is taken from the server and closed with no linger, so the
// kernel sends RST instead of FIN.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// startStatuses starts the lab's status server on a free loopback port.
func (l *lab) startStatuses() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	l.status = "http://" + ln.Addr().String()
	l.statuses = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reset" {
			resetConn(w)
			return
		}
		code := 0
		if _, err := fmt.Sscanf(r.URL.Path, "/status/%d", &code); err != nil || code < 200 || code > 599 {
			code = http.StatusBadRequest
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, "{\"status\":%d}\n", code)
	})}
	go l.statuses.Serve(ln)
	return nil
}

// startLab starts a provider on free loopback ports, with a blackhole when
// withBlackhole. The main lab serves every tool; fanout and probe get a lab
// of their own each, so that what the provider records (the log of calls
// without a key, partner_paths, the blackhole's SYN drops) is theirs alone.
//
// A busy machine can make a start fail (the blackhole's accept queue is
// filled by dialling it, within a bound): it is tried three times, since
// the lab's failure is never the answer's.
func startLab(withBlackhole bool) (*lab, error) {
	var err error
	for range 3 {
		var l *lab
		if l, err = startLabOnce(withBlackhole); err == nil {
			return l, nil
		}
	}
	return nil, err
}

func startLabOnce(withBlackhole bool) (*lab, error) {
	bh := ""
	if withBlackhole {
		bh = "127.0.0.1:0"
	}
	s, err := provider.Start(provider.Options{LatencyScale: 1}, "127.0.0.1:0", bh)
	if err != nil {
		return nil, err
	}
	closed, release, err := reservedClosedPort()
	if err != nil {
		s.Shutdown(context.Background())
		return nil, err
	}
	return &lab{server: s, base: s.URL, addr: s.Addr, blackhole: s.BlackholeAddr, closed: closed, release: release}, nil
}

// stop shuts the lab down, cutting slow partner calls after a short grace.
func (l *lab) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if l.statuses != nil {
		l.statuses.Close()
	}
	if l.release != nil {
		l.release.Close()
	}
	l.server.Shutdown(ctx)
}

// stats is the lab's /stats, read in-process.
func (l *lab) stats() provider.Stats { return l.server.Provider.Snapshot() }

// partnerLog reads what the partner itself recorded for key: every /call
// and /budget request with its arrival time, the X-Budget-Ms it carried and
// how it ended. The grader grades from this log, never from what a tool
// says it sent.
func (l *lab) partnerLog(ctx context.Context, key string) (provider.PartnerLog, error) {
	var out provider.PartnerLog
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.base+"/stats/partner?key="+url.QueryEscape(key), nil)
	if err != nil {
		return out, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, fmt.Errorf("reading the partner's log: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("reading the partner's log: status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("reading the partner's log: %w", err)
	}
	return out, nil
}

// settle waits (at most a second) until no call of key is still running in
// the partner's log, and returns the log: a tool that hung up is seen as
// gone by the partner a moment later.
func (l *lab) settle(ctx context.Context, key string) (provider.PartnerLog, error) {
	deadline := time.Now().Add(time.Second)
	for {
		log, err := l.partnerLog(ctx, key)
		if err != nil || time.Now().After(deadline) || !running(log) {
			return log, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func running(log provider.PartnerLog) bool {
	for _, c := range log.Calls {
		if c.End == "running" {
			return true
		}
	}
	return false
}

// closedPort returns a loopback address nobody listens on: it listens on a
// free port and closes it again.
func closedPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

var nonces atomic.Int64

// nonce makes partner keys unique to one grading run and one use.
func nonce() string {
	return fmt.Sprintf("e15-%d-%d", time.Now().UnixNano(), nonces.Add(1))
}

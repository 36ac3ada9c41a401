package mutation

import (
	"context"
	"os/exec"
	"sync"

	"quoteflowlab.dev/kit/redisserver"
)

// RedisEnv is the variable that gives a run of the answer a redis-server
// of its own, empty (redis://127.0.0.1:PORT/0), which lab check started for
// that run and kills when the run ends. An answer may use it instead of
// starting a server of its own; one that starts its own still works.
const RedisEnv = "LAB_REDIS_URL"

// redisPool gives every run of a check a redis-server of its own
// (redisserver.Confined), killed when the run ends and never handed to
// another: no run can see or slow down another's data, clients or
// messages (no ACL rule confines a user to a database).
//
// A server takes 24-71 ms of wall time to start on a busy 2-core machine,
// so the pool starts them ahead of the runs: as many as run at once, then
// one for each run that takes one, until it has started as many as the
// check expects to run; past that, one when a run finds none ready. A
// run's server is killed in the background; close waits for every one.
type redisPool struct {
	cfg      redisserver.Config
	ready    chan *redisserver.Server // started, not yet taken
	mu       sync.Mutex
	closed   bool
	started  int            // servers started or starting
	expected int            // runs the check expects
	servers  sync.WaitGroup // every server started, until it is stopped
}

// startRedis starts the check's first redis-server on a free loopback port
// (and more in the background, for the expected runs), or returns nil and
// why not (no redis-server on PATH: each run's answer starts its own, or
// its stand-in, as without lab check).
func startRedis(ctx context.Context, dir string, expected int) (*redisPool, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil
	}
	p := &redisPool{cfg: redisserver.Config{Bin: bin, Dir: dir, Confined: true}, ready: make(chan *redisserver.Server, runsAtOnce), expected: expected, started: 1}
	p.servers.Add(1)
	s, err := redisserver.Start(ctx, p.cfg)
	if err != nil {
		p.servers.Done()
		return nil, err
	}
	p.ready <- s
	for range min(runsAtOnce, expected) - 1 {
		p.refill(false)
	}
	return p, nil
}

// stop kills s in the background; p.servers counts it until it is gone.
func (p *redisPool) stop(s *redisserver.Server) {
	go func() { s.Stop(); p.servers.Done() }()
}

// refill starts one server in the background for a run to come, if the
// check expects more runs than were started, or if needed (a run finds
// none ready); none once the pool is closed.
func (p *redisPool) refill(needed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || !needed && p.started >= p.expected {
		return
	}
	p.started++
	p.servers.Add(1)
	go func() {
		s, err := redisserver.Start(context.Background(), p.cfg)
		if err != nil {
			p.servers.Done()
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.closed {
			p.stop(s)
			return
		}
		select {
		case p.ready <- s:
		default:
			p.stop(s) // more were started than runs wait: none needed
		}
	}()
}

// forRun is the setting for one run, a server no run had before, and what
// kills it when the run is done; "" when none came up in time (the answer
// then starts its own).
func (p *redisPool) forRun(ctx context.Context) (env string, done func()) {
	if p == nil {
		return "", func() {}
	}
	var s *redisserver.Server
	select {
	case s = <-p.ready:
		p.refill(false)
	default:
		p.refill(true)
		wait, cancel := context.WithTimeout(ctx, redisserver.StartWait)
		defer cancel()
		select {
		case s = <-p.ready:
		case <-wait.Done():
			return "", func() {}
		}
	}
	return RedisEnv + "=" + s.URL(), func() { p.stop(s) }
}

// close kills every server not taken, and waits until every server the
// pool started is gone, those the runs took included.
func (p *redisPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for {
		select {
		case s := <-p.ready:
			p.stop(s)
		default:
			p.servers.Wait()
			return
		}
	}
}

package mutation

import (
	"context"
	"fmt"
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
	bin, dir string
	ready    chan *redisServer // started, not yet taken
	mu       sync.Mutex
	closed   bool
	started  int            // servers started or starting
	expected int            // runs the check expects
	servers  sync.WaitGroup // every server started, until it is stopped
}

type redisServer struct {
	addr string
	stop func()
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
	p := &redisPool{bin: bin, dir: dir, ready: make(chan *redisServer, runsAtOnce), expected: expected, started: 1}
	p.servers.Add(1)
	s, err := p.start(ctx)
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

// start starts one server; p.servers counts it already.
func (p *redisPool) start(ctx context.Context) (*redisServer, error) {
	srv, err := redisserver.Start(ctx, redisserver.Config{Bin: p.bin, Dir: p.dir, Confined: true})
	if err != nil {
		return nil, err
	}
	return &redisServer{addr: srv.Addr, stop: func() { go func() { srv.Stop(); p.servers.Done() }() }}, nil
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
		s, err := p.start(context.Background())
		if err != nil {
			p.servers.Done()
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.closed {
			s.stop()
			return
		}
		select {
		case p.ready <- s:
		default:
			s.stop() // more were started than runs wait: none needed
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
	var s *redisServer
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
	return fmt.Sprintf("%s=redis://%s/0", RedisEnv, s.addr), s.stop
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
			s.stop()
			continue
		default:
		}
		break
	}
	p.servers.Wait()
}

package mutation

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"quoteflowlab.dev/lab/internal/redisinfo"
	"quoteflowlab.dev/lab/internal/runner"
)

// RedisEnv is the variable that gives a run of the answer an empty
// database of its own on the check's redis-server (redis://127.0.0.1:PORT/N).
// An answer may use it instead of starting a server of its own; one that
// starts its own still works.
const RedisEnv = "LAB_REDIS_URL"

// redisDatabases is how many databases the check's server has: one per run
// (every build, every re-run, every --repeat); past that, a run gets none
// and its answer starts a server of its own.
const redisDatabases = 1000

// redisStartWait caps how long redis-server may take to answer PING.
const redisStartWait = 10 * time.Second

// sharedRedis is the one redis-server of a check. Each run gets a database
// no other run touches. The commands that reach past one database or stop
// the server (SHUTDOWN, FLUSHALL, SWAPDB, CONFIG, DEBUG, replication) are
// disabled, so no run can take the server away from the others.
type sharedRedis struct {
	addr string
	next atomic.Int64
	stop func()
}

// startRedis starts redis-server on a free loopback port, or returns nil
// and why not (no redis-server on PATH: each run's answer starts its own,
// or its stand-in, as without lab check).
func startRedis(ctx context.Context, dir string) (*sharedRedis, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil
	}
	for range 5 { // another program may take the free port before redis-server binds it
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := startRedisOn(ctx, bin, dir, port)
		if err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	return nil, fmt.Errorf("redis-server would not start on a free loopback port")
}

func startRedisOn(ctx context.Context, bin, dir string, port int) (*sharedRedis, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The pid file says which process the server that answers must be:
	// when another program's redis-server took the port since freePort,
	// this one exits unable to bind, and a PING alone would take the other
	// for it.
	pidFile := filepath.Join(dir, fmt.Sprintf("redis-%d-%d.pid", port, time.Now().UnixNano()))
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--databases", strconv.Itoa(redisDatabases), "--loglevel", "warning", "--pidfile", pidFile}
	for _, c := range []string{"SHUTDOWN", "FLUSHALL", "SWAPDB", "CONFIG", "DEBUG", "REPLICAOF", "SLAVEOF", "MODULE", "FAILOVER", "SAVE", "BGSAVE", "BGREWRITEAOF"} {
		args = append(args, "--rename-command", c, "")
	}
	sctx, cancel := context.WithCancel(context.Background())
	exited := make(chan runner.Result, 1)
	go func() { exited <- runner.Run(sctx, runner.Cmd{Name: bin, Args: args, Dir: dir}) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel() // runner.Run kills the server's whole process group
			<-exited
			os.Remove(pidFile)
		})
	}
	s := &sharedRedis{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), stop: stop}
	wctx, wcancel := context.WithTimeout(ctx, redisStartWait)
	defer wcancel()
	for {
		if ours(wctx, s.addr, pidFile) {
			return s, nil
		}
		select {
		case res := <-exited:
			exited <- res
			stop()
			return nil, fmt.Errorf("redis-server exited: %s", strings.TrimSpace(res.Output))
		case <-wctx.Done():
			stop()
			return nil, fmt.Errorf("redis-server did not answer PING within %s", redisStartWait)
		case <-time.After(10 * time.Millisecond): // another process's port: no event to wait on
		}
	}
}

// env is the setting for one run: a database no run had before; "" when
// they are used up.
func (s *sharedRedis) env() string {
	if s == nil {
		return ""
	}
	db := s.next.Add(1) - 1
	if db >= redisDatabases {
		return ""
	}
	return fmt.Sprintf("%s=redis://%s/%d", RedisEnv, s.addr, db)
}

func (s *sharedRedis) close() {
	if s != nil {
		s.stop()
	}
}

// ours reports whether the server at addr is the process whose pid
// pidFile holds.
func ours(ctx context.Context, addr, pidFile string) bool {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return false // not written yet
	}
	want, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return false
	}
	pid, err := redisinfo.PID(ctx, addr)
	return err == nil && pid == want
}

// freePort asks the kernel for a free loopback port (free when asked).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

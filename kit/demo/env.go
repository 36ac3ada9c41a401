package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/machine"
	"quoteflowlab.dev/kit/redisserver"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/provider"
)

// startTimeout caps the wait for a started process to say where it listens.
const startTimeout = 20 * time.Second

// Env is what one demo run started; Close stops all of it.
type Env struct {
	Root string // repository root
	Dir  string // scratch directory, removed by Close
	Log  io.Writer

	mu      sync.Mutex
	closers []func()
	bins    map[string]string

	// mon samples how busy the machine is (lab check's monitor), and
	// starved how long this process's threads waited for a CPU (what
	// lab check measures of an answer: here the provider labs and the
	// demos' clients run in this process), both since the last build
	// ended: the builds are not the experiment.
	mon     *machine.Monitor
	mark    atomic.Int64
	starved atomic.Pointer[func() (float64, time.Duration)]
}

// scratchPrefix starts the name of every scratch directory, then the
// pid of the program that made it: lab-demo-p<PID>-<random>.
const scratchPrefix = "lab-demo-"

// NewEnv makes an Env with a scratch directory (ScratchDir).
func NewEnv(root string, log io.Writer) (*Env, error) {
	dir, err := ScratchDir()
	if err != nil {
		return nil, err
	}
	e := &Env{Root: root, Dir: dir, Log: log, bins: map[string]string{}, mon: machine.Start()}
	e.measureFromNow()
	return e, nil
}

// measureFromNow starts the machine's measures afresh.
func (e *Env) measureFromNow() {
	e.mark.Store(int64(e.mon.Mark()))
	w := runner.WatchStarvation(os.Getpid())
	if old := e.starved.Swap(&w); old != nil {
		(*old)()
	}
}

// Machine says how busy the machine was since the last build (the whole
// run when nothing was built), as lab check judges it: Busy when a 10 ms
// timer of this process fired late, or when its threads waited for a CPU
// a quarter of the time (MaxStarved).
func (e *Env) Machine() report.Machine {
	m := e.mon.Since(int(e.mark.Load()))
	if w := e.starved.Swap(nil); w != nil {
		starved, elapsed := (*w)()
		e.measureFromNow()
		m.MaxStarved = max(starved, 0)
		m.Busy = m.Busy || e.mon.HeldBack(starved, elapsed)
	}
	return m
}

// ScratchDir makes a scratch directory named after this process, after
// removing those that earlier runs left behind (a program killed outright
// cannot remove its own): a demo's, or the one lab runs a demo program from.
func ScratchDir() (string, error) {
	RemoveLeftovers(os.TempDir())
	return os.MkdirTemp("", fmt.Sprintf("%sp%d-", scratchPrefix, os.Getpid()))
}

// leftoverAge is how old a scratch directory whose maker is unknown (made
// before directories were named after their lab's pid) must be to be
// taken for a leftover: no demo runs that long.
const leftoverAge = 30 * time.Minute

// RemoveLeftovers removes the scratch directories in tmp whose program has
// ended, and returns how many it removed.
func RemoveLeftovers(tmp string) int {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0
	}
	n := 0
	for _, ent := range entries {
		rest, ok := strings.CutPrefix(ent.Name(), scratchPrefix)
		if !ok || !ent.IsDir() {
			continue
		}
		if p, _, ok := strings.Cut(rest, "-"); ok && strings.HasPrefix(p, "p") {
			pid, err := strconv.Atoi(p[1:])
			if err != nil || pid == os.Getpid() || runner.Alive(pid) {
				continue
			}
		} else if info, err := ent.Info(); err != nil || time.Since(info.ModTime()) < leftoverAge {
			continue
		}
		if os.RemoveAll(filepath.Join(tmp, ent.Name())) == nil {
			n++
		}
	}
	return n
}

func (e *Env) onClose(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closers = append(e.closers, f)
}

// Close stops everything started, newest first, and removes the scratch directory.
func (e *Env) Close() {
	e.mu.Lock()
	cs := e.closers
	e.closers = nil
	e.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
	os.RemoveAll(e.Dir)
	if e.mon != nil {
		e.mon.Stop()
		e.mon = nil
	}
	if w := e.starved.Swap(nil); w != nil {
		(*w)()
	}
}

// Provider starts a provider lab in this process on a free port.
func (e *Env) Provider() (*provider.Server, error) { return e.ProviderScaled(1) }

// ProviderScaled starts a provider lab whose latencies are scaled by scale,
// seeded as `lab provider` is by default.
func (e *Env) ProviderScaled(scale float64) (*provider.Server, error) {
	return e.ProviderWith(provider.Options{LatencyScale: scale, Seed: provider.DefaultSeed})
}

// ProviderWith starts a provider lab with opts in this process on a free port.
func (e *Env) ProviderWith(opts provider.Options) (*provider.Server, error) {
	srv, err := provider.Start(opts, "127.0.0.1:0", "")
	if err != nil {
		return nil, err
	}
	e.onClose(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv, nil
}

// Build builds checkpoints/NN's quoteflow command, with the mutant named
// (from lessons/NN/checks) applied as an overlay when mutant is not "".
func (e *Env) Build(ctx context.Context, lesson int, mutant string) (string, error) {
	key := strconv.Itoa(lesson) + "/" + mutant
	if bin, ok := e.bins[key]; ok {
		return bin, nil
	}
	l, err := course.Find(e.Root, strconv.Itoa(lesson))
	if errors.Is(err, course.ErrUnknownExercise) && mutant == "" {
		l = course.Lesson{Number: lesson} // a checkpoint whose lesson has no exercise yet
	} else if err != nil {
		return "", err
	}
	overlay := ""
	if mutant != "" {
		v, err := check.Find(e.Root, l, check.All, mutant)
		if err != nil {
			return "", fmt.Errorf("%s: %w", l.Checks(), err)
		}
		if overlay, err = check.WriteOverlay(e.Root, filepath.Join(e.Dir, "overlay-"+mutant), v); err != nil {
			return "", err
		}
	}
	name := "quoteflow" + strconv.Itoa(lesson)
	if mutant != "" {
		name += "-" + mutant
	}
	bin := filepath.Join(e.Dir, "bin", runner.Exe(name))
	fmt.Fprintf(e.Log, "building %s/cmd/quoteflow%s\n", l.Checkpoint(), map[bool]string{true: " with the mutant " + mutant}[mutant != ""])
	res := runner.Build(ctx, filepath.Join(e.Root, filepath.FromSlash(l.Checkpoint())), overlay, bin, "./cmd/quoteflow")
	if !res.OK() {
		if res.Err != nil {
			return "", res.Err
		}
		return "", fmt.Errorf("go build %s: %s", l.Checkpoint(), strings.TrimSpace(res.Output))
	}
	e.bins[key] = bin
	e.measureFromNow()
	return bin, nil
}

// A Proc is a started QuoteFlow process.
type Proc struct {
	URL   string
	First string // its first line
	cmd   *exec.Cmd
	done  chan struct{}
	once  sync.Once
}

// Kill kills the process with its whole group (kill -9) and waits for it.
func (p *Proc) Kill() {
	p.once.Do(func() {
		runner.KillGroup(p.cmd)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	})
}

// Quoteflow starts bin (a quoteflow build) on a free port against the
// provider at providerURL, with extra flags, and waits (capped) for the
// line that says where it listens.
func (e *Env) Quoteflow(ctx context.Context, bin, providerURL string, extra ...string) (*Proc, error) {
	data, err := os.MkdirTemp(e.Dir, "data-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"--addr", "127.0.0.1:0", "--provider", providerURL, "--data", data}, extra...)
	cmd := exec.Command(bin, args...)
	runner.SetGroup(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(e.Dir, filepath.Base(data)+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	if err := runner.Start(cmd); err != nil {
		logf.Close()
		return nil, err
	}
	p := &Proc{cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(p.done) }()
	e.onClose(p.Kill)
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case line, ok := <-lines:
		const prefix = "quoteflow listening on "
		if !ok || !strings.HasPrefix(line, prefix) {
			p.Kill()
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("%s did not start: %q %s", filepath.Base(bin), line, strings.TrimSpace(string(log)))
		}
		p.First = line
		rest := strings.TrimPrefix(line, prefix)
		p.URL, _, _ = strings.Cut(rest, " ")
		return p, nil
	case <-timer.C:
		p.Kill()
		return nil, fmt.Errorf("%s did not say where it listens within %s", filepath.Base(bin), startTimeout)
	case <-ctx.Done():
		p.Kill()
		return nil, ctx.Err()
	}
}

// A Redis is a redis-server (or the embedded stand-in) on a loopback port.
type Redis struct {
	Addr string
	Real bool // a real redis-server, not the stand-in
	srv  *redisserver.Server
	mini *miniredis.Miniredis
}

// URL is its redis:// URL.
func (r *Redis) URL() string { return "redis://" + r.Addr + "/0" }

// Redis starts redis-server on a free port (no persistence), or the
// embedded stand-in when there is no redis-server on PATH.
func (e *Env) Redis(ctx context.Context) (*Redis, error) {
	r := &Redis{}
	srv, err := redisserver.Start(ctx, redisserver.Config{Dir: e.Dir})
	switch {
	case err == nil:
		r.Addr, r.Real, r.srv = srv.Addr, true, srv
	case errors.Is(err, redisserver.ErrNotInstalled):
		port, err := redisserver.FreePort()
		if err != nil {
			return nil, err
		}
		r.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err := r.Start(ctx); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	e.onClose(r.Stop)
	return r, nil
}

// Start starts the server again on its address, empty, after Stop.
func (r *Redis) Start(ctx context.Context) error {
	if r.Real {
		return r.srv.Restart(ctx)
	}
	r.mini = miniredis.NewMiniRedis()
	r.mini.ClockTTL(true)
	return r.mini.StartAddr(r.Addr)
}

// Stop kills the server (kill -9 for the real one: nothing kept).
func (r *Redis) Stop() {
	if r.srv != nil {
		r.srv.Stop()
	}
	if r.mini != nil {
		r.mini.Close()
		r.mini = nil
	}
}

package quota_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/17/quota"
)

// These tests give every waiter a Poll of a minute: a caller that found the
// quota full and merely tried again later would sleep 30 to 90 s. Each
// waits a few seconds at most, so a waiter gets its slot only if something
// wakes it: the release, or the expiry of the lease it waits for.
const noPoll = time.Minute

// scriptsSeen is a Redis client that says when each script run has
// returned: a test then knows a caller of Acquire has tried once and is
// in line.
type scriptsSeen struct {
	*redis.Client
	runs chan struct{}
}

func (c scriptsSeen) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	cmd := c.Client.EvalSha(ctx, sha, keys, args...)
	select {
	case c.runs <- struct{}{}:
	default:
	}
	return cmd
}

// watched returns a quota (a process of its own) whose script runs the test
// can see.
func watched(t *testing.T, url string, cfg quota.RedisConfig) (*quota.Redis, chan struct{}) {
	t.Helper()
	c := scriptsSeen{Client: client(t, url), runs: make(chan struct{}, 1)}
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = time.Second
	}
	q, err := quota.NewRedis(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Close)
	return q, c.runs
}

// inLine starts q.Acquire in the background and returns once its first try
// has come back (refused: it is in line), with the channel its result comes
// on and when that try returned.
func inLine(t *testing.T, q *quota.Redis, runs chan struct{}, ctx context.Context) (<-chan error, time.Time) {
	t.Helper()
	for len(runs) > 0 { // a run before this Acquire (NewRedis's, a Release's)
		<-runs
	}
	got := make(chan error, 1)
	go func() { got <- q.Acquire(ctx) }()
	select {
	case <-runs:
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter made no try within 5 s")
	}
	select {
	case err := <-got:
		t.Fatalf("Acquire of a full quota returned at once: %v", err)
	default:
	}
	return got, time.Now()
}

// A slot given back in one process wakes the caller waiting for it in
// another at once: not at its next try, a poll later.
func TestAReleaseWakesTheWaiter(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	cfg := quota.RedisConfig{Limit: 1, Poll: noPoll}
	holder := processes(t, s.URL(), 1, cfg)[0]
	release := holdN(t, holder, 1)
	waiter, runs := watched(t, s.URL(), cfg)
	got, _ := inLine(t, waiter, runs, capped(t))

	released := time.Now()
	release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the waiter's Acquire: %v", err)
		}
		// Generous: a loaded machine; a waiter that polls would sleep 30 s.
		if took := time.Since(released); took > 2*time.Second {
			t.Errorf("the waiter got the slot %s after the release, want at once (well under 2 s)", took)
		}
		waiter.Release()
	case <-time.After(4 * time.Second):
		t.Fatal("the waiter got no slot within 4 s of a release: it sleeps until its next try instead of being woken")
	}
}

// A process killed holding every slot wakes no one: the lease's expiry on
// Redis's clock does. A waiter gets a slot within the TTL (+20%) of the
// kill, though it would not try again for 30 s, and not before the expiry;
// and that slot counts: with it held, the limit of 2 admits one more, not two.
func TestAnExpiredLeaseWakesTheWaiter(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	const ttl = time.Second
	cfg := quota.RedisConfig{Limit: 2, TTL: ttl, Poll: noPoll}
	dead := processes(t, s.URL(), 1, cfg)[0]
	holdN(t, dead, 2) // never released
	dead.Close()      // "kill -9": no more renewals, no release
	killed := time.Now()
	waiter, runs := watched(t, s.URL(), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, _ := inLine(t, waiter, runs, ctx)
	if err := <-got; err != nil {
		t.Fatalf("the waiter got no slot within 5 s of the kill (TTL %s): %v", ttl, err)
	}
	took := time.Since(killed)
	other := processes(t, s.URL(), 1, quota.RedisConfig{Limit: 2, TTL: ttl})[0]
	release := holdN(t, other, 1) // the dead process's second slot
	if tryAcquire(t, other, 300*time.Millisecond) {
		t.Error("a third call was admitted with a limit of 2: the slot the waiter got was not counted")
	}
	release()
	waiter.Release()
	if took > ttl*12/10 {
		t.Errorf("the waiter got a slot %s after the kill, want within the TTL + 20%% (%s)", took, ttl*12/10)
	}
	if took < ttl/2 {
		t.Errorf("the waiter got a slot %s after the kill: the dead process's leases were freed early", took)
	}
}

// A process killed while one of its callers waits in line holds no slot
// past the TTL either: a slot given back half a TTL after the kill goes to
// the first in line, the dead caller, and its lease expires with the place
// its process no longer renews, not a TTL after the grant. The caller behind
// it, in a live process, has the slot within the TTL (+20%) of the kill.
func TestAKilledProcessWaiterHoldsNoSlotPastTheTTL(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	const ttl = time.Second
	cfg := quota.RedisConfig{Limit: 1, TTL: ttl, Poll: noPoll}
	holder := processes(t, s.URL(), 1, cfg)[0]
	release := holdN(t, holder, 1)
	dead, deadRuns := watched(t, s.URL(), cfg)
	inLine(t, dead, deadRuns, capped(t)) // first in line
	time.Sleep(ttl / 2)                  // its process has renewed its place: it is live, not fresh
	live, liveRuns := watched(t, s.URL(), cfg)
	got, _ := inLine(t, live, liveRuns, capped(t)) // second
	dead.Close()                                   // "kill -9": no more renewals, no wake-ups
	killed := time.Now()
	time.Sleep(ttl / 2)
	release() // the slot goes to the dead caller, first in line
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the live waiter: %v", err)
		}
		live.Release()
	case <-time.After(4 * time.Second):
		t.Fatal("the live waiter got no slot within 4 s of the kill (TTL 1 s): the dead caller's place or lease outlived the TTL")
	}
	if took := time.Since(killed); took > ttl*12/10 {
		t.Errorf("the live waiter got the slot %s after the kill, want within the TTL + 20%% (%s)", took, ttl*12/10)
	}
}

// Callers waiting in line, in different processes, are served in the order
// they came: each slot given back goes to the first in line, never to one
// who came later, so no waiter is passed over again and again.
func TestWaitersAreServedInTheOrderTheyCame(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	cfg := quota.RedisConfig{Limit: 1, Poll: noPoll}
	holder := processes(t, s.URL(), 1, cfg)[0]
	holdN(t, holder, 1)
	ctx := capped(t)
	type waiting struct {
		q   *quota.Redis
		got <-chan error
	}
	var line []waiting
	for range 4 {
		q, runs := watched(t, s.URL(), cfg)
		got, _ := inLine(t, q, runs, ctx)
		line = append(line, waiting{q, got})
	}
	last := quota.Quota(holder)
	for i := range line {
		last.Release() // one slot free: it must go to waiter i
		select {
		case err := <-line[i].got:
			if err != nil {
				t.Fatalf("waiter %d: %v", i, err)
			}
		case <-time.After(4 * time.Second):
			for j := i + 1; j < len(line); j++ {
				select {
				case <-line[j].got:
					t.Fatalf("the slot given back went to waiter %d, who came after waiter %d", j, i)
				default:
				}
			}
			t.Fatalf("waiter %d, first in line, got no slot within 4 s of a release", i)
		}
		last = line[i].q
	}
	last.Release()
}

// A caller that gives up at its deadline while in line returns at the
// deadline and keeps nothing: not its place (the next slot would be granted
// to no one), not a lease granted as it left.
func TestACallerThatGivesUpInLineKeepsNothing(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	cfg := quota.RedisConfig{Limit: 1, TTL: 10 * time.Second, Poll: noPoll}
	qs := processes(t, s.URL(), 2, cfg)
	holder, other := qs[0], qs[1]
	release := holdN(t, holder, 1)
	waiter, runs := watched(t, s.URL(), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	got, _ := inLine(t, waiter, runs, ctx)
	select {
	case err := <-got:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Acquire in line past its deadline = %v, want context.DeadlineExceeded", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Acquire in line did not return within 3 s of its 300 ms deadline")
	}
	release()
	// The slot must be free for the other process now, not a TTL (10 s) later.
	if !tryAcquire(t, other, 3*time.Second) {
		t.Error("no slot free within 3 s of the release: the caller that gave up kept its place or a lease")
	}
	if n := waiter.Held(); n != 0 {
		t.Errorf("the caller that gave up holds %d leases, want 0", n)
	}
}

// The rate quota's Wait sleeps until the moment the script names and no
// later: the second call of a rate of 1 per 400 ms gets in 400 ms after the
// first, not a poll after that.
func TestRedisWaitSleepsUntilTheRoomComes(t *testing.T) {
	t.Parallel()
	s := startRedis(t)
	const per = 400 * time.Millisecond
	qs := processes(t, s.URL(), 2, quota.RedisConfig{Rate: quota.Rate{N: 1, Per: per}, Poll: noPoll})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	first := time.Now()
	if err := qs[0].Wait(ctx, "boreal"); err != nil {
		t.Fatal(err)
	}
	if err := qs[1].Wait(ctx, "boreal"); err != nil {
		t.Fatalf("the second call: %v", err)
	}
	took := time.Since(first)
	if took < per-5*time.Millisecond { // Redis's clock and ours may differ by a hair
		t.Errorf("the second call got in %s after the first, before the window of %s had passed", took, per)
	}
	// Generous: a loaded machine; a waiter that added a poll would take 8 s more.
	if took > per+1500*time.Millisecond {
		t.Errorf("the second call got in %s after the first, want soon after the window of %s", took, per)
	}
}

// capped is a context that ends 5 s from now: every wait in these tests is capped.
func capped(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

package quota

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Defaults for the zero fields of RedisConfig.
const (
	DefaultPrefix    = "quoteflow"
	DefaultLimit     = 6
	DefaultTTL       = 2 * time.Second
	DefaultPoll      = 250 * time.Millisecond
	DefaultOpTimeout = 250 * time.Millisecond
)

// RedisConfig holds a Redis quota's settings; a zero field takes its default.
// Every process sharing a quota must use the same Prefix, Limit, TTL and Rate.
type RedisConfig struct {
	Prefix    string        // keys are "{Prefix}:…" (one hash slot, so a cluster keeps them together)
	Limit     int           // concurrent calls for all processes together
	TTL       time.Duration // a lease not renewed for this long expires; renewed every TTL/3
	Rate      Rate          // per key (supplier); the zero Rate: none
	Poll      time.Duration // a waiter not woken tries again after this (jittered ±50%): a lost wake-up costs no more
	OpTimeout time.Duration // one round trip to Redis; slower is ErrUnavailable
}

// Redis is a quota shared through a Redis server by every process that uses
// the same keys. Each admitted call holds a lease: a member of a sorted set
// whose score is its expiry on Redis's clock. A call renews its lease while
// it runs; a process that dies stops renewing, and its leases expire within
// the TTL, so no slot is lost for good.
//
// A caller that finds the quota full waits in line, in Redis, and sleeps: the
// release (or renewal, or try) that frees a slot gives it to the first in
// line and wakes that caller through a channel its process listens to
// (grantLua in scripts.go). It tries again by itself only when the first
// lease would expire, and every Poll as a safety net. TryAcquire (a hedge)
// never passes a caller waiting in line, in any process.
//
// When Redis cannot be reached, Acquire and Wait fail with ErrUnavailable
// (closed, never open); the next call after Redis is back succeeds again.
// Redis is safe for concurrent use. Close stops the renewals.
type Redis struct {
	rdb       Client
	limit     int
	ttl       time.Duration
	rate      Rate
	poll      time.Duration
	opTimeout time.Duration
	prefix    string
	leases    string        // sorted set of leases
	waiting   string        // sorted set of places in line, by expiry (acquireScript): hedges respect it
	line      string        // sorted set of the same callers, in the order they came
	wake      *redis.PubSub // this process's wake-ups: ids granted a lease while they waited
	epoch     string        // which incarnation of the store (scripts.go)
	owner     string        // random, names this process's leases
	seq       atomic.Uint64

	mu      sync.Mutex
	held    map[string]struct{}      // leases this process holds
	waiters map[string]chan struct{} // callers of Acquire waiting in line, by the id they wait for
	seen    string                   // the epoch last seen
	closed  bool

	rmu      sync.Mutex  // guards the rate calls' round trips (allow)
	rsending bool        // a round trip of rate calls is under way
	rqueue   []*rateCall // calls that go in the next
	rclosed  bool        // Close has begun: no more sendRates
	rates    sync.WaitGroup

	renewing sync.Mutex     // held while a renewal runs: a release's removal waits for it (Release)
	releases sync.WaitGroup // lease removals under way (Release); Close waits for them
	giving   []string       // ids to give back (Release, leaveLine), under mu; giveBack sends them
	sending  bool           // a giveBack runs, under mu: it also sends the ids given meanwhile
	stop     chan struct{}
	stopped  chan struct{}
	woke     chan struct{} // closed when wakeLoop has ended
	lost     atomic.Int64  // renewals that found no room (see Lost)
}

// Client is what a Redis quota needs of a go-redis client; *redis.Client
// and *redis.ClusterClient have it.
type Client interface {
	redis.Scripter
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	HGet(ctx context.Context, key, field string) *redis.StringCmd
}

// NewRedis returns a quota kept in the Redis server behind rdb and starts
// renewing its leases; Close stops that. rdb stays the caller's to close,
// after Close. Use NewClient for a client with the timeouts a quota needs.
func NewRedis(rdb Client, cfg RedisConfig) (*Redis, error) {
	if cfg.Limit < 0 || cfg.TTL < 0 || cfg.Poll < 0 || cfg.OpTimeout < 0 {
		return nil, errors.New("quota: Limit, TTL, Poll and OpTimeout must not be negative")
	}
	if err := cfg.Rate.validate(); err != nil {
		return nil, err
	}
	ttl := cmp.Or(cfg.TTL, DefaultTTL)
	if ttl < 30*time.Millisecond {
		return nil, errors.New("quota: TTL must be at least 30ms")
	}
	prefix := "{" + cmp.Or(cfg.Prefix, DefaultPrefix) + "}:"
	q := &Redis{
		rdb:       rdb,
		limit:     cmp.Or(cfg.Limit, DefaultLimit),
		ttl:       ttl,
		rate:      cfg.Rate,
		poll:      cmp.Or(cfg.Poll, DefaultPoll),
		opTimeout: cmp.Or(cfg.OpTimeout, DefaultOpTimeout),
		prefix:    prefix,
		leases:    prefix + "leases",
		waiting:   prefix + "waiting",
		line:      prefix + "line",
		epoch:     prefix + "epoch",
		owner:     randomID(),
		held:      map[string]struct{}{},
		waiters:   map[string]chan struct{}{},
		stop:      make(chan struct{}),
		stopped:   make(chan struct{}),
		woke:      make(chan struct{}),
	}
	q.subscribe()
	q.learnEpoch()
	go q.renewLoop()
	go q.wakeLoop()
	return q, nil
}

// learnEpoch reads which incarnation of the store this is, if there is one
// and Redis answers: a process that knows it can tell, later, that the store
// restarted empty (acquireScript). Best effort; never creates the epoch.
func (q *Redis) learnEpoch() {
	ctx, cancel := context.WithTimeout(context.Background(), q.opTimeout)
	defer cancel()
	epoch, err := q.rdb.HGet(ctx, q.epoch, "id").Result()
	if err != nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.seen == "" {
		q.seen = epoch
	}
}

// NewClient returns a go-redis client for url ("redis://127.0.0.1:6379/0")
// set up for a quota: every command honours its context, a dead server is
// noticed within a few hundred milliseconds, and a dropped connection is
// retried (the scripts are safe to run twice).
func NewClient(url string) (*redis.Client, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("quota: Redis URL %q: %w", url, err)
	}
	opt.ContextTimeoutEnabled = true
	opt.DialTimeout = DefaultOpTimeout
	opt.DialerRetries = 1
	opt.ReadTimeout = 2 * DefaultOpTimeout
	opt.WriteTimeout = 2 * DefaultOpTimeout
	opt.MaxRetries = 2
	opt.MinRetryBackoff = 5 * time.Millisecond
	opt.MaxRetryBackoff = 50 * time.Millisecond
	opt.DisableIdentity = true
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return redis.NewClient(opt), nil
}

// Acquire takes a lease (see Quota). While the quota is full it waits in
// line until a slot is granted to it, or ctx ends; waiting in line is paid
// from ctx's deadline like the call itself. It sleeps until it is woken,
// until the first lease would expire (its process may have died), or for
// a jittered Poll at most, then tries again. The lease is renewed until
// Release. While it waits it holds a place in line, in Redis, that every
// process's TryAcquire respects: a hedge never takes the slot it is waiting
// for.
func (q *Redis) Acquire(ctx context.Context) error {
	id := q.newID()
	woken := q.expect(id) // before the first try: a grant may come before its answer
	defer q.forget(id)
	for n := 0; ; n++ {
		ok, retry, err := q.tryAcquire(ctx, id, true)
		if err != nil || ok {
			// Once in line (a refused try before), or when the caller gave up
			// during a try that Redis may have run (and put it in line, where
			// a slot would be granted to a waiter who is gone), it leaves the
			// line. A first try that failed because Redis is down put nothing
			// there.
			if err != nil && (n > 0 || callerGone(ctx) != nil) {
				q.leaveLine(id)
			}
			return err
		}
		wait := jitter(q.poll)
		if retry > 0 {
			wait = min(wait, retry)
		}
		pause := time.NewTimer(wait)
		select {
		case <-woken: // granted: the lease is in Redis, renewed from now on
			pause.Stop()
			q.mu.Lock()
			q.held[id] = struct{}{}
			q.mu.Unlock()
			return nil
		case <-pause.C:
		case <-ctx.Done():
			pause.Stop()
			q.leaveLine(id) // and gives back a lease granted meanwhile
			return ctx.Err()
		}
	}
}

// TryAcquire takes a lease if the quota has room now and no caller of
// Acquire, in any process, is waiting in line for one (one round trip, no
// polling), and reports whether it did; the lease is renewed until Release.
func (q *Redis) TryAcquire(ctx context.Context) (bool, error) {
	ok, _, err := q.tryAcquire(ctx, q.newID(), false)
	return ok, err
}

// expect registers a caller of Acquire waiting for lease id: wakeLoop
// signals the channel when Redis grants it.
func (q *Redis) expect(id string) chan struct{} {
	ch := make(chan struct{}, 1)
	q.mu.Lock()
	q.waiters[id] = ch
	q.mu.Unlock()
	return ch
}

func (q *Redis) forget(id string) {
	q.mu.Lock()
	delete(q.waiters, id)
	q.mu.Unlock()
}

// subscribe listens on this process's wake channel, where grantLua
// publishes the id of each waiter of this process granted a lease. It waits
// for Redis to confirm, so that no wake-up sent after NewRedis is missed
// (best effort: if Redis is out of reach, wakeLoop subscribes again later,
// and until then a waiter finds its lease at its next try).
func (q *Redis) subscribe() {
	ctx, cancel := context.WithTimeout(context.Background(), q.opTimeout)
	defer cancel()
	q.wake = q.rdb.Subscribe(ctx, q.line+":"+q.owner)
	q.wake.Receive(ctx)
}

// wakeLoop reads this process's wake-ups, one connection for all its
// waiters, and wakes each waiter granted a lease. A lease granted to a
// caller no longer waiting (it gave up) is given back at once. A wake-up
// lost (the connection dropped) costs the waiter its next try, at most a
// jittered Poll later.
func (q *Redis) wakeLoop() {
	defer close(q.woke)
	for {
		msg, err := q.wake.ReceiveMessage(context.Background())
		select {
		case <-q.stop:
			return
		default:
		}
		if err != nil { // Redis out of reach: the waiters' own tries notice it
			t := time.NewTimer(jitter(q.poll))
			select {
			case <-q.stop:
				t.Stop()
				return
			case <-t.C:
			}
			continue
		}
		id := msg.Payload
		q.mu.Lock()
		ch, waiting := q.waiters[id]
		_, held := q.held[id]
		q.mu.Unlock()
		switch {
		case waiting:
			select {
			case ch <- struct{}{}:
			default:
			}
		case !held:
			q.leaveLine(id)
		}
	}
}

// leaveLine gives up the place in line of an Acquire that stopped waiting,
// and the lease if one was granted to it meanwhile, in the background like
// a release (its place would expire by itself, and such a lease with the
// TTL, but until then they would hold a slot for a caller who is gone).
func (q *Redis) leaveLine(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.giveLocked(id)
}

// giveLocked queues id to be given back, and starts giveBack unless one
// runs (it will send id too). The caller holds mu. After Close it does
// nothing: the lease, or the place, expires by itself within the TTL.
func (q *Redis) giveLocked(id string) {
	if q.closed {
		return
	}
	q.giving = append(q.giving, id)
	if q.sending {
		return
	}
	q.sending = true
	q.releases.Add(1) // before Close can wait: it sets closed under mu
	go q.giveBack()
}

// giveBack runs releaseScript for the ids queued to be given back, in one
// round trip, until none is left: the releases that come while one round
// trip is under way go together in the next, so under contention a
// release costs Redis and this process a fraction of a round trip. Each
// lease, or place in line, is given back and the free slots go to the first
// in line. It runs after any renewal in flight (which might otherwise add
// a lease back).
func (q *Redis) giveBack() {
	defer q.releases.Done()
	for {
		q.mu.Lock()
		ids := q.giving
		q.giving = nil
		if len(ids) == 0 {
			q.sending = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		q.renewing.Lock() // a renewal that read a lease before it left has ended
		q.renewing.Unlock()
		args := make([]any, 0, 2+len(ids))
		args = append(args, q.limit, q.ttl.Milliseconds())
		for _, id := range ids {
			args = append(args, id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), q.opTimeout)
		releaseScript.Run(ctx, q.rdb, []string{q.leases, q.epoch, q.waiting, q.line}, args...)
		cancel()
	}
}

// tryAcquire runs acquireScript once: one round trip, atomic. wait says the
// caller waits in line when refused (Acquire), and may not pass those who do
// when it does not (TryAcquire). When refused it says how long until the
// caller should try again if nothing wakes it.
func (q *Redis) tryAcquire(ctx context.Context, id string, wait bool) (bool, time.Duration, error) {
	q.mu.Lock()
	seen, closed := q.seen, q.closed
	q.mu.Unlock()
	if closed {
		return false, 0, fmt.Errorf("%w: the quota is closed", ErrUnavailable)
	}
	op, cancel := context.WithTimeout(ctx, q.opTimeout)
	defer cancel()
	mode := "try"
	if wait {
		mode = "wait"
	}
	res, err := acquireScript.Run(op, q.rdb, []string{q.leases, q.epoch, q.waiting, q.line},
		q.limit, q.ttl.Milliseconds(), id, seen, randomID(), q.placeInLine().Milliseconds(), mode).Slice()
	if err != nil {
		return false, 0, q.unavailable(ctx, err)
	}
	admitted, epoch := res[0].(int64) == 1, res[1].(string)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seen = epoch
	if admitted {
		q.held[id] = struct{}{}
	}
	return admitted, time.Duration(res[3].(int64)) * time.Millisecond, nil
}

// placeInLine is how long a waiter's place in line lasts unless its try or
// its process's renewal (keepPlaces) pushes it on: a TTL, like a lease.
func (q *Redis) placeInLine() time.Duration { return q.ttl }

// keepPlaces renews the places in line of this process's waiters, with its
// leases every TTL/3: a caller may wait longer than a TTL, and a process
// that dies stops, so its places expire within the TTL, and a lease granted
// to one of them with it.
func (q *Redis) keepPlaces() {
	q.mu.Lock()
	args := []any{q.placeInLine().Milliseconds()}
	for id := range q.waiters {
		args = append(args, id)
	}
	q.mu.Unlock()
	if len(args) == 1 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.opTimeout)
	defer cancel()
	placesScript.Run(ctx, q.rdb, []string{q.waiting}, args...) // Redis out of reach: the next tick tries again
}

// Release gives back one of the leases this process holds (they are all
// alike); it panics when none is held. It waits for nothing: the lease
// leaves the held set at once, so no later renewal names it, and is removed
// from Redis in the background (giveBack: with the other releases of this
// process that come meanwhile, in one round trip), after any renewal in
// flight (which might otherwise add it back) and within OpTimeout; the slot
// goes to the first caller in line, if any, and wakes it. A stalled Redis,
// or a renewal stuck in one, never delays the caller's answer. If Redis
// cannot be reached, or after Close, the lease expires by itself within
// the TTL.
func (q *Redis) Release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	var id string
	for id = range q.held {
		break
	}
	if id == "" {
		panic("quota: Release without a matching Acquire")
	}
	delete(q.held, id)
	q.giveLocked(id)
}

// renewLoop renews every held lease every TTL/3, in one round trip.
func (q *Redis) renewLoop() {
	defer close(q.stopped)
	tick := time.NewTicker(q.ttl / 3)
	defer tick.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-tick.C:
			q.renew()
			q.keepPlaces()
			q.mu.Lock()
			unknown := q.seen == ""
			q.mu.Unlock()
			if unknown {
				q.learnEpoch()
			}
		}
	}
}

func (q *Redis) renew() {
	q.renewing.Lock()
	defer q.renewing.Unlock()
	q.mu.Lock()
	args := []any{q.limit, q.ttl.Milliseconds(), q.seen, randomID()}
	for id := range q.held {
		args = append(args, id)
	}
	q.mu.Unlock()
	if len(args) == 4 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.opTimeout)
	defer cancel()
	res, err := renewScript.Run(ctx, q.rdb, []string{q.leases, q.epoch, q.waiting, q.line}, args...).Slice()
	if err != nil {
		return // Redis out of reach: the next tick tries again
	}
	q.mu.Lock()
	q.seen = res[0].(string)
	q.mu.Unlock()
	q.lost.Add(res[1].(int64))
}

// Wait admits one call to key within the rate (see Quota). With the zero
// Rate it returns nil at once.
func (q *Redis) Wait(ctx context.Context, key string) error { return q.WaitN(ctx, key, 1) }

// WaitN admits one call of cost to key within the rate (see Quota): one
// script both weighs the window and adds the call.
func (q *Redis) WaitN(ctx context.Context, key string, cost int) error {
	if q.rate.Unlimited() {
		return nil
	}
	for {
		ok, wait, err := q.allow(ctx, key, cost)
		if err != nil || ok {
			return err
		}
		if wait < 0 || !fits(ctx, wait) {
			return ErrRateLimited
		}
		// Until the moment the script named: then there is room, unless
		// another caller took it first.
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Allow runs the rate script once for key: ok, or how long until a call
// could fit. It is Wait without the waiting.
func (q *Redis) Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error) {
	if q.rate.Unlimited() {
		return true, 0, nil
	}
	return q.allow(ctx, key, 1)
}

// rateCall is a call to be counted by the rate script, queued while
// another round trip is under way (allow).
type rateCall struct {
	key    string
	cost   int
	answer chan rateAnswer // buffered: whoever sends never waits for the caller
}

// errClosed answers the rate calls queued when Close has begun.
var errClosed = errors.New("the quota is closed")

// rateAnswer is the script's answer for one call (µs to wait, 0: admitted),
// or the round trip's error.
type rateAnswer struct {
	us  int64
	err error
}

// allow runs the rate script for a call of cost: ok, or how long until it
// could fit (negative: never, its cost is more than the rate). A call that
// finds no round trip of this process's rate calls under way makes its own,
// bounded by ctx and OpTimeout. One that comes while one is under way waits
// for it to end and goes with every other call queued meanwhile in the
// next, one round trip for them all (sendRates): under load, a call costs
// this process and Redis a share of a round trip. It waits for that answer
// until ctx ends; a call given up on may still be counted (less is
// admitted, never more).
func (q *Redis) allow(ctx context.Context, key string, cost int) (bool, time.Duration, error) {
	if cost < 1 {
		cost = 1
	}
	key = q.prefix + "rate:" + key
	q.rmu.Lock()
	if q.rsending {
		c := &rateCall{key: key, cost: cost, answer: make(chan rateAnswer, 1)}
		q.rqueue = append(q.rqueue, c)
		q.rmu.Unlock()
		select {
		case a := <-c.answer:
			return q.rateAnswer(ctx, a)
		case <-ctx.Done():
			return false, 0, ctx.Err()
		}
	}
	q.rsending = true
	q.rmu.Unlock()
	op, cancel := context.WithTimeout(ctx, q.opTimeout)
	us, err := q.runRates(op, []string{key}, cost)
	cancel()
	q.sendQueued()
	a := rateAnswer{err: err}
	if err == nil {
		a.us = us[0]
	}
	return q.rateAnswer(ctx, a)
}

func (q *Redis) rateAnswer(ctx context.Context, a rateAnswer) (bool, time.Duration, error) {
	if a.err != nil {
		return false, 0, q.unavailable(ctx, a.err)
	}
	return a.us == 0, time.Duration(a.us) * time.Microsecond, nil
}

// runRates runs the rate script once for calls to keys, of costs.
func (q *Redis) runRates(ctx context.Context, keys []string, costs ...int) ([]int64, error) {
	args := make([]any, 2, 2+len(costs))
	args[0], args[1] = q.rate.N, q.rate.Per.Microseconds()
	for _, c := range costs {
		args = append(args, c)
	}
	us, err := rateScript.Run(ctx, q.rdb, keys, args...).Int64Slice()
	if err == nil && len(us) != len(keys) {
		err = fmt.Errorf("the rate script answered %d calls of %d", len(us), len(keys))
	}
	return us, err
}

// sendQueued ends this process's round trip of rate calls: the calls
// queued meanwhile go together in one more (sendRates), or, if none is,
// the next call makes its own.
func (q *Redis) sendQueued() {
	q.rmu.Lock()
	defer q.rmu.Unlock()
	if len(q.rqueue) == 0 {
		q.rsending = false
		return
	}
	calls := q.rqueue
	q.rqueue = nil
	if q.rclosed { // Close waits for no more sendRates
		q.rsending = false
		for _, c := range calls {
			c.answer <- rateAnswer{err: errClosed}
		}
		return
	}
	q.rates.Add(1) // under rmu, before Close sets rclosed and waits
	go q.sendRates(calls)
}

// sendRates runs the rate script for calls, one round trip bounded by
// OpTimeout, gives each its answer, and goes on with the calls queued
// meanwhile until none is left. After Close it answers them ErrUnavailable.
func (q *Redis) sendRates(calls []*rateCall) {
	defer q.rates.Done()
	for {
		var us []int64
		err := errClosed
		q.rmu.Lock()
		closed := q.rclosed
		q.rmu.Unlock()
		if !closed {
			keys := make([]string, len(calls))
			costs := make([]int, len(calls))
			for i, c := range calls {
				keys[i], costs[i] = c.key, c.cost
			}
			ctx, cancel := context.WithTimeout(context.Background(), q.opTimeout)
			us, err = q.runRates(ctx, keys, costs...)
			cancel()
		}
		for i, c := range calls {
			a := rateAnswer{err: err}
			if err == nil {
				a.us = us[i]
			}
			c.answer <- a
		}
		q.rmu.Lock()
		calls = q.rqueue
		q.rqueue = nil
		if len(calls) == 0 {
			q.rsending = false
			q.rmu.Unlock()
			return
		}
		q.rmu.Unlock()
	}
}

// Held is the number of leases this process holds now.
func (q *Redis) Held() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.held)
}

// Lost counts renewals that found the lease gone and no room to add it back
// (the store lost it while more calls than the limit were admitted).
func (q *Redis) Lost() int64 { return q.lost.Load() }

// Close stops renewing. Leases still held are not released: they expire
// within the TTL, exactly as if the process had died. Acquire after Close
// fails with ErrUnavailable. Close does not close the Redis client.
func (q *Redis) Close() {
	q.mu.Lock()
	already := q.closed
	q.closed = true
	q.mu.Unlock()
	if !already {
		close(q.stop)
		q.wake.Close() // ends wakeLoop's read
	}
	<-q.stopped
	<-q.woke
	q.releases.Wait()
	q.rmu.Lock()
	q.rclosed = true
	q.rmu.Unlock()
	q.rates.Wait()
}

// unavailable classifies a failed round trip: the caller's own deadline or
// cancellation is reported as ctx's error, anything else as ErrUnavailable.
func (q *Redis) unavailable(ctx context.Context, err error) error {
	if ctxErr := callerGone(ctx); ctxErr != nil {
		return ctxErr
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// callerGone is ctx's error, or context.DeadlineExceeded once its deadline
// has passed even if ctx does not say so yet: go-redis gives the socket
// ctx's deadline, and the network may report its timeout an instant before
// ctx's own timer fires. Such a timeout is the caller's, not the store's.
func callerGone(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

func (q *Redis) newID() string {
	return q.owner + ":" + strconv.FormatUint(q.seq.Add(1), 36)
}

func randomID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

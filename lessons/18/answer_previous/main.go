// Command answer_previous is the reference answer to exercise E17 (lesson 17):
// three processes, one quota, kept in Redis.
//
//	go run ./lessons/18/answer_previous
//
// Under lab check it runs on the empty redis-server the check starts for
// each run (LAB_REDIS_URL); run by hand, it
// starts its own redis-server on a free loopback port (no persistence
// files, killed with its process group at the end; see redis.go). Each
// "process" is what a QuoteFlow process holds: its own go-redis client and
// its own quota.Redis on the shared server, so Redis cannot tell them from
// three programs. The witnesses are a gauge of the slots held at once and a
// fake provider (an http.RoundTripper) that counts the calls in flight.
//
//  1. One limit for three: three services on the shared quota, each with 8
//     quotes at once (72 supplier calls, 40 ms each), put exactly 6 calls
//     at the suppliers, never 7; and 36 goroutines hammering the quota from
//     three processes never hold more than 6 slots, and do hold 6. A
//     per-process limit shows 18; a check and an add in two round trips let
//     a seventh in under contention.
//  2. A killed process gives its slots back by itself: one process takes all
//     6 slots and dies without releasing (Close: no more renewals, as after
//     kill -9), right away (fresh leases) and after a renewal. Within the
//     TTL + 20% the other two hold 6 again; leases living 1.5 TTLs miss it.
//  3. Fail closed: with Redis gone (every connection cut by a proxy of its
//     own between the processes and Redis), Acquire and Wait fail at once with
//     quota.ErrUnavailable, and a service quote reports quota_unavailable for
//     every supplier with zero supplier calls. Redis back (empty), the same
//     processes are admitted again without a restart.
//  4. The rate quota: three processes sharing 5 per 250 ms never return more
//     than 5 admissions within 150 ms.
//  5. The compensation queue on Redis Streams: a consumer killed in the
//     middle of a queued line's supplier call (its context cancelled: no
//     more Redis commands, as after kill -9) loses nothing; another consumer
//     takes the job after the visibility timeout and the line completes,
//     with one successful supplier call. And a live, slow consumer keeps its
//     job: another consumer polling meanwhile takes nothing, so the supplier
//     is called once.
//
// Bonus checks:
//
//  6. Renewal: one process holds all 6 slots for 2 TTLs; nobody else is
//     admitted meanwhile.
//  7. One clock: on an embedded stand-in whose clock runs an hour ahead of
//     this machine's (a real server's clock cannot be moved), the same: a
//     renewal stamped with the process's own clock would write an expiry an
//     hour in the past.
//
// The checks run at once, each on keys of its own (a quota prefix, or the
// queue's), and the first failure ends the run; every wait is bounded
// (contexts of a few seconds) and the run takes about 2.5 s, the queue
// check's visibility timeouts. Timing bounds leave room for a busy machine:
// "within the TTL + 20%" is 720 ms for a 600 ms TTL that a lease that never
// expires misses for good, and peak counts are read from witnesses, never
// from the clock.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/17/queue"
	"quoteflowlab.dev/checkpoints/17/quota"
	"quoteflowlab.dev/checkpoints/17/quoteflow"
)

const limit = 6 // the shared quota of every check

func main() {
	redis.SetLogger(quiet{}) // the connection is cut on purpose in check 3
	url, stop, err := redisURL()
	if err != nil {
		fmt.Fprintln(os.Stderr, "E17 failed:", err)
		os.Exit(1)
	}
	code := run(url)
	stop()
	os.Exit(code)
}

// run runs the checks at once, each on keys of its own (its own quota
// prefix), and stops at the first failure: main then stops the server and
// exits, which ends the checks still running.
func run(url string) int {
	checks := []struct {
		name string
		run  func(url, prefix string) error
	}{
		{"one limit for three processes", oneLimitForThree},
		{"killed process", aKilledProcessGivesItsSlotsBack},
		{"fail closed", failClosedAndRecover},
		{"rate quota", theRateHoldsAcrossProcesses},
		{"Streams queue", aKilledConsumerLosesNoJob},
		{"renewal", longCallsKeepTheirSlots},
		{"one clock", renewalsUseRedisClock},
	}
	type result struct {
		name string
		err  error
	}
	results := make(chan result, len(checks))
	for i, c := range checks {
		go func() { results <- result{c.name, c.run(url, fmt.Sprintf("e17-check%d", i+1))} }()
	}
	for range checks {
		if r := <-results; r.err != nil {
			fmt.Fprintf(os.Stderr, "E17 failed (%s): %v\n", r.name, r.err)
			return 1
		}
	}
	fmt.Println("E17 passed: three processes on one Redis quota peaked at exactly 6 calls at the suppliers " +
		"(and 6 slots held under contention, never 7); a killed process's leases expired within the TTL + 20%; " +
		"with Redis down every call failed closed (quota_unavailable, no supplier call) and the quota recovered " +
		"when Redis came back; the shared rate held across processes; a consumer killed holding a queued job lost nothing " +
		"(another took it after the visibility timeout, one supplier answer) and a live one kept its job; " +
		"long calls kept their slots by renewal; " +
		"expiries follow Redis's clock")
	return 0
}

// processes returns n quotas on url, each with its own client: n processes.
// closeAll closes them all (a closed quota is a killed process). A round trip
// may take up to patience (the default is 250 ms).
func processes(url string, n int, cfg quota.RedisConfig) (qs []*quota.Redis, closeAll func(), err error) {
	cfg.OpTimeout = patience
	var clients []*redis.Client
	closeAll = func() {
		for _, q := range qs {
			q.Close()
		}
		for _, c := range clients {
			c.Close()
		}
	}
	for range n {
		rdb, err := newClient(url)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		clients = append(clients, rdb)
		q, err := quota.NewRedis(rdb, cfg)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		qs = append(qs, q)
	}
	return qs, closeAll, nil
}

// patience bounds one round trip to Redis in these checks. Lab check runs
// several builds at once, each on a redis-server of its own, on a machine
// that may be busy compiling: a round trip can stall for a second there,
// and these checks are about counting and expiry, not speed. A server that
// is gone is noticed at once (the connection is refused or cut), whatever
// this is.
const patience = 2 * time.Second

// newClient is quota.NewClient with patience for each dial, read and write.
func newClient(url string) (*redis.Client, error) {
	rdb, err := quota.NewClient(url)
	if err != nil {
		return nil, err
	}
	opt := *rdb.Options()
	rdb.Close()
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = patience, patience, patience
	return redis.NewClient(&opt), nil
}

// 1. Three services, and three bare quotas under contention: one limit.
func oneLimitForThree(url, prefix string) error {
	qs, closeAll, err := processes(url, 3, quota.RedisConfig{Prefix: prefix, Limit: limit})
	if err != nil {
		return err
	}
	defer closeAll()
	fake := &fake{latency: 40 * time.Millisecond}
	var svcs []*quoteflow.Service
	for _, q := range qs {
		svc, err := quoteflow.New(quoteflow.Config{Transport: fake, Quota: q, Budget: 3 * time.Second})
		if err != nil {
			return err
		}
		defer svc.Close()
		svcs = append(svcs, svc)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for _, svc := range svcs {
		for range quoteflow.DefaultInbound {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				res, err := svc.Quote(ctx, quoteflow.QuoteRequest{SKU: "KB-001", Quantity: 1, Scenario: "normal"})
				if err != nil {
					failed.Add(1)
				}
				for _, f := range res.Failures {
					if f.Code != quoteflow.CodeQuotaUnavailable { // that one: a round trip cut on a busy machine
						failed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	if p := fake.peak(); p != limit {
		return fmt.Errorf("24 quotes on three services sharing one quota of %d: %d calls at the suppliers at once, want exactly %d", limit, p, limit)
	}
	if n := failed.Load(); n > 0 {
		return fmt.Errorf("%d failures among 24 quotes with a 3 s budget and 40 ms calls", n)
	}

	// The same quota, hammered: 12 goroutines per process take a slot, hold
	// it 5 ms, give it back, for 500 ms (hundreds of acquisitions, light
	// enough for a Redis other checks share).
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	var g gauge
	admitted, err := hammer(ctx, qs, 12, 5*time.Millisecond, &g)
	if err != nil {
		return err
	}
	if p := g.peak.Load(); p != limit {
		return fmt.Errorf("36 goroutines in 3 processes held %d slots at once (%d acquisitions), want exactly %d", p, admitted, limit)
	}
	return nil
}

// 2. A process that dies holding every slot blocks the others only until
// its leases expire: killed right after taking them (fresh leases), and
// killed after a renewal (renewed leases expire too).
func aKilledProcessGivesItsSlotsBack(url, prefix string) error {
	// Both at once, each on keys of its own. Fresh leases expire by the
	// kill + TTL; leases that live 1.5 TTLs not before the kill + 1.5 TTL
	// less the moments between the last Acquire and the kill. A TTL of 1 s
	// leaves 200 ms on either side of TTL + 20%.
	fresh := make(chan error, 1)
	go func() { fresh <- killedHolding(url, prefix+"-fresh", time.Second, 0) }()
	// ttl/2: a renewal (every ttl/3) has run, the leases are live, not fresh.
	const ttl = 600 * time.Millisecond
	renewed := killedHolding(url, prefix+"-renewed", ttl, ttl/2)
	if err := <-fresh; err != nil {
		return fmt.Errorf("killed right after taking its slots: %w", err)
	}
	if renewed != nil {
		return fmt.Errorf("killed after a renewal: %w", renewed)
	}
	return nil
}

// killedHolding: one process takes every slot, lives on for alive, and is
// killed; the other two must hold every slot again within the TTL + 20%,
// measured from the kill: a lease taken or renewed before it is free by
// then (the 20% are for a busy machine), one that outlives its TTL is not.
func killedHolding(url, prefix string, ttl, alive time.Duration) error {
	qs, closeAll, err := processes(url, 3, quota.RedisConfig{Prefix: prefix, Limit: limit, TTL: ttl})
	if err != nil {
		return err
	}
	defer closeAll()
	if err := holdN(qs[0], limit); err != nil {
		return err
	}
	if alive > 0 {
		time.Sleep(alive)
	}
	qs[0].Close() // kill -9: no release, no renewal
	killed := time.Now()
	// Bounded past the TTL + 20%: not back by then is a failure either way,
	// and a lease that never expires is not waited out for long.
	wait := ttl * 3 / 2
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	// All six at once, three from each of the other processes: the slots
	// come back together, and six Acquires one after another would add
	// six round trips (on a busy machine, most of the 20%).
	var (
		mu    sync.Mutex
		got   int
		taken []*quota.Redis // to release, each by the process that took it
		last  time.Time
		errs  []error
		wg    sync.WaitGroup
	)
	for i := range limit {
		q := qs[1+i%2]
		wg.Go(func() {
			err := q.Acquire(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			got++
			taken = append(taken, q)
			last = time.Now()
		})
	}
	wg.Wait()
	defer func() {
		for _, q := range taken {
			q.Release()
		}
	}()
	if len(errs) > 0 {
		return fmt.Errorf("after one process was killed holding all %d slots, the others got only %d in %s, past the TTL %s + 20%%: %v", limit, got, wait, ttl, errs[0])
	}
	if took := last.Sub(killed); took > ttl*12/10 {
		return fmt.Errorf("the others held %d slots again %s after the kill, want within the TTL %s + 20%%: the leases outlive their TTL", limit, took.Round(time.Millisecond), ttl)
	}
	return nil
}

// 3. Redis gone: closed, at once; Redis back (empty): working again. The
// processes reach Redis through a TCP proxy of this program's own, so
// "Redis down" is every connection cut and the port refusing, as a killed
// server looks to its clients, without stopping a server other programs
// may share (lab check's); "back" is the proxy listening again on the same
// port in front of a store that lost this check's keys.
func failClosedAndRecover(url, prefix string) error {
	const ttl = 300 * time.Millisecond
	p, purl, err := newProxy(url)
	if err != nil {
		return err
	}
	defer p.close()
	qs, closeAll, err := processes(purl, 2, quota.RedisConfig{Prefix: prefix, Limit: limit, TTL: ttl, Rate: quota.Rate{N: 5, Per: 250 * time.Millisecond}})
	if err != nil {
		return err
	}
	defer closeAll()
	fake := &fake{}
	svc, err := quoteflow.New(quoteflow.Config{Transport: fake, Quota: qs[0]})
	if err != nil {
		return err
	}
	defer svc.Close()
	for _, q := range qs { // both have worked before the outage
		if err := holdN(q, 1); err != nil {
			return err
		}
		q.Release()
	}
	p.down()
	for i, q := range qs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		start := time.Now()
		err := q.Acquire(ctx)
		took := time.Since(start)
		if err == nil {
			q.Release()
		}
		start = time.Now()
		werr := q.Wait(ctx, "boreal")
		wtook := time.Since(start)
		cancel()
		if !errors.Is(err, quota.ErrUnavailable) {
			return fmt.Errorf("process %d: Acquire with Redis down = %v, want quota.ErrUnavailable (fail closed)", i, err)
		}
		if took > 1500*time.Millisecond {
			return fmt.Errorf("process %d: Acquire failed closed, but after %s: a caller would wait out its deadline", i, took.Round(time.Millisecond))
		}
		if !errors.Is(werr, quota.ErrUnavailable) {
			return fmt.Errorf("process %d: Wait (the rate quota) with Redis down = %v, want quota.ErrUnavailable (fail closed)", i, werr)
		}
		if wtook > 1500*time.Millisecond {
			return fmt.Errorf("process %d: Wait failed closed, but after %s: a caller would wait out its deadline", i, wtook.Round(time.Millisecond))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	res, err := svc.Quote(ctx, quoteflow.QuoteRequest{SKU: "KB-001", Quantity: 1, Scenario: "normal"})
	if err != nil {
		return err
	}
	for _, f := range res.Failures {
		if f.Code != quoteflow.CodeQuotaUnavailable {
			return fmt.Errorf("a quote with Redis down: %s failed with %q, want quota_unavailable", f.Supplier, f.Code)
		}
	}
	if len(res.Failures) != 3 || fake.total() != 0 {
		return fmt.Errorf("a quote with Redis down: %d quotes, %d failures, %d supplier calls; want 3 quota_unavailable and no call", len(res.Quotes), len(res.Failures), fake.total())
	}

	if err := wipe(url, prefix); err != nil { // the store lost this check's data
		return err
	}
	if err := p.up(); err != nil { // back
		return err
	}
	// Back, a correct quota admits again after one TTL of grace (leases the
	// lost store forgot may still run); 2 s is several times that.
	deadline := time.Now().Add(2 * time.Second)
	for i, q := range qs {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			err := q.Acquire(ctx)
			cancel()
			if err == nil {
				q.Release()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("process %d: 2 s after Redis came back (TTL %s), Acquire still fails: %v", i, ttl, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// 4. The rate quota counts every process's calls.
func theRateHoldsAcrossProcesses(url, prefix string) error {
	rate := quota.Rate{N: 5, Per: 250 * time.Millisecond}
	qs, closeAll, err := processes(url, 3, quota.RedisConfig{Prefix: prefix, Limit: limit, Rate: rate})
	if err != nil {
		return err
	}
	defer closeAll()
	var mu sync.Mutex
	var admitted []time.Time
	var firstErr error
	var wg sync.WaitGroup
	for _, q := range qs {
		for range 5 {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				err := q.Wait(ctx, "boreal")
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					admitted = append(admitted, time.Now())
				}
			})
		}
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("15 calls at 5 per 250 ms with 3 s each: %v", firstErr)
	}
	for _, a := range admitted {
		n := 0
		for _, b := range admitted {
			if d := b.Sub(a); d >= 0 && d < 150*time.Millisecond {
				n++
			}
		}
		if n > rate.N {
			return fmt.Errorf("%d calls admitted within 150 ms by three processes sharing %s", n, rate)
		}
	}
	return nil
}

// 5. The Streams queue: a killed consumer loses no job, a live one keeps its own.
func aKilledConsumerLosesNoJob(url, prefix string) error {
	const visibility = 400 * time.Millisecond
	sup := newQueueSuppliers()
	a, closeA, err := consumer(url, prefix, "a", sup, visibility)
	if err != nil {
		return err
	}
	defer closeA()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := queuedLine(ctx, a, sup)
	if err != nil {
		return err
	}

	// Consumer a takes the job and calls boreal, which holds the call; a is
	// killed in the middle of it.
	sup.set(holdUntilCancelled)
	killA, kill := context.WithCancel(ctx)
	doneA := make(chan struct{})
	go func() { defer close(doneA); a.CompensateOnce(killA) }()
	select {
	case <-sup.arrived:
	case <-time.After(3 * time.Second):
		kill()
		return errors.New("consumer a never called boreal for the queued line")
	}
	kill()
	select {
	case <-doneA:
	case <-time.After(3 * time.Second):
		return errors.New("consumer a did not stop within 3 s of being killed")
	}

	// Consumer b, boreal back: the job comes back after the visibility timeout.
	sup.set(answerNow)
	b, closeB, err := consumer(url, prefix, "b", sup, visibility)
	if err != nil {
		return err
	}
	defer closeB()
	// A round trip cut short on a busy machine (the client's 500 ms read
	// limit) is tried again, as the worker's next pass would: only the
	// line's state at the end counts.
	until := time.Now().Add(visibility + 1200*time.Millisecond)
	var lastErr error
	for {
		if _, err := b.CompensateOnce(ctx); err != nil {
			lastErr = err
		}
		got, err := b.GetBasket(ctx, id)
		if err != nil {
			lastErr = err
		} else if got.Pending == 0 {
			if l := got.Items[0]; l.Status != quoteflow.LineComplete || len(l.Quotes) != 3 {
				return fmt.Errorf("after consumer b took the killed consumer's job, the line is %s with %d quotes (failures %+v), want complete with 3", l.Status, len(l.Quotes), l.Failures)
			}
			break
		}
		if time.Now().After(until) {
			also := ""
			if lastErr != nil {
				also = fmt.Sprintf(" (the last round trip: %v)", lastErr)
			}
			return fmt.Errorf("consumer a was killed holding a job; %s after, past the %s visibility timeout, the line is still pending: the job was lost (acknowledged before its line was completed?)%s",
				(visibility + 1200*time.Millisecond).Round(time.Millisecond), visibility, also)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := sup.answered(); n != 1 {
		return fmt.Errorf("boreal answered %d calls for one queued line after the kill, want exactly 1", n)
	}

	// And a live, slow consumer keeps its job. c takes a new queued line
	// and boreal holds c's call until d has polled the queue, its lease
	// 150 ms old: well past a tenth of the 1 s visibility timeout, far from
	// all of it. (At most 450 ms: within the pass's limit of half the
	// visibility timeout, whatever the machine's load.) A later boreal call,
	// d's if d took the job, answers at once.
	const slowVisibility = time.Second
	c, closeC, err := consumer(url, prefix, "c", sup, slowVisibility)
	if err != nil {
		return err
	}
	defer closeC()
	d, closeD, err := consumer(url, prefix, "d", sup, slowVisibility)
	if err != nil {
		return err
	}
	defer closeD()
	id, err = queuedLine(ctx, c, sup)
	if err != nil {
		return err
	}
	polled := make(chan struct{})
	sup.holdFirst(polled, 450*time.Millisecond)
	doneC := make(chan error, 1)
	go func() { _, err := c.CompensateOnce(ctx); doneC <- err }()
	select {
	case <-sup.arrived:
	case <-time.After(3 * time.Second):
		return errors.New("consumer c never called boreal for the queued line")
	}
	// d polls while c's call runs (an error here, a slow round trip,
	// takes nothing), then c's call answers.
	time.Sleep(150 * time.Millisecond)
	d.CompensateOnce(ctx)
	close(polled)
	errC := <-doneC
	// A second call to boreal by now is a claim from a live consumer,
	// whatever became of c's pass: d polled only 100 and 200 ms after c's
	// call began, long before the 1 s visibility timeout. (Taken over
	// that way, c's pass can also fail to complete the line.)
	if n := sup.called(); n != 1 {
		return fmt.Errorf("boreal was called %d times for one queued line while its consumer was alive and its call ran: "+
			"another consumer claimed the job before the visibility timeout", n)
	}
	if errC != nil {
		// c could not write its result (a round trip cut on a busy
		// machine): the job comes back after the visibility timeout, and
		// a second call is then right. Nothing more to conclude.
		fmt.Fprintln(os.Stderr, "E17: note: consumer c's pass failed (", errC, "); the rest of the live-consumer check is skipped this run")
		return nil
	}
	got, err := c.GetBasket(ctx, id)
	if err != nil {
		return err
	}
	if got.Pending != 0 {
		return fmt.Errorf("consumer c's call ended, but the line is still pending (%+v)", got.Items[0].Failures)
	}
	return nil
}

// consumer is one QuoteFlow process's basket service on the shared Redis:
// its own client, its Streams queue (consumer name) and basket store.
func consumer(url, prefix, name string, sup http.RoundTripper, visibility time.Duration) (*quoteflow.Service, func(), error) {
	rdb, err := newClient(url)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	q, err := queue.NewStream(ctx, rdb, queue.StreamConfig{Prefix: prefix, Consumer: name})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	store, err := quoteflow.NewRedisStore(q, 0)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	svc, err := quoteflow.New(quoteflow.Config{Transport: sup, Store: store, Queue: q,
		Basket: quoteflow.BasketPolicy{Visibility: visibility}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return svc, sync.OnceFunc(func() { svc.Close(); rdb.Close() }), nil
}

// queuedLine asks svc for a basket of one line while boreal is down: the
// line keeps atlas and cedar, and boreal's call is queued. It resets the
// fake's counts.
func queuedLine(ctx context.Context, svc *quoteflow.Service, sup *queueSuppliers) (string, error) {
	sup.set(down)
	var b quoteflow.Basket
	var err error
	for range 3 { // a store round trip cut on a busy machine: ask again
		b, err = svc.Basket(ctx, quoteflow.BasketRequest{Scenario: "normal",
			Items: []quoteflow.BasketItem{{SKU: "KB-001", Quantity: 1}}})
		if err == nil {
			break
		}
	}
	if err != nil {
		return "", fmt.Errorf("a basket with boreal down: %w", err)
	}
	if b.Pending != 1 {
		return "", fmt.Errorf("a basket of one line with boreal down: pending %d, want 1 (boreal queued): %+v", b.Pending, b.Items)
	}
	sup.reset()
	return b.ID, nil
}

// 6. Calls longer than the TTL keep their slots: held for two TTLs, which a
// lease that is never renewed does not outlive. The TTL leaves a renewal
// (every TTL/3) 300 ms of slack on a busy machine.
func longCallsKeepTheirSlots(url, prefix string) error {
	const ttl = 450 * time.Millisecond
	qs, closeAll, err := processes(url, 2, quota.RedisConfig{Prefix: prefix, Limit: limit, TTL: ttl})
	if err != nil {
		return err
	}
	defer closeAll()
	// 3×TTL after the last slot was taken: a lease that is never renewed
	// has expired for at least a whole TTL of it, time enough on a busy
	// machine for the other process's polls to find the slot.
	return noneAdmittedWhileHeld(qs, 3*ttl)
}

// 7. The same on a stand-in whose clock is an hour ahead of ours.
func renewalsUseRedisClock(_, prefix string) error {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return err
	}
	defer m.Close()
	m.SetTime(time.Now().Add(time.Hour))
	const ttl = 150 * time.Millisecond
	qs, closeAll, err := processes("redis://"+m.Addr()+"/0", 2, quota.RedisConfig{Prefix: prefix, Limit: limit, TTL: ttl})
	if err != nil {
		return err
	}
	defer closeAll()
	// The stand-in's clock stands still, so only an expiry written from our
	// clock (an hour behind) can free a slot.
	return noneAdmittedWhileHeld(qs, 3*ttl)
}

// noneAdmittedWhileHeld: qs[0] holds every slot for d; qs[1] must get none.
func noneAdmittedWhileHeld(qs []*quota.Redis, d time.Duration) error {
	if err := holdN(qs[0], limit); err != nil {
		return err
	}
	defer func() {
		for range limit {
			qs[0].Release()
		}
	}()
	const try = 150 * time.Millisecond
	until := time.Now().Add(d)
	busy := false // a try was cut or late: the machine may have hidden an expired lease
	for time.Now().Before(until) {
		// Long enough for a round trip on a busy machine: a short one ends
		// every try before Redis answers, and an expired lease goes unseen.
		ctx, cancel := context.WithTimeout(context.Background(), try)
		start := time.Now()
		err := qs[1].Acquire(ctx)
		cancel()
		if err == nil {
			qs[1].Release()
			return fmt.Errorf("another process was admitted while %d calls still ran: a lease expired under a running call", limit)
		}
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, quota.ErrUnavailable) {
			return err // ErrUnavailable: a round trip cut on a busy machine, nothing admitted
		}
		busy = busy || errors.Is(err, quota.ErrUnavailable) || time.Since(start) > 2*try
	}
	if !busy {
		return nil
	}
	// One last, patient try: on a machine so busy that the short tries
	// above ended before Redis answered, a lease that expired would go
	// unseen. A slot still held (renewed) is not free a second later either.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := qs[1].Acquire(ctx); err == nil {
		qs[1].Release()
		return fmt.Errorf("another process was admitted while %d calls still ran: a lease expired under a running call", limit)
	}
	return nil
}

func holdN(q *quota.Redis, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for i := 0; i < n; {
		err := q.Acquire(ctx)
		if errors.Is(err, quota.ErrUnavailable) && ctx.Err() == nil {
			// Failed closed: a round trip took longer than the client's
			// read limit (a busy machine). Nothing is held; try again.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if err != nil {
			return fmt.Errorf("taking %d free slots, got %d: %v", n, i, err)
		}
		i++
	}
	return nil
}

// gauge counts slots held and remembers the most at once.
type gauge struct{ now, peak atomic.Int64 }

func (g *gauge) enter() {
	n := g.now.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

// hammer runs workers goroutines per quota until ctx ends, each taking a
// slot, holding it for hold, and giving it back.
func hammer(ctx context.Context, qs []*quota.Redis, workers int, hold time.Duration, g *gauge) (int64, error) {
	var wg sync.WaitGroup
	var admitted atomic.Int64
	var mu sync.Mutex
	var firstErr error
	for _, q := range qs {
		for range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					err := q.Acquire(ctx)
					if errors.Is(err, quota.ErrUnavailable) {
						// Failed closed: a round trip took longer than the
						// quota's limit (a busy machine). Nothing is held; a
						// caller would try again later, and so do we.
						time.Sleep(10 * time.Millisecond)
						continue
					}
					if err != nil {
						if ctx.Err() == nil {
							mu.Lock()
							firstErr = cmpErr(firstErr, err)
							mu.Unlock()
						}
						return
					}
					g.enter()
					admitted.Add(1)
					time.Sleep(hold)
					g.leave()
					q.Release()
				}
			})
		}
	}
	wg.Wait()
	return admitted.Load(), firstErr
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// fake plays the three suppliers: a normal quote after latency; it counts
// the calls in flight and remembers the most at once.
type fake struct {
	latency time.Duration

	mu              sync.Mutex
	running, max, n int
}

func (f *fake) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	f.n++
	f.running++
	f.max = max(f.max, f.running)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	t := time.NewTimer(f.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	supplier := path.Base(r.URL.Path)
	body := fmt.Sprintf(`{"supplier":%q,"sku":%q,"unit_cents":1000,"shipping_cents":100,"stock":50}`, supplier, r.URL.Query().Get("sku"))
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

func (f *fake) peak() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.max
}

func (f *fake) total() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// How the queue check's boreal answers.
const (
	down               = iota // 503
	holdUntilCancelled        // holds the call until its context ends
	holdFirst                 // holds the first call until released (see holdFirst), answers later ones at once
	answerNow                 // answers at once
)

// queueSuppliers plays the three suppliers for the queue check: atlas and
// cedar answer at once; boreal as set. It signals each boreal call's arrival
// and counts boreal's calls and its answers.
type queueSuppliers struct {
	arrived chan struct{}

	mu             sync.Mutex
	mode           int
	calls, answers int
	release        <-chan struct{} // holdFirst: the first call answers when it closes
	limit          time.Duration   // holdFirst: or after this long
}

func newQueueSuppliers() *queueSuppliers { return &queueSuppliers{arrived: make(chan struct{}, 16)} }

func (f *queueSuppliers) set(mode int) {
	f.mu.Lock()
	f.mode, f.release = mode, nil
	f.mu.Unlock()
}

// holdFirst makes boreal hold its next call until release closes or limit
// has passed, and answer the calls after it at once.
func (f *queueSuppliers) holdFirst(release <-chan struct{}, limit time.Duration) {
	f.mu.Lock()
	f.mode, f.release, f.limit = holdFirst, release, limit
	f.mu.Unlock()
}

func (f *queueSuppliers) reset() {
	f.mu.Lock()
	f.calls, f.answers = 0, 0
	f.mu.Unlock()
	for len(f.arrived) > 0 {
		<-f.arrived
	}
}

func (f *queueSuppliers) called() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *queueSuppliers) answered() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answers
}

func (f *queueSuppliers) RoundTrip(r *http.Request) (*http.Response, error) {
	supplier := path.Base(r.URL.Path)
	if supplier == "boreal" {
		f.mu.Lock()
		mode, release, limit := f.mode, f.release, f.limit
		if mode == holdFirst {
			f.mode, f.release = answerNow, nil // the calls after this one
		}
		f.calls++
		f.mu.Unlock()
		select {
		case f.arrived <- struct{}{}:
		default:
		}
		hold := time.Duration(0)
		switch mode {
		case down:
			return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(strings.NewReader(`{"error":"down"}`)), Request: r}, nil
		case holdUntilCancelled:
			hold = time.Minute
		case holdFirst:
			hold = limit
		}
		t := time.NewTimer(hold)
		defer t.Stop()
		select {
		case <-t.C:
		case <-release: // nil but for holdFirst's call: never ready
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		f.mu.Lock()
		f.answers++
		f.mu.Unlock()
	}
	body := fmt.Sprintf(`{"supplier":%q,"sku":%q,"unit_cents":1000,"shipping_cents":100,"stock":50}`, supplier, r.URL.Query().Get("sku"))
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

package quota_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"quoteflowlab.dev/checkpoints/19/quota"
)

// Two rate scripts the quota could use instead, side by side with its own
// (quota.RateScript, a sliding window of counters). Same arguments: the
// rate's N, its window in µs, the call's id and its cost; same answer: 0
// (admitted), µs to wait, or -1 (the cost never fits).

// logScript is a log of every admission in a sorted set, scored by its
// time (the quota's script before it counted in buckets): exact, and one
// member per admission of the last window.
var logScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local member = ARGV[4] .. ':' .. ARGV[3]
if cost > n then
  return -1
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local held = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local used = 0
for i = 1, #held, 2 do
  used = used + tonumber(string.match(held[i], '^(%d+):'))
end
if used + cost <= n then
  redis.call('ZADD', KEYS[1], now, member)
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) + 1)
  return 0
end
for i = 1, #held, 2 do
  used = used - tonumber(string.match(held[i], '^(%d+):'))
  if used + cost <= n then
    return math.max(1, tonumber(held[i + 1]) + window - now)
  end
end
return 1
`)

// gcraScript is the generic cell rate algorithm (go-redis/redis_rate,
// throttled): one number per key, the theoretical arrival time; a cost of
// c moves it c × window/N on, with a burst of N (the whole window at once).
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
if cost > n then
  return -1
end
local tat = math.max(tonumber(redis.call('GET', KEYS[1]) or 0), now)
local new = tat + cost * window / n
if new - window > now then
  return math.max(1, math.ceil(new - window - now))
end
redis.call('SET', KEYS[1], string.format('%.0f', new), 'PX', math.ceil((new - now) / 1000) + 1)
return 0
`)

var rateScripts = []struct {
	name   string
	script *redis.Script
}{{"log", logScript}, {"gcra", gcraScript}, {"window", quota.RateScript}}

// How the three compare, per script:
//
//   - extra: admissions more than N in the worst window, on the embedded
//     stand-in whose clock the benchmark moves: after an idle spell, a call
//     every millisecond for 2 s at 5 per 200 ms (calls), and a call every
//     5 ms costing 2, 2, 2, 40 in turn at 100 per second (units).
//
//   - admitted: how many of those calls (the first kind) got in: a script
//     that counts more than the window holds admits fewer.
//
//   - bytes/key: MEMORY USAGE of one key on a real redis-server after a
//     second of calls one after the other at a million per 100 ms (every
//     call admitted: the window holds all of the last 100 ms).
//
//   - ns/op: one script run of 32 goroutines on that server at a rate of a
//     million a second, every call admitted.
//
//     go test -run '^$' -bench RateQuota -benchtime 20000x ./quota/
func BenchmarkRateQuota(b *testing.B) {
	s := startRedis(b)
	rdb := client(b, s.URL())
	for _, c := range rateScripts {
		b.Run(c.name, func(b *testing.B) {
			extraCalls, admitted := worstWindow(b, c.script, 5, 200*time.Millisecond, time.Millisecond, []int{1})
			extraUnits, _ := worstWindow(b, c.script, 100, time.Second, 5*time.Millisecond, []int{2, 2, 2, 40})
			mem := memoryAfter(b, rdb, c.script, "memory:"+c.name)
			key := "rate:" + c.name
			n, per := int64(1_000_000), time.Second
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for g := range 32 {
				wg.Go(func() {
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						res, err := c.script.Run(ctx, rdb, []string{key}, n, per.Microseconds(), fmt.Sprint(g, ":", i), 1).Int64()
						if err != nil || res != 0 {
							b.Errorf("run %d: %d, %v; want admitted", i, res, err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(extraCalls-5), "extra-calls")
			b.ReportMetric(float64(extraUnits-100), "extra-units")
			b.ReportMetric(float64(admitted), "admitted")
			b.ReportMetric(float64(mem), "bytes/key")
		})
	}
}

// worstWindow runs script at a rate of n per per on a stand-in whose clock
// it moves: an idle spell, then a call every step for 10 windows, costing
// costs in turn. It returns the most cost admitted in any window of per,
// and how many calls got in.
func worstWindow(b *testing.B, script *redis.Script, n int, per, step time.Duration, costs []int) (worst, admitted int) {
	m := miniredis.RunT(b)
	now := time.Now().Add(time.Hour)
	m.SetTime(now)
	rdb := client(b, "redis://"+m.Addr())
	type admission struct {
		at   time.Duration
		cost int
	}
	var adm []admission
	for i, at := 0, time.Duration(0); at < 10*per; i, at = i+1, at+step {
		m.SetTime(now.Add(at))
		cost := costs[i%len(costs)]
		res, err := script.Run(context.Background(), rdb, []string{"k"}, n, per.Microseconds(), fmt.Sprint(i), cost).Int64()
		if err != nil {
			b.Fatal(err)
		}
		if res == 0 {
			adm = append(adm, admission{at, cost})
		}
	}
	for i := range adm {
		sum := 0
		for j := i; j < len(adm) && adm[j].at-adm[i].at < per; j++ {
			sum += adm[j].cost
		}
		worst = max(worst, sum)
	}
	return worst, len(adm)
}

// memoryAfter runs script on key for a second at a million per 100 ms and
// returns the key's MEMORY USAGE.
func memoryAfter(b *testing.B, rdb *redis.Client, script *redis.Script, key string) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	per := 100 * time.Millisecond
	for i, start := 0, time.Now(); time.Since(start) < time.Second; i++ {
		res, err := script.Run(ctx, rdb, []string{key}, 1_000_000, per.Microseconds(), fmt.Sprint(i), 1).Int64()
		if err != nil || res != 0 {
			b.Fatalf("call %d: %d, %v; want admitted", i, res, err)
		}
	}
	mem, err := rdb.MemoryUsage(ctx, key).Result()
	if err != nil {
		b.Fatal(err)
	}
	return mem
}

// The rate quota's throughput against go-redis/redis_rate (GCRA), the
// limiter a Go service would pick instead: 32 goroutines ask for one call
// at a time on one key of a real redis-server, at a rate that admits every
// call (a million a second), through the quota's Allow (its script: a
// sliding window of counters; the calls that come while a round trip is
// under way go together in the next) or redis_rate's Allow (the same
// client settings), in interleaved rounds, each first in every other one.
// Logged: each round's calls/s and the ratio quota / redis_rate; the median
// ratio is the result (the bar: ≥ 1.0). Reported per call besides, which
// a busy machine changes far less than calls/s: trips (script runs),
// cpu-µs of this process (the client: go-redis, the quota) and of
// redis-server (INFO cpu), and redis-µs, the time redis-server spent in
// the scripts (INFO commandstats).
//
//	go test -run '^$' -bench RateThroughput -benchtime 20000x ./quota/
func BenchmarkRateThroughput(b *testing.B) {
	s := startRedis(b)
	rate := quota.Rate{N: 1_000_000, Per: time.Second}
	mine := &countingClient{Client: client(b, s.URL())}
	q, err := quota.NewRedis(mine, quota.RedisConfig{Rate: rate, OpTimeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(q.Close) // before the client's Close
	peer := &countingClient{Client: client(b, s.URL())}
	limiter := redis_rate.NewLimiter(peer)
	limit := redis_rate.Limit{Rate: rate.N, Burst: rate.N, Period: rate.Per}
	viaQuota := func(ctx context.Context) error {
		ok, _, err := q.Allow(ctx, "boreal")
		if err == nil && !ok {
			err = errors.New("refused")
		}
		return err
	}
	viaPeer := func(ctx context.Context) error {
		res, err := limiter.Allow(ctx, "boreal", limit)
		if err == nil && res.Allowed != 1 {
			err = errors.New("refused")
		}
		return err
	}
	var ratios []float64
	for round := range 5 {
		var quotaNs, peerNs float64
		runQuota := func() { b.Run("quota", func(b *testing.B) { quotaNs = benchAllow(b, mine, viaQuota) }) }
		runPeer := func() { b.Run("redis_rate", func(b *testing.B) { peerNs = benchAllow(b, peer, viaPeer) }) }
		if round%2 == 0 {
			runQuota()
			runPeer()
		} else {
			runPeer()
			runQuota()
		}
		if quotaNs > 0 && peerNs > 0 {
			ratios = append(ratios, peerNs/quotaNs)
			b.Logf("round %d: quota %.0f calls/s, redis_rate %.0f calls/s: quota / redis_rate %.2f",
				round+1, 1e9/quotaNs, 1e9/peerNs, peerNs/quotaNs)
		}
	}
	if len(ratios) > 0 {
		slices.Sort(ratios)
		b.Logf("rate quota throughput = %.2f × redis_rate at 32 goroutines (median of %d rounds; bar ≥ 1.0)",
			ratios[len(ratios)/2], len(ratios))
	}
}

// benchAllow runs b.N calls of allow from 32 goroutines, all through rdb;
// it returns ns per call and reports what each call cost (see
// BenchmarkRateThroughput).
func benchAllow(b *testing.B, rdb *countingClient, allow func(context.Context) error) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // every wait capped
	defer cancel()
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	c0 := costsNow(b, rdb)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 32 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if err := allow(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(1e9/ns, "calls/s")
	costsSince(b, rdb, c0, "call")
	return ns
}

// costs is what the client and redis-server have used so far.
type costs struct {
	trips       int64
	client, srv time.Duration
	clientOK    bool
}

func costsNow(b *testing.B, rdb *countingClient) costs {
	c := costs{trips: rdb.runs(""), srv: redisCPU(b, rdb.Client)}
	c.client, c.clientOK = processCPU()
	return c
}

// costsSince reports, per op (b.N), the round trips, the CPU of this
// process and of redis-server since c0, and the µs redis-server spent in
// scripts since its stats were reset.
func costsSince(b *testing.B, rdb *countingClient, c0 costs, op string) {
	c := costsNow(b, rdb)
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(float64(c.trips-c0.trips)/float64(b.N), "trips/"+op)
	if c.clientOK && c0.clientOK {
		b.ReportMetric(per(c.client-c0.client), "cpu-µs/"+op)
	}
	b.ReportMetric(per(c.srv-c0.srv), "redis-cpu-µs/"+op)
	b.ReportMetric(float64(redisBusy(b, rdb.Client))/float64(b.N), "redis-µs/"+op)
}

// redisCPU is the CPU time redis-server has used (INFO cpu: used_cpu_user
// and used_cpu_sys, in seconds).
func redisCPU(b *testing.B, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "used_cpu_user" && name != "used_cpu_sys") {
			continue
		}
		sec, err := strconv.ParseFloat(v, 64)
		if err != nil {
			b.Fatal(err)
		}
		total += time.Duration(sec * 1e9)
	}
	return total
}

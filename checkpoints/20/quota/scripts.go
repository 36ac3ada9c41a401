package quota

import "github.com/redis/go-redis/v9"

// Every script reads the time with Redis's TIME: one clock for all processes,
// whatever each machine's own clock says. Each runs atomically: no other
// command runs between its check and its write.
//
// A lease whose expiry is past now + TTL was never written by a script
// (they write now + TTL at most): a score of +inf, or one written from a
// clock far ahead. acquireScript and renewScript drop it with the expired
// ones, so no such member blocks a slot for longer than a TTL.

// acquireScript admits lease ARGV[3] if fewer than ARGV[1] unexpired leases
// are held, with expiry = now + ARGV[2] ms.
//
// KEYS[1] the sorted set of leases (member: lease id, score: expiry in ms)
// KEYS[2] the epoch hash: which incarnation of the store this is
// KEYS[3] the sorted set of callers waiting in line (member: the lease id
// they wait for, score: expiry in ms)
// ARGV[4] the epoch this client last saw ("" if none), ARGV[5] a fresh epoch id
// ARGV[6] "wait" for a caller that waits in line (Acquire), "try" for one
// that never does (TryAcquire: a hedge); ARGV[7] how long a waiter's place
// in line lasts unless it tries again, in ms
//
// A caller that waits and finds no room takes a place in line (KEYS[3]),
// which each of its tries renews and its admission gives back; a caller
// that tries is refused while anyone is in line, in any process: a hedge
// never takes the slot a first call is waiting for. A place not renewed
// (its process died) expires like a lease.
//
// An empty store that a client has seen before has lost its data (Redis
// restarted without persistence): running calls still hold leases it no
// longer lists. For one TTL it admits no new lease, while the running calls
// re-register theirs (renewScript), so a restart is never a burst.
//
// Returns {admitted 0|1, epoch, leases held, ms until the grace ends}.
var acquireScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local epoch = redis.call('HGET', KEYS[2], 'id')
if not epoch then
  local grace = 0
  if ARGV[4] ~= '' then grace = now + ttl end
  epoch = ARGV[5]
  redis.call('HSET', KEYS[2], 'id', epoch, 'grace', grace)
end
local grace = tonumber(redis.call('HGET', KEYS[2], 'grace'))
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. (now + ttl), '+inf')
local held = redis.call('ZCARD', KEYS[1])
local waits = ARGV[6] == 'wait'
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  if waits then redis.call('ZREM', KEYS[3], ARGV[3]) end
  return {1, epoch, held, 0}
end
local function refuse(retry)
  if waits then redis.call('ZADD', KEYS[3], now + tonumber(ARGV[7]), ARGV[3]) end
  return {0, epoch, held, retry}
end
if now < grace then
  return refuse(grace - now)
end
if not waits then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  if redis.call('ZCARD', KEYS[3]) > 0 then
    return refuse(0)
  end
end
if held < limit then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
  if waits then redis.call('ZREM', KEYS[3], ARGV[3]) end
  return {1, epoch, held + 1, 0}
end
return refuse(0)
`)

// renewScript pushes the expiry of leases ARGV[5..] to now + ARGV[2] ms. A
// lease the store no longer lists (it restarted, or the lease expired while
// Redis was out of reach) is added back if there is room; ARGV[1] is the limit.
// Same KEYS and epoch rule as acquireScript (ARGV[3] seen, ARGV[4] fresh),
// except that a renewing client has always seen an epoch.
//
// Returns {epoch, leases that found no room}.
var renewScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[2])
local epoch = redis.call('HGET', KEYS[2], 'id')
if not epoch then
  epoch = ARGV[4]
  redis.call('HSET', KEYS[2], 'id', epoch, 'grace', now + ttl)
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '(' .. (now + ttl), '+inf')
local lost = 0
for i = 5, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) or redis.call('ZCARD', KEYS[1]) < limit then
    redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
  else
    lost = lost + 1
  end
end
return {epoch, lost}
`)

// rateScript is a sliding window weighted by cost: it admits call ARGV[3]
// of cost ARGV[4] to KEYS[1] if the costs admitted in the last ARGV[2] µs,
// with this one, come to at most ARGV[1]. With every cost 1 it counts calls.
// A call already admitted (a retried request) is admitted again without
// counting twice. Members are "cost:id", scored by the admission time.
//
// Returns 0 (admitted), the µs until enough cost leaves the window for this
// call, or -1 when its cost is more than the whole window holds.
var rateScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local n, window, cost = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[4])
local member = ARGV[4] .. ':' .. ARGV[3]
if cost > n then
  return -1
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZSCORE', KEYS[1], member) then
  return 0
end
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
-- The oldest admissions leave first: wait until enough of them have.
for i = 1, #held, 2 do
  used = used - tonumber(string.match(held[i], '^(%d+):'))
  if used + cost <= n then
    return math.max(1, tonumber(held[i + 1]) + window - now)
  end
end
return 1
`)

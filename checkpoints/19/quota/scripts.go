package quota

import (
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Every script reads the time with Redis's TIME: one clock for all processes,
// whatever each machine's own clock says. Each runs atomically: no other
// command runs between its check and its write.
//
// A lease whose expiry is past now + TTL was never written by a script
// (they write now + TTL at most): a score of +inf, or one written from a
// clock far ahead. acquireScript and renewScript drop it with the expired
// ones, so no such member blocks a slot for longer than a TTL.

// grantLua is the part of the lease scripts that wakes waiters: while a
// slot is free, the first caller in line (KEYS[4], in the order they came)
// whose place has not expired (KEYS[3]) is given a lease that expires with
// its place, or within ttl ms if sooner (a live process renews both; a dead
// one's lease goes when its place would have gone, within a TTL), and its
// id is published on its process's channel, KEYS[4] .. ':' .. owner (an id
// is "owner:n"), to which that process listens. A release, a
// renewal or a try that finds a slot free (a lease given back, or expired:
// its process died) so hands it to the waiter first in line, in the same
// atomic step: no waiter polls, and no newcomer passes one. During the
// grace after a restart, or with no epoch at all, it grants nothing.
// except is the caller running the script, who learns from its answer.
const grantLua = `
local function grant(now, limit, ttl, except)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local held = redis.call('ZCARD', KEYS[1])
  local grace = redis.call('HGET', KEYS[2], 'grace')
  if not grace or now < tonumber(grace) then
    return held
  end
  while held < limit do
    local first = redis.call('ZRANGE', KEYS[4], 0, 0)[1]
    if not first then
      break
    end
    redis.call('ZREM', KEYS[4], first)
    local place = redis.call('ZSCORE', KEYS[3], first)
    if place then
      redis.call('ZREM', KEYS[3], first)
      redis.call('ZADD', KEYS[1], math.min(tonumber(place), now + ttl), first)
      held = held + 1
      if first ~= except then
        redis.call('PUBLISH', KEYS[4] .. ':' .. string.match(first, '^(.*):'), first)
      end
    end
  end
  return held
end
`

// acquireScript admits lease ARGV[3] if fewer than ARGV[1] unexpired leases
// are held and nobody waits in line before it, with expiry = now + ARGV[2] ms.
//
// KEYS[1] the sorted set of leases (member: lease id, score: expiry in ms)
// KEYS[2] the epoch hash: which incarnation of the store this is
// KEYS[3] the places in line (member: the lease id a caller waits for,
// score: when its place expires, in ms)
// KEYS[4] the line: the same callers in the order they came (score: Redis's
// clock in µs when each first came)
// ARGV[4] the epoch this client last saw ("" if none), ARGV[5] a fresh epoch id
// ARGV[6] how long a waiter's place in line lasts unless it tries again, in ms
// ARGV[7] "wait" for a caller that waits in line (Acquire), "try" for one
// that never does (TryAcquire: a hedge)
//
// A caller that waits and finds no room takes a place in line, which each of
// its tries renews; a slot that comes free goes to the first in line
// (grantLua). A caller that tries is refused while anyone is in line, in any
// process: a hedge never takes the slot a first call is waiting for. A place
// not renewed (its process died) expires like a lease.
//
// An empty store that a client has seen before has lost its data (Redis
// restarted without persistence): running calls still hold leases it no
// longer lists. For one TTL it admits no new lease, while the running calls
// re-register theirs (renewScript), so a restart is never a burst.
//
// Returns {admitted 0|1, epoch, leases held, ms until the caller should try
// again: the grace's end, or the first lease's expiry}.
var acquireScript = redis.NewScript(grantLua + `
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
local function admitted(held)
  redis.call('ZREM', KEYS[3], ARGV[3])
  redis.call('ZREM', KEYS[4], ARGV[3])
  return {1, epoch, held, 0}
end
local waits = ARGV[7] == 'wait'
local function refuse(retry)
  if waits then
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[6]), ARGV[3])
    redis.call('ZADD', KEYS[4], 'NX', tonumber(t[1]) * 1000000 + tonumber(t[2]), ARGV[3])
  end
  return {0, epoch, redis.call('ZCARD', KEYS[1]), retry}
end
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  return admitted(redis.call('ZCARD', KEYS[1]))
end
if now < grace then
  return refuse(grace - now)
end
local held = grant(now, limit, ttl, ARGV[3])
if redis.call('ZSCORE', KEYS[1], ARGV[3]) then
  return admitted(held)
end
if not waits and redis.call('ZCARD', KEYS[3]) > 0 then
  return refuse(0)
end
if held < limit then
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
  return admitted(held + 1)
end
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return refuse(math.max(1, tonumber(first[2]) - now))
`)

// releaseScript gives back leases ARGV[3..], or the places in line of
// callers that stopped waiting for them (and the leases, if granted
// meanwhile), and hands the free slots to the first in line (grantLua).
// ARGV[1] is the limit, ARGV[2] the TTL in ms; same KEYS as acquireScript.
var releaseScript = redis.NewScript(grantLua + `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 3, #ARGV do
  redis.call('ZREM', KEYS[1], ARGV[i])
  redis.call('ZREM', KEYS[3], ARGV[i])
  redis.call('ZREM', KEYS[4], ARGV[i])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
grant(now, tonumber(ARGV[1]), tonumber(ARGV[2]), '')
return 0
`)

// renewScript pushes the expiry of leases ARGV[5..] to now + ARGV[2] ms. A
// lease the store no longer lists (it restarted, or the lease expired while
// Redis was out of reach) is added back if there is room; ARGV[1] is the limit.
// Same KEYS and epoch rule as acquireScript (ARGV[3] seen, ARGV[4] fresh),
// except that a renewing client has always seen an epoch. Leases it finds
// expired (a process died) go to the first in line (grantLua).
//
// Returns {epoch, leases that found no room}.
var renewScript = redis.NewScript(grantLua + `
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
grant(now, limit, ttl, '')
return {epoch, lost}
`)

// placesScript renews the places in line ARGV[2..] (those still there) to
// now + ARGV[1] ms: a process keeps its waiters' places as it keeps its
// leases, and a dead process's places expire within the TTL.
var placesScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i])
end
return 0
`)

// rateLua is a sliding window weighted by cost, kept as counters:
// admit(key, n, window, cost) admits a call of cost to key if the costs
// admitted in the last window µs, with this one, come to at most n. With
// every cost 1 it counts calls.
//
// key is a hash of buckets: field i holds the cost admitted between
// i×width and (i+1)×width µs on Redis's clock, width = window / rateBuckets;
// field "t" their sum, and field "lo" the oldest bucket that may still be
// there. A bucket counts while any part of it is in the window, so every
// admission of the last window is counted, and some older ones with them:
// the window never holds more than n (never a call too many), and a call
// may wait up to one bucket longer than a log of every admission would
// make it. An admitted call reads three fields (the sum, the oldest, its
// bucket) and writes them in one command; the buckets that left the window
// since the last call go (about one per bucket's width), and the key's
// expiry moves only with a new bucket: it lives until its newest bucket
// leaves the window. The memory is at most rateBuckets + 3 fields, whatever
// the rate. A call run twice (a dropped connection, retried) counts twice:
// less is admitted, never more.
//
// admit returns 0 (admitted), the µs until enough cost leaves the window
// for this call, or -1 when its cost is more than the whole window holds.
var rateLua = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local function admit(key, n, window, cost)
  if cost > n then
    return -1
  end
  local width = math.ceil(window / ` + strconv.Itoa(rateBuckets) + `)
  local oldest = math.floor((now - window) / width)
  local cur = math.floor(now / width)
  local field = string.format('%.0f', cur)
  local state = redis.call('HMGET', key, 't', 'lo', field)
  local used, lo, here = tonumber(state[1]), tonumber(state[2]), tonumber(state[3])
  if not used or not lo then
    -- A new key, or one counted without a sum (by this script before it
    -- kept one): count the buckets once.
    local fields = redis.call('HGETALL', key)
    used, lo = 0, oldest
    for i = 1, #fields, 2 do
      local b = tonumber(fields[i])
      if b and b >= oldest then
        used = used + tonumber(fields[i + 1])
      elseif b then
        redis.call('HDEL', key, fields[i])
      end
    end
  end
  local moved = lo < oldest
  if moved then
    -- The buckets that left the window since the last call: at most
    -- rateBuckets + 1 are ever there, all of them from lo on.
    if oldest - lo > ` + strconv.Itoa(rateBuckets+1) + ` then
      redis.call('DEL', key)
      used, here = 0, nil
    else
      for b = lo, oldest - 1 do
        local old = string.format('%.0f', b)
        local c = redis.call('HGET', key, old)
        if c then
          used = used - tonumber(c)
          redis.call('HDEL', key, old)
        end
      end
    end
    lo = oldest
  end
  if used + cost <= n then
    redis.call('HSET', key, field, string.format('%.0f', (here or 0) + cost),
      't', string.format('%.0f', used + cost), 'lo', string.format('%.0f', lo))
    if not here then
      -- A new bucket: the key lives until it leaves the window (ms).
      redis.call('PEXPIREAT', key, string.format('%.0f', math.ceil(((cur + 1) * width + window) / 1000) + 1))
    end
    return 0
  end
  if moved then
    redis.call('HSET', key, 't', string.format('%.0f', used), 'lo', string.format('%.0f', lo))
  end
  -- The oldest buckets leave first: bucket b stops counting at (b + 1) × width + window.
  for b = lo, cur do
    local c = redis.call('HGET', key, string.format('%.0f', b))
    if c then
      used = used - tonumber(c)
      if used + cost <= n then
        return math.max(1, (b + 1) * width + window - now)
      end
    end
  end
  return 1
end
`

// rateScript counts the calls KEYS[i], each of cost ARGV[i+2], in turn
// (rateLua's admit), at a rate of ARGV[1] per ARGV[2] µs: the calls of one
// process that come while a round trip is under way go together in the
// next (Redis.allow). Returns admit's answer for each.
var rateScript = redis.NewScript(rateLua + `
local n, window = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
for i = 1, #KEYS do
  out[i] = admit(KEYS[i], n, window, tonumber(ARGV[i + 2]))
end
return out
`)

// rateBuckets is how many buckets a rate window is cut into (rateScript): a
// call waits at most a window and one bucket, Per/20, for room.
const rateBuckets = 20

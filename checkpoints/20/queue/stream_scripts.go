package queue

import "github.com/redis/go-redis/v9"

// The scripts of Stream. Each is one atomic step on Redis's clock. Every
// script gets the same first keys and arguments (Stream.run):
//
//	KEYS[1] stream    the entries to deliver (field id), read by the group
//	KEYS[2] delayed   sorted set: failed jobs waiting for their retry, by due time
//	KEYS[3] leased    sorted set: delivered jobs, by lease expiry (for Counts)
//	KEYS[4] counts    hash: jobs per state, and pruned
//	KEYS[5] finished  list: finished job IDs, oldest first (for KeepFinished)
//	KEYS[6] ids       sorted set, all scores 0: every job ID held (by prefix)
//	KEYS[7] owner key prefix: an owner's value is at KEYS[7] .. id, and the
//	        deaths of its jobs in the hash KEYS[7] .. id .. ':dead'
//	KEYS[8] owners    list: the owners' IDs, oldest first
//	ARGV[1] prefix of a job's hash (prefix .. 'job:' .. id), ARGV[2] group,
//	ARGV[3] MaxTries, ARGV[4] KeepFinished, ARGV[5] MaxOpen
//
// then each script's own arguments, from ARGV[6]. Every key shares the
// {prefix} hash tag, so a script also runs on a Redis Cluster.
const luaCommon = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local STREAM, DELAYED, LEASED, COUNTS, FINISHED, IDS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local OWNER, OWNERS = KEYS[7], KEYS[8]
local PREFIX, GROUP = ARGV[1], ARGV[2]
local MAXTRIES, KEEP, MAXOPEN = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local function jobkey(id) return PREFIX .. 'job:' .. id end
local function count(state) return tonumber(redis.call('HGET', COUNTS, state) or '0') end
local function move(from, to)
  if from then redis.call('HINCRBY', COUNTS, from, -1) end
  if to then redis.call('HINCRBY', COUNTS, to, 1) end
end
local function drop(entry)
  if entry and entry ~= '' then
    redis.call('XACK', STREAM, GROUP, entry)
    redis.call('XDEL', STREAM, entry)
  end
end
-- forget removes job id in whatever state, with its entry and index lines.
local function forget(id)
  local j = redis.call('HMGET', jobkey(id), 'state', 'entry')
  if not j[1] then return end
  drop(j[2])
  redis.call('ZREM', LEASED, id)
  redis.call('ZREM', DELAYED, id)
  redis.call('ZREM', IDS, id)
  redis.call('DEL', jobkey(id))
  move(j[1], nil)
end
-- finish books job id, just done or dead, and prunes the finished jobs
-- beyond KEEP, those that finished first (a store may have removed them).
local function finish(id)
  redis.call('RPUSH', FINISHED, id)
  while redis.call('LLEN', FINISHED) > KEEP do
    local old = redis.call('LPOP', FINISHED)
    local state = redis.call('HGET', jobkey(old), 'state')
    if state == 'done' or state == 'dead' then
      forget(old)
      redis.call('HINCRBY', COUNTS, 'pruned', 1)
    end
  end
end
-- bury records, beside its owner, that job id (owner .. '/' .. rest) has
-- died with reason: the owner's record learns it in the same step.
local function bury(id, reason)
  local owner, rest = string.match(id, '^([^/]+)/(.+)$')
  if owner and redis.call('EXISTS', OWNER .. owner) == 1 then
    redis.call('HSET', OWNER .. owner .. ':dead', rest, reason)
  end
end
local function prefixed(p)
  return redis.call('ZRANGEBYLEX', IDS, '[' .. p, '[' .. p .. '\255')
end
`

// putScript enqueues jobs and, with an owner (ARGV[6] ~= ”), stores the
// owner's value at KEYS[7] + id in the same step.
//
// ARGV[6] owner id (” for none), ARGV[7] its value, ARGV[8] owners kept,
// ARGV[9] not after (unix ms, 0: none): past it on Redis's clock the script
// writes nothing, so a write its caller gave up on (Redis stalled, the
// deadline passed) cannot land later; ARGV[10] 'absent' to write only if the
// owner is not stored, unless its value is ARGV[11] (” for none),
// then ARGV[12..] id, body, not-before (unix ms, 0: none) triples. A job not
// yet due waits in the delayed set, as a failed one does, and goes in the
// stream when promoteScript finds it due.
//
// Owners past the limit are dropped, oldest first, with their jobs (IDs
// starting with the owner's id and '/'), which makes room for the new jobs.
// A job whose ID is held already, in any state, is left as it is. When the
// open jobs (pending or leased) would pass MaxOpen, nothing at all is
// written. Returns {0}, {1, open jobs} (full), {2} (too late) or {3} (the
// owner is stored already).
var putScript = redis.NewScript(luaCommon + `
local owner, value, keepOwners = ARGV[6], ARGV[7], tonumber(ARGV[8])
local notAfter = tonumber(ARGV[9])
if notAfter > 0 and now > notAfter then return {2} end
if owner ~= '' and ARGV[10] == 'absent' and redis.call('EXISTS', OWNER .. owner) == 1
    and (ARGV[11] == '' or redis.call('GET', OWNER .. owner) ~= ARGV[11]) then
  return {3}
end
local victims = {}
if owner ~= '' then
  local n = redis.call('LLEN', OWNERS)
  if redis.call('EXISTS', OWNER .. owner) == 0 then n = n + 1 end
  if n > keepOwners then victims = redis.call('LRANGE', OWNERS, 0, n - keepOwners - 1) end
end
-- First count, write nothing: the open jobs after the victims go, and the new ones.
local open = count('pending') + count('leased')
for _, v in ipairs(victims) do
  for _, id in ipairs(prefixed(v .. '/')) do
    local s = redis.call('HGET', jobkey(id), 'state')
    if s == 'pending' or s == 'leased' then open = open - 1 end
  end
end
local new, seen = {}, {}
for i = 12, #ARGV, 3 do
  local id = ARGV[i]
  if not seen[id] and redis.call('EXISTS', jobkey(id)) == 0 then
    table.insert(new, i)
  end
  seen[id] = true
end
if open + #new > MAXOPEN then return {1, open} end
for _, v in ipairs(victims) do
  redis.call('LPOP', OWNERS)
  redis.call('DEL', OWNER .. v, OWNER .. v .. ':dead')
  for _, id in ipairs(prefixed(v .. '/')) do forget(id) end
end
if owner ~= '' then
  if redis.call('EXISTS', OWNER .. owner) == 0 then redis.call('RPUSH', OWNERS, owner) end
  redis.call('SET', OWNER .. owner, value)
end
for _, i in ipairs(new) do
  local id, notBefore = ARGV[i], tonumber(ARGV[i+2])
  local entry = ''
  if notBefore > now then
    redis.call('ZADD', DELAYED, notBefore, id)
  else
    notBefore = 0
    entry = redis.call('XADD', STREAM, '*', 'id', id)
  end
  redis.call('HSET', jobkey(id), 'body', ARGV[i+1], 'state', 'pending', 'tries', 0, 'reason', '',
    'entry', entry, 'not_before', notBefore, 'lease_until', 0)
  redis.call('ZADD', IDS, 0, id)
  move(nil, 'pending')
end
return {0}
`)

// promoteScript puts failed jobs whose retry is due back in the stream.
var promoteScript = redis.NewScript(luaCommon + `
local due = redis.call('ZRANGEBYSCORE', DELAYED, '-inf', now, 'LIMIT', 0, 1000)
for _, id in ipairs(due) do
  redis.call('ZREM', DELAYED, id)
  if redis.call('HGET', jobkey(id), 'state') == 'pending' then
    redis.call('HSET', jobkey(id), 'entry', redis.call('XADD', STREAM, '*', 'id', id))
  end
end
return #due
`)

// deliverScript leases the jobs behind entries just read or claimed by this
// consumer. ARGV[6] visibility ms, then entry, id pairs. An entry that is not
// its job's current one (the job finished, was dropped, or went back in the
// stream) is dropped; a job whose lease expired on its last try is dead.
// Returns {id, body, tries, reason, lease until} for each job leased.
var deliverScript = redis.NewScript(luaCommon + `
local vis = tonumber(ARGV[6])
local out = {}
for i = 7, #ARGV, 2 do
  local entry, id = ARGV[i], ARGV[i+1]
  local j = redis.call('HMGET', jobkey(id), 'state', 'tries', 'entry', 'body', 'reason')
  local state, tries = j[1], tonumber(j[2])
  if not state or j[3] ~= entry or state == 'done' or state == 'dead' then
    drop(entry)
  elseif state == 'leased' and tries >= MAXTRIES then
    redis.call('HSET', jobkey(id), 'state', 'dead', 'reason', 'lease_expired', 'entry', '')
    redis.call('ZREM', LEASED, id)
    drop(entry)
    move('leased', 'dead')
    bury(id, 'lease_expired')
    finish(id)
  else
    tries = tries + 1
    redis.call('HSET', jobkey(id), 'state', 'leased', 'tries', tries, 'lease_until', now + vis)
    redis.call('ZADD', LEASED, now + vis, id)
    if state ~= 'leased' then move(state, 'leased') end
    table.insert(out, {id, j[4], tries, j[5], now + vis})
  end
end
return out
`)

// completeScript: ARGV[6] id. Returns -1 for a job not held, 0 if it was
// done already, 1.
var completeScript = redis.NewScript(luaCommon + `
local id = ARGV[6]
local j = redis.call('HMGET', jobkey(id), 'state', 'entry')
if not j[1] then return -1 end
if j[1] == 'done' then return 0 end
redis.call('HSET', jobkey(id), 'state', 'done', 'entry', '')
drop(j[2])
redis.call('ZREM', LEASED, id)
redis.call('ZREM', DELAYED, id)
if j[1] == 'dead' then
  move('dead', 'done')
  return 1
end
move(j[1], 'done')
finish(id)
return 1
`)

// failScript: ARGV[6] id, ARGV[7] reason, ARGV[8] retry in ms. Returns -1
// for a job not held, 1 if the job is dead, 0 if it waits for its retry.
var failScript = redis.NewScript(luaCommon + `
local id = ARGV[6]
local j = redis.call('HMGET', jobkey(id), 'state', 'entry', 'tries')
if not j[1] then return -1 end
if j[1] == 'done' then return 0 end
if j[1] == 'dead' then return 1 end
drop(j[2])
redis.call('ZREM', LEASED, id)
if tonumber(j[3]) >= MAXTRIES then
  redis.call('HSET', jobkey(id), 'state', 'dead', 'reason', ARGV[7], 'entry', '')
  move(j[1], 'dead')
  bury(id, ARGV[7])
  finish(id)
  return 1
end
local due = now + tonumber(ARGV[8])
redis.call('HSET', jobkey(id), 'state', 'pending', 'reason', ARGV[7], 'entry', '', 'not_before', due)
redis.call('ZADD', DELAYED, due, id)
if j[1] ~= 'pending' then move(j[1], 'pending') end
return 0
`)

// countsScript returns pending, leased, done, dead, pruned and the leased
// jobs whose lease has expired.
var countsScript = redis.NewScript(luaCommon + `
return {count('pending'), count('leased'), count('done'), count('dead'), count('pruned'),
  redis.call('ZCOUNT', LEASED, '-inf', now)}
`)

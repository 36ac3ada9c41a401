package queue

import "github.com/redis/go-redis/v9"

// The scripts of Stream. Each is one atomic step on Redis's clock; a job's
// hash is ARGV[1] .. 'job:' .. id, in the same hash slot as KEYS (the
// {prefix} tag), so they also run on a cluster.

const luaNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function move(counts, from, to)
  if from then redis.call('HINCRBY', counts, from, -1) end
  redis.call('HINCRBY', counts, to, 1)
end
local function drop(stream, group, entry)
  if entry and entry ~= '' then
    redis.call('XACK', stream, group, entry)
    redis.call('XDEL', stream, entry)
  end
end
`

// enqueueScript: KEYS stream, counts; ARGV prefix, then id, body pairs.
var enqueueScript = redis.NewScript(luaNow + `
for i = 2, #ARGV, 2 do
  local key = ARGV[1] .. 'job:' .. ARGV[i]
  if redis.call('EXISTS', key) == 0 then
    local entry = redis.call('XADD', KEYS[1], '*', 'id', ARGV[i])
    redis.call('HSET', key, 'body', ARGV[i+1], 'state', 'pending', 'tries', 0, 'reason', '',
      'entry', entry, 'not_before', 0, 'lease_until', 0)
    move(KEYS[2], nil, 'pending')
  end
end
return 0
`)

// promoteScript puts failed jobs whose retry is due back in the stream.
// KEYS delayed, stream; ARGV prefix.
var promoteScript = redis.NewScript(luaNow + `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 1000)
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  local key = ARGV[1] .. 'job:' .. id
  if redis.call('HGET', key, 'state') == 'pending' then
    redis.call('HSET', key, 'entry', redis.call('XADD', KEYS[2], '*', 'id', id))
  end
end
return #due
`)

// deliverScript leases the jobs behind entries just read or claimed by this
// consumer. KEYS stream, leased, counts; ARGV prefix, group, visibility ms,
// max tries, then entry, id pairs. An entry that is not its job's current
// one (the job finished, or went back in the stream) is dropped; a job whose
// lease expired on its last try is dead. Returns {id, body, tries, reason,
// lease until} for each job leased.
var deliverScript = redis.NewScript(luaNow + `
local vis, max = tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {}
for i = 5, #ARGV, 2 do
  local entry, id = ARGV[i], ARGV[i+1]
  local key = ARGV[1] .. 'job:' .. id
  local j = redis.call('HMGET', key, 'state', 'tries', 'entry', 'body', 'reason')
  local state, tries = j[1], tonumber(j[2])
  if not state or j[3] ~= entry or state == 'done' or state == 'dead' then
    drop(KEYS[1], ARGV[2], entry)
  elseif state == 'leased' and tries >= max then
    redis.call('HSET', key, 'state', 'dead', 'reason', 'lease_expired')
    redis.call('ZREM', KEYS[2], id)
    drop(KEYS[1], ARGV[2], entry)
    move(KEYS[3], 'leased', 'dead')
  else
    tries = tries + 1
    redis.call('HSET', key, 'state', 'leased', 'tries', tries, 'lease_until', now + vis)
    redis.call('ZADD', KEYS[2], now + vis, id)
    if state ~= 'leased' then move(KEYS[3], state, 'leased') end
    table.insert(out, {id, j[4], tries, j[5], now + vis})
  end
end
return out
`)

// completeScript: KEYS stream, leased, delayed, counts; ARGV prefix, group,
// id. Returns -1 for an unknown job, 0 if it was done already, 1.
var completeScript = redis.NewScript(luaNow + `
local key = ARGV[1] .. 'job:' .. ARGV[3]
local j = redis.call('HMGET', key, 'state', 'entry')
if not j[1] then return -1 end
if j[1] == 'done' then return 0 end
redis.call('HSET', key, 'state', 'done', 'entry', '')
drop(KEYS[1], ARGV[2], j[2])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[3])
move(KEYS[4], j[1], 'done')
return 1
`)

// failScript: KEYS stream, leased, delayed, counts; ARGV prefix, group, id,
// reason, retry in ms, max tries. Returns -1 for an unknown job, 1 if the
// job is dead, 0 if it waits for its retry.
var failScript = redis.NewScript(luaNow + `
local key = ARGV[1] .. 'job:' .. ARGV[3]
local j = redis.call('HMGET', key, 'state', 'entry', 'tries')
if not j[1] then return -1 end
if j[1] == 'done' then return 0 end
if j[1] == 'dead' then return 1 end
drop(KEYS[1], ARGV[2], j[2])
redis.call('ZREM', KEYS[2], ARGV[3])
if tonumber(j[3]) >= tonumber(ARGV[6]) then
  redis.call('HSET', key, 'state', 'dead', 'reason', ARGV[4], 'entry', '')
  move(KEYS[4], j[1], 'dead')
  return 1
end
local due = now + tonumber(ARGV[5])
redis.call('HSET', key, 'state', 'pending', 'reason', ARGV[4], 'entry', '', 'not_before', due)
redis.call('ZADD', KEYS[3], due, ARGV[3])
if j[1] ~= 'pending' then move(KEYS[4], j[1], 'pending') end
return 0
`)

// countsScript: KEYS counts, leased. Returns pending, leased, done, dead and
// the leased jobs whose lease has expired.
var countsScript = redis.NewScript(luaNow + `
local c = redis.call('HMGET', KEYS[1], 'pending', 'leased', 'done', 'dead')
return {tonumber(c[1] or 0), tonumber(c[2] or 0), tonumber(c[3] or 0), tonumber(c[4] or 0),
  redis.call('ZCOUNT', KEYS[2], '-inf', now)}
`)

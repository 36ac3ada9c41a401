package queue

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stream is a Queue in Redis that every process shares: job IDs go through
// a Redis stream read by one consumer group, so each job is delivered to one
// process at a time, and any process drains it. A delivered job sits in its
// consumer's pending list until Complete or Fail; when that consumer dies,
// another one takes the job over with XAUTOCLAIM once it has been idle for
// the visibility timeout. Nothing is lost; delivery is at least once, and
// Complete is idempotent, so the effect is once.
//
// Each job's state (body, tries, last reason) is a hash beside the stream,
// and every change of state is one Lua script, on Redis's clock. It is
// bounded like Bolt: at most MaxOpen open jobs and KeepFinished finished
// ones, each at most MaxIDBytes + MaxBodyBytes. The queue is as durable as
// the Redis server: run that with appendonly yes.
type Stream struct {
	rdb      redis.UniversalClient
	group    string
	consumer string
	limits   Limits
	prefix   string   // of each job's hash: prefix + "job:" + ID
	keys     []string // the keys every script gets (stream_scripts.go)
	owners   string   // an owner's value is at owners + ":" + its ID
}

// StreamConfig holds a Stream's settings; a zero field takes its default.
// Every process sharing a queue uses the same Prefix, Group and Limits, and
// its own Consumer.
type StreamConfig struct {
	Prefix   string // keys are "{Prefix}:jobs:…", the same hash slot as the quota's; default "quoteflow"
	Group    string // the consumer group; default "compensation"
	Consumer string // this process in the group; default host-pid-random
	Limits   Limits // zero fields take their defaults, as for Bolt
}

// NewStream returns a Queue in the Redis server behind rdb, creating its
// consumer group if there is none. It forgets consumers that left nothing
// behind and have been idle for an hour (processes that have stopped).
func NewStream(ctx context.Context, rdb redis.UniversalClient, cfg StreamConfig) (*Stream, error) {
	lim := cfg.Limits
	if lim.MaxTries < 0 || lim.KeepFinished < 0 || lim.MaxOpen < 0 {
		return nil, errors.New("queue: Limits must not be negative")
	}
	lim.MaxTries = cmp.Or(lim.MaxTries, DefaultMaxTries)
	lim.KeepFinished = cmp.Or(lim.KeepFinished, DefaultKeepFinished)
	lim.MaxOpen = cmp.Or(lim.MaxOpen, DefaultMaxOpen)
	tag := "{" + cmp.Or(cfg.Prefix, "quoteflow") + "}:"
	p := tag + "jobs:"
	q := &Stream{
		rdb:      rdb,
		group:    cmp.Or(cfg.Group, "compensation"),
		consumer: cmp.Or(cfg.Consumer, defaultConsumer()),
		limits:   lim,
		prefix:   p,
		keys: []string{p + "stream", p + "delayed", p + "leased", p + "counts", p + "finished", p + "ids",
			tag + "owners:", tag + "owners"},
		owners: tag + "owners",
	}
	if err := q.createGroup(ctx); err != nil {
		return nil, err
	}
	q.forgetIdleConsumers(ctx)
	return q, nil
}

func defaultConsumer() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", cmp.Or(host, "host"), os.Getpid(), hex.EncodeToString(b))
}

// Consumer is this process's name in the group.
func (q *Stream) Consumer() string { return q.consumer }

// Client is the Redis client the queue uses.
func (q *Stream) Client() redis.UniversalClient { return q.rdb }

func (q *Stream) stream() string { return q.keys[0] }

// createGroup makes the group (and the stream), reading from the start.
func (q *Stream) createGroup(ctx context.Context) error {
	err := q.rdb.XGroupCreateMkStream(ctx, q.stream(), q.group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") { // it exists: fine
		return fmt.Errorf("queue: creating consumer group %q: %w", q.group, err)
	}
	return nil
}

func (q *Stream) forgetIdleConsumers(ctx context.Context) {
	consumers, err := q.rdb.XInfoConsumers(ctx, q.stream(), q.group).Result()
	if err != nil {
		return
	}
	for _, c := range consumers {
		if c.Pending == 0 && c.Idle > time.Hour && c.Name != q.consumer {
			q.rdb.XGroupDelConsumer(ctx, q.stream(), q.group, c.Name)
		}
	}
}

// run runs script with the keys and arguments every script gets, then
// extraKeys and args.
func (q *Stream) run(ctx context.Context, script *redis.Script, extraKeys []string, args ...any) *redis.Cmd {
	keys := append(slices.Clip(q.keys), extraKeys...)
	all := append([]any{q.prefix, q.group, q.limits.MaxTries, q.limits.KeepFinished, q.limits.MaxOpen}, args...)
	return script.Run(ctx, q.rdb, keys, all...)
}

// Owner is a record stored beside its jobs, such as the basket they are
// for: EnqueueWith writes it and its jobs in one script, both or neither.
// Owners are kept in the order they were first stored; past Keep, the
// oldest is dropped with its jobs (those whose ID starts with its ID + "/").
// When one of its jobs dies, the script that marks it dead also records it
// beside the owner (DeadKey), so the owner learns it in the same step.
type Owner struct {
	ID    string
	Value []byte
	Keep  int // owners kept at most (≥ 1)
	// IfAbsent writes nothing (ErrOwnerExists) when the owner is stored
	// already, unless its stored value is IfValue (compare and swap).
	IfAbsent bool
	IfValue  []byte
}

// ErrOwnerExists is returned by EnqueueWith with IfAbsent for an owner
// that is stored already (with another value than IfValue).
var ErrOwnerExists = errors.New("queue: owner stored already")

// ErrTooLate (with ErrUnavailable) says a write reached Redis after its
// caller's deadline, less landMargin, and was not made: Redis said so.
var ErrTooLate = errors.New("queue: the write reached Redis after its deadline and was not made")

// landMargin is how long before its caller's deadline a write must reach
// Redis to be made: a write made just before the deadline may be answered
// just after it, and the caller would report as lost a write that landed.
const landMargin = 100 * time.Millisecond

// Enqueue adds jobs as pending (see Queue), all in one script or none.
func (q *Stream) Enqueue(ctx context.Context, jobs ...Job) error {
	if len(jobs) == 0 {
		return nil
	}
	return q.put(ctx, Owner{}, jobs)
}

// EnqueueWith stores o and enqueues jobs in one script: what Bolt's
// EnqueueTx is to a transaction. Nothing is written when the jobs would
// pass MaxOpen (ErrFull) or one is too large (ErrTooLarge). Read an owner's
// value at OwnerKey(o.ID).
func (q *Stream) EnqueueWith(ctx context.Context, o Owner, jobs ...Job) error {
	if o.ID == "" || o.Keep < 1 {
		return errors.New("queue: EnqueueWith needs an owner ID and Keep ≥ 1")
	}
	return q.put(ctx, o, jobs)
}

// OwnerKey is the Redis key of an owner's value, for GET and WATCH.
func (q *Stream) OwnerKey(id string) string { return q.owners + ":" + id }

// DeadKey is the Redis hash of an owner's dead jobs: the rest of each job's
// ID after the owner's ID and "/" → the job's last reason.
func (q *Stream) DeadKey(id string) string { return q.OwnerKey(id) + ":dead" }

// put runs putScript. With a deadline on ctx, the script writes nothing
// when it reaches Redis later than landMargin before it (ErrUnavailable):
// Redis stalled with the command in its queue runs it when it resumes, and
// it must not land after the caller was told it did not.
func (q *Stream) put(ctx context.Context, o Owner, jobs []Job) error {
	var notAfter int64
	if d, ok := ctx.Deadline(); ok {
		notAfter = d.Add(-landMargin).UnixMilli()
	}
	mode := ""
	if o.IfAbsent {
		mode = "absent"
	}
	args := []any{o.ID, o.Value, o.Keep, notAfter, mode, o.IfValue}
	for _, j := range jobs {
		if len(j.ID) > MaxIDBytes || len(j.Body) > MaxBodyBytes {
			return fmt.Errorf("%w: %d-byte ID, %d-byte body (at most %d and %d)", ErrTooLarge, len(j.ID), len(j.Body), MaxIDBytes, MaxBodyBytes)
		}
		var notBefore int64 // none: due now
		if !j.NotBefore.IsZero() {
			notBefore = ceilMilli(j.NotBefore)
		}
		args = append(args, j.ID, j.Body, notBefore)
	}
	res, err := q.run(ctx, putScript, nil, args...).Int64Slice()
	if err != nil {
		return wrap(err)
	}
	switch res[0] {
	case 1:
		return fmt.Errorf("%w: %d jobs waiting", ErrFull, res[1])
	case 2:
		return fmt.Errorf("%w: %w", ErrUnavailable, ErrTooLate)
	case 3:
		return ErrOwnerExists
	}
	return nil
}

// Lease hands out up to n due jobs (see Queue): first those whose consumer
// has held them longer than visibility (XAUTOCLAIM), then new ones
// (XREADGROUP). A job whose lease expired on its last try becomes dead.
func (q *Stream) Lease(ctx context.Context, n int, visibility time.Duration) ([]Job, error) {
	if n <= 0 {
		return nil, nil
	}
	if err := q.run(ctx, promoteScript, nil).Err(); err != nil {
		return nil, wrap(err)
	}
	entries, err := q.claim(ctx, n, visibility)
	if err != nil {
		return nil, err
	}
	if len(entries) < n {
		fresh, err := q.read(ctx, n-len(entries))
		if err != nil {
			return nil, err
		}
		entries = append(entries, fresh...)
	}
	if len(entries) == 0 {
		return nil, nil
	}
	args := []any{visibility.Milliseconds()}
	for _, e := range entries {
		id, _ := e.Values["id"].(string)
		args = append(args, e.ID, id)
	}
	res, err := q.run(ctx, deliverScript, nil, args...).Slice()
	if err != nil {
		return nil, wrap(err)
	}
	jobs := make([]Job, 0, len(res))
	for _, r := range res {
		f := r.([]any)
		jobs = append(jobs, Job{ID: f[0].(string), Body: []byte(f[1].(string)), Tries: int(f[2].(int64)),
			LastReason: f[3].(string), State: Leased, LeaseUntil: time.UnixMilli(f[4].(int64))})
	}
	return jobs, nil
}

// claim takes over up to n entries idle for at least visibility.
func (q *Stream) claim(ctx context.Context, n int, visibility time.Duration) ([]redis.XMessage, error) {
	var out []redis.XMessage
	start := "0-0"
	for len(out) < n {
		msgs, next, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: q.stream(), Group: q.group,
			Consumer: q.consumer, MinIdle: visibility, Start: start, Count: int64(n - len(out))}).Result()
		if isNoGroup(err) {
			return nil, q.createGroup(ctx) // the store lost its data: nothing to claim
		}
		if err != nil {
			return nil, wrap(err)
		}
		out = append(out, msgs...)
		if next == "0-0" {
			break
		}
		start = next
	}
	return out, nil
}

// read takes up to n entries never delivered, without blocking.
func (q *Stream) read(ctx context.Context, n int) ([]redis.XMessage, error) {
	args := &redis.XReadGroupArgs{Group: q.group, Consumer: q.consumer,
		Streams: []string{q.stream(), ">"}, Count: int64(n), Block: -1}
	streams, err := q.rdb.XReadGroup(ctx, args).Result()
	if isNoGroup(err) {
		if err := q.createGroup(ctx); err != nil {
			return nil, err
		}
		streams, err = q.rdb.XReadGroup(ctx, args).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, wrap(err)
	}
	var out []redis.XMessage
	for _, s := range streams {
		out = append(out, s.Messages...)
	}
	return out, nil
}

// Complete marks a job done and takes it out of the stream (see Queue).
func (q *Stream) Complete(ctx context.Context, id string) error {
	n, err := q.run(ctx, completeScript, nil, id).Int64()
	if err != nil {
		return wrap(err)
	}
	if n < 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return nil
}

// ceilMilli is t in Unix milliseconds, rounded up: a job is never due
// before its NotBefore (Redis compares whole milliseconds).
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// Fail records why a try failed (see Queue). A late report about a job that
// is done or dead changes nothing.
func (q *Stream) Fail(ctx context.Context, id, reason string, retryIn time.Duration) (bool, error) {
	// The script adds the delay to Redis's clock, in whole milliseconds cut
	// down: a delay is rounded up and given that millisecond back, so the
	// job is never due before retryIn has passed.
	var delay int64
	if retryIn > 0 {
		delay = (retryIn + 2*time.Millisecond - 1).Milliseconds()
	}
	n, err := q.run(ctx, failScript, nil, id, reason, delay).Int64()
	if err != nil {
		return false, wrap(err)
	}
	if n < 0 {
		return false, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return n == 1, nil
}

// Counts counts the jobs by state; a leased job whose lease has expired
// counts as pending (its worker is gone: it will be delivered again).
func (q *Stream) Counts(ctx context.Context) (Counts, error) {
	res, err := q.run(ctx, countsScript, nil).Int64Slice()
	if err != nil {
		return Counts{}, wrap(err)
	}
	return Counts{Pending: int(res[0] + res[5]), Leased: int(res[1] - res[5]), Done: int(res[2]),
		Dead: int(res[3]), Pruned: int(res[4])}, nil
}

// Get returns one job as stored.
func (q *Stream) Get(ctx context.Context, id string) (Job, error) {
	h, err := q.rdb.HGetAll(ctx, q.prefix+"job:"+id).Result()
	if err != nil {
		return Job{}, wrap(err)
	}
	if len(h) == 0 {
		return Job{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	tries, _ := strconv.Atoi(h["tries"])
	nb, _ := strconv.ParseInt(h["not_before"], 10, 64)
	lu, _ := strconv.ParseInt(h["lease_until"], 10, 64)
	return Job{ID: id, Body: []byte(h["body"]), Tries: tries, LastReason: h["reason"], State: State(h["state"]),
		NotBefore: time.UnixMilli(nb), LeaseUntil: time.UnixMilli(lu)}, nil
}

// isNoGroup: the group is gone (Redis restarted empty, or someone deleted it).
func isNoGroup(err error) bool { return redis.HasErrorPrefix(err, "NOGROUP") }

// ErrUnavailable wraps every failure of a Stream's round trip to Redis.
var ErrUnavailable = errors.New("queue: redis")

func wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

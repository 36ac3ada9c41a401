package queue

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
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
// and every change of state is one Lua script, on Redis's clock. The queue
// is as durable as the Redis server: run it with appendonly yes.
type Stream struct {
	rdb      redis.Cmdable
	group    string
	consumer string
	maxTries int
	prefix   string // of each job's hash: prefix + "job:" + ID
	stream   string // the job IDs to deliver, read by the group
	delayed  string // sorted set: failed jobs waiting for their retry, by due time
	leased   string // sorted set: delivered jobs, by lease expiry (for Counts)
	counts   string // hash: jobs per state
}

// StreamConfig holds a Stream's settings; a zero field takes its default.
// Every process sharing a queue uses the same Prefix, Group and MaxTries, and
// its own Consumer.
type StreamConfig struct {
	Prefix   string // keys are "{Prefix}:jobs:…", the same hash slot as the quota's
	Group    string // the consumer group; default "compensation"
	Consumer string // this process in the group; default host-pid-random
	MaxTries int    // deliveries before a job is dead; default DefaultMaxTries
}

// NewStream returns a Queue in the Redis server behind rdb, creating its
// consumer group if there is none. It forgets consumers that left nothing
// behind and have been idle for an hour (processes that have stopped).
func NewStream(ctx context.Context, rdb redis.Cmdable, cfg StreamConfig) (*Stream, error) {
	if cfg.MaxTries < 0 {
		return nil, errors.New("queue: MaxTries must not be negative")
	}
	p := "{" + cmp.Or(cfg.Prefix, "quoteflow") + "}:jobs:"
	q := &Stream{
		rdb:      rdb,
		group:    cmp.Or(cfg.Group, "compensation"),
		consumer: cmp.Or(cfg.Consumer, defaultConsumer()),
		maxTries: cmp.Or(cfg.MaxTries, DefaultMaxTries),
		prefix:   p,
		stream:   p + "stream",
		delayed:  p + "delayed",
		leased:   p + "leased",
		counts:   p + "counts",
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

// createGroup makes the group (and the stream), reading from the start.
func (q *Stream) createGroup(ctx context.Context) error {
	err := q.rdb.XGroupCreateMkStream(ctx, q.stream, q.group, "0").Err()
	if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") { // it exists: fine
		return fmt.Errorf("queue: creating consumer group %q: %w", q.group, err)
	}
	return nil
}

func (q *Stream) forgetIdleConsumers(ctx context.Context) {
	consumers, err := q.rdb.XInfoConsumers(ctx, q.stream, q.group).Result()
	if err != nil {
		return
	}
	for _, c := range consumers {
		if c.Pending == 0 && c.Idle > time.Hour && c.Name != q.consumer {
			q.rdb.XGroupDelConsumer(ctx, q.stream, q.group, c.Name)
		}
	}
}

// Enqueue adds jobs as pending; a job whose ID is already held, in any state,
// is left as it is. All of them are added in one script, or none.
func (q *Stream) Enqueue(ctx context.Context, jobs ...Job) error {
	if len(jobs) == 0 {
		return nil
	}
	args := []any{q.prefix}
	for _, j := range jobs {
		args = append(args, j.ID, j.Body)
	}
	return wrap(enqueueScript.Run(ctx, q.rdb, []string{q.stream, q.counts}, args...).Err())
}

// Lease hands out up to n due jobs (see Queue): first those whose consumer
// has held them longer than visibility (XAUTOCLAIM), then new ones
// (XREADGROUP). A job whose lease expired on its last try becomes dead.
func (q *Stream) Lease(ctx context.Context, n int, visibility time.Duration) ([]Job, error) {
	if n <= 0 {
		return nil, nil
	}
	if err := promoteScript.Run(ctx, q.rdb, []string{q.delayed, q.stream}, q.prefix).Err(); err != nil {
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
	args := []any{q.prefix, q.group, visibility.Milliseconds(), q.maxTries}
	for _, e := range entries {
		id, _ := e.Values["id"].(string)
		args = append(args, e.ID, id)
	}
	res, err := deliverScript.Run(ctx, q.rdb, []string{q.stream, q.leased, q.counts}, args...).Slice()
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
		msgs, next, err := q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: q.stream, Group: q.group,
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
		Streams: []string{q.stream, ">"}, Count: int64(n), Block: -1}
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

// Complete marks a job done and takes it out of the stream; completing a
// done job again is a no-op. ErrNotFound for an ID never enqueued.
func (q *Stream) Complete(ctx context.Context, id string) error {
	n, err := completeScript.Run(ctx, q.rdb, []string{q.stream, q.leased, q.delayed, q.counts},
		q.prefix, q.group, id).Int64()
	if err != nil {
		return wrap(err)
	}
	if n < 0 {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return nil
}

// Fail records why a try failed (see Queue). A late report about a job that
// is done or dead changes nothing.
func (q *Stream) Fail(ctx context.Context, id, reason string, retryIn time.Duration) (bool, error) {
	n, err := failScript.Run(ctx, q.rdb, []string{q.stream, q.leased, q.delayed, q.counts},
		q.prefix, q.group, id, reason, retryIn.Milliseconds(), q.maxTries).Int64()
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
	res, err := countsScript.Run(ctx, q.rdb, []string{q.counts, q.leased}).Int64Slice()
	if err != nil {
		return Counts{}, wrap(err)
	}
	return Counts{Pending: int(res[0] + res[4]), Leased: int(res[1] - res[4]), Done: int(res[2]), Dead: int(res[3])}, nil
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

func wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("queue: redis: %w", err)
}

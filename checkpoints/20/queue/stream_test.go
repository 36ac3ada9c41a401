package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"quoteflowlab.dev/checkpoints/20/internal/redistest"
)

// streams returns n Stream queues on one real redis-server, each with its own
// client and consumer name: n processes sharing one queue.
func streams(t *testing.T, s *redistest.Server, n int) []*Stream {
	t.Helper()
	return streamsWith(t, s, n, Limits{MaxTries: 3})
}

func streamsWith(t *testing.T, s *redistest.Server, n int, lim Limits) []*Stream {
	t.Helper()
	qs := make([]*Stream, n)
	for i := range qs {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr, DisableIdentity: true,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
		t.Cleanup(func() { rdb.Close() })
		q, err := NewStream(context.Background(), rdb, StreamConfig{Consumer: fmt.Sprintf("process-%d", i), Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		qs[i] = q
	}
	return qs
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Enqueue is idempotent by ID; Lease hands a job to one consumer; Complete
// is idempotent; Counts follows.
func TestStreamLifecycle(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	q := streams(t, redistest.Start(t), 1)[0]
	job := Job{ID: "b1/0/boreal", Body: []byte(`{"sku":"KB-001"}`)}
	if err := q.Enqueue(ctx, job, job); err != nil {
		t.Fatal(err)
	}
	q.Enqueue(ctx, job)
	wantCounts(t, q, Counts{Pending: 1})
	jobs, err := q.Lease(ctx, 10, time.Minute)
	if err != nil || len(jobs) != 1 || jobs[0].ID != job.ID || string(jobs[0].Body) != string(job.Body) || jobs[0].Tries != 1 {
		t.Fatalf("Lease = %+v, %v; want the one job, on its first try", jobs, err)
	}
	wantCounts(t, q, Counts{Leased: 1})
	if again, _ := q.Lease(ctx, 10, time.Minute); len(again) != 0 {
		t.Errorf("a leased job was delivered again within its visibility: %+v", again)
	}
	for range 2 {
		if err := q.Complete(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
	}
	wantCounts(t, q, Counts{Done: 1})
	q.Enqueue(ctx, job) // a done job stays done
	if again, _ := q.Lease(ctx, 10, 0); len(again) != 0 {
		t.Errorf("a done job was delivered again: %+v", again)
	}
	wantCounts(t, q, Counts{Done: 1})
	if err := q.Complete(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Complete of an unknown job = %v, want ErrNotFound", err)
	}
}

// A consumer that dies holding a job loses nothing: after the visibility
// timeout another process takes it over (XAUTOCLAIM) and finishes it; the
// dead one's late word changes nothing.
func TestStreamDeadConsumersJobIsClaimed(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	qs := streams(t, redistest.Start(t), 2)
	const visibility = 300 * time.Millisecond
	qs[0].Enqueue(ctx, Job{ID: "j1"}, Job{ID: "j2"})
	leasedAt := time.Now() // the idle time starts inside Lease, after this
	held, err := qs[0].Lease(ctx, 10, visibility)
	if err != nil || len(held) != 2 {
		t.Fatalf("first consumer leased %+v, %v; want both jobs", held, err)
	}
	// process-0 dies here, holding both.
	if got, _ := qs[1].Lease(ctx, 10, visibility); len(got) != 0 {
		t.Fatalf("the other process got %v while the first one's lease ran", got)
	}
	var got []Job
	for len(got) < 2 && time.Since(leasedAt) < 10*visibility {
		jobs, err := qs[1].Lease(ctx, 10, visibility)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, jobs...)
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(leasedAt); took < visibility {
		t.Errorf("the jobs were taken over %s after the lease, before the visibility timeout %s", took, visibility)
	}
	if len(got) != 2 || got[0].Tries != 2 {
		t.Fatalf("taken over: %+v; want both jobs, on their second try", got)
	}
	wantCounts(t, qs[1], Counts{Leased: 2})
	for _, j := range got {
		if err := qs[1].Complete(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	// The first process was only slow after all: its late reports change nothing.
	qs[0].Complete(ctx, "j1")
	if dead, err := qs[0].Fail(ctx, "j2", "timeout", 0); err != nil || dead {
		t.Errorf("a late Fail of a done job = %v, %v; want no change", dead, err)
	}
	wantCounts(t, qs[0], Counts{Done: 2})
	if j, _ := qs[0].Get(ctx, "j2"); j.State != Done {
		t.Errorf("j2 is %s after a late Fail, want done", j.State)
	}
}

// Fail puts a job back after its retry delay, not before; at its last try it
// is dead with its reason, and so is a job whose lease ran out on its last try.
func TestStreamFailRetryAndDead(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	q := streams(t, redistest.Start(t), 1)[0] // MaxTries 3
	q.Enqueue(ctx, Job{ID: "f"})
	for try := 1; try <= 3; try++ {
		jobs, _ := q.Lease(ctx, 1, time.Minute)
		for len(jobs) == 0 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
			jobs, _ = q.Lease(ctx, 1, time.Minute)
		}
		if len(jobs) == 0 {
			t.Fatalf("try %d: never delivered again", try)
		}
		if jobs[0].ID != "f" || jobs[0].Tries != try {
			t.Fatalf("try %d: leased %+v", try, jobs[0])
		}
		failed := time.Now()
		dead, err := q.Fail(ctx, "f", "http_5xx", 150*time.Millisecond)
		if err != nil || dead != (try == 3) {
			t.Fatalf("Fail on try %d = %v, %v", try, dead, err)
		}
		if try < 3 {
			if early, _ := q.Lease(ctx, 1, time.Minute); len(early) != 0 && early[0].ID == "f" && time.Since(failed) < 150*time.Millisecond {
				t.Fatalf("delivered again %s after Fail, before its retry delay", time.Since(failed))
			}
		}
	}
	if j, _ := q.Get(ctx, "f"); j.State != Dead || j.LastReason != "http_5xx" {
		t.Errorf("after 3 failed tries: %s with reason %q, want dead with http_5xx", j.State, j.LastReason)
	}
	// "e": leased three times by workers that never came back.
	q.Enqueue(ctx, Job{ID: "e"})
	for try := 1; try <= 3; try++ {
		var jobs []Job
		for len(jobs) == 0 && ctx.Err() == nil {
			jobs, _ = q.Lease(ctx, 1, 30*time.Millisecond)
			time.Sleep(10 * time.Millisecond)
		}
		if len(jobs) == 0 {
			t.Fatalf("lease %d: never delivered again", try)
		}
		if jobs[0].ID != "e" || jobs[0].Tries != try {
			t.Fatalf("lease %d: %+v", try, jobs[0])
		}
	}
	time.Sleep(50 * time.Millisecond)
	if jobs, _ := q.Lease(ctx, 1, 30*time.Millisecond); len(jobs) != 0 {
		t.Errorf("delivered a 4th time: %+v", jobs)
	}
	if j, _ := q.Get(ctx, "e"); j.State != Dead || j.LastReason != "lease_expired" {
		t.Errorf("after its last lease expired: %s with %q, want dead with lease_expired", j.State, j.LastReason)
	}
	wantCounts(t, q, Counts{Dead: 2})
}

// Three processes drain one queue together: every job is done once, none
// is delivered to two of them at once.
func TestStreamDrainsFromEveryProcess(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	qs := streams(t, redistest.Start(t), 3)
	var jobs []Job
	for i := range 60 {
		jobs = append(jobs, Job{ID: fmt.Sprintf("b/%d/atlas", i)})
	}
	qs[0].Enqueue(ctx, jobs...)
	var mu sync.Mutex
	seen := map[string]int{}
	byProcess := make([]int, 3)
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Go(func() {
			for ctx.Err() == nil {
				got, err := q.Lease(ctx, 4, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				for _, j := range got {
					mu.Lock()
					seen[j.ID]++
					byProcess[i]++
					mu.Unlock()
					time.Sleep(time.Millisecond)
					q.Complete(ctx, j.ID)
				}
			}
		})
	}
	wg.Wait()
	var twice []string
	for id, n := range seen {
		if n != 1 {
			twice = append(twice, id)
		}
	}
	slices.Sort(twice)
	if len(seen) != 60 || len(twice) > 0 {
		t.Errorf("%d of 60 jobs delivered; delivered more than once: %v", len(seen), twice)
	}
	wantCounts(t, qs[2], Counts{Done: 60})
	t.Logf("jobs done per process: %v", byProcess)
}

// The bounds of Bolt hold on Redis too: past MaxOpen an Enqueue fails with
// ErrFull and writes nothing; a job too large is refused; finished jobs past
// KeepFinished are pruned, oldest first, and counted.
func TestStreamIsBoundedInCountAndSize(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	q := streamsWith(t, redistest.Start(t), 1, Limits{MaxTries: 1, MaxOpen: 3, KeepFinished: 10})[0]
	if err := q.Enqueue(ctx, Job{ID: "a"}, Job{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, Job{ID: "c"}, Job{ID: "d"}); !errors.Is(err, ErrFull) {
		t.Errorf("a fourth open job = %v, want ErrFull", err)
	}
	wantCounts(t, q, Counts{Pending: 2}) // all of the refused Enqueue or none of it
	if _, err := q.Get(ctx, "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a job of the refused Enqueue was written: %v", err)
	}
	for _, j := range []Job{{ID: strings.Repeat("x", MaxIDBytes+1)}, {ID: "e", Body: make([]byte, MaxBodyBytes+1)}} {
		if err := q.Enqueue(ctx, j); !errors.Is(err, ErrTooLarge) {
			t.Errorf("a %d-byte ID, %d-byte body = %v, want ErrTooLarge", len(j.ID), len(j.Body), err)
		}
	}
	for _, id := range []string{"a", "b"} {
		q.Lease(ctx, 1, time.Minute)
		q.Complete(ctx, id)
	}
	const n = 25
	for i := range n {
		id := fmt.Sprintf("b/%04d/boreal", i)
		if err := q.Enqueue(ctx, Job{ID: id}); err != nil {
			t.Fatal(err)
		}
		if jobs, err := q.Lease(ctx, 1, time.Minute); err != nil || len(jobs) != 1 || jobs[0].ID != id {
			t.Fatalf("Lease: %v, %v", jobs, err)
		}
		var err error
		if i%5 == 4 {
			_, err = q.Fail(ctx, id, "http_503", 0) // the only try: dead, finished too
		} else {
			err = q.Complete(ctx, id)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	wantCounts(t, q, Counts{Done: 8, Dead: 2, Pruned: n + 2 - 10})
	if _, err := q.Get(ctx, "b/0000/boreal"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the oldest done job is still held (%v): finished jobs must be pruned, oldest first", err)
	}
	if j, err := q.Get(ctx, fmt.Sprintf("b/%04d/boreal", n-1)); err != nil || j.State != Dead {
		t.Errorf("the newest finished job = %+v, %v; want it kept, dead", j, err)
	}
	if err := q.Complete(ctx, "b/0000/boreal"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Complete of a pruned job = %v, want ErrNotFound", err)
	}
}

// EnqueueWith writes an owner and its jobs in one script; past Keep the
// oldest owner goes with its jobs, whatever their state, making room.
func TestStreamOwnersAreDroppedWithTheirJobs(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	q := streamsWith(t, redistest.Start(t), 1, Limits{MaxOpen: 4})[0]
	put := func(owner string, jobs ...string) error {
		var js []Job
		for _, id := range jobs {
			js = append(js, Job{ID: owner + "/" + id})
		}
		return q.EnqueueWith(ctx, Owner{ID: owner, Value: []byte("basket " + owner), Keep: 2}, js...)
	}
	if err := put("b1", "0/atlas", "1/boreal"); err != nil {
		t.Fatal(err)
	}
	if v, err := q.Client().Get(ctx, q.OwnerKey("b1")).Result(); err != nil || v != "basket b1" {
		t.Fatalf("owner b1 = %q, %v", v, err)
	}
	q.Lease(ctx, 1, time.Minute) // one of b1's jobs is out with a worker
	if err := put("b2", "0/cedar", "1/cedar"); err != nil {
		t.Fatal(err)
	}
	if err := put("b3", "0/boreal", "1/boreal", "2/boreal"); !errors.Is(err, ErrFull) {
		t.Fatalf("b3 with 3 jobs, 4 open and a limit of 4 = %v, want ErrFull", err)
	}
	if _, err := q.Client().Get(ctx, q.OwnerKey("b3")).Result(); err == nil {
		t.Error("the refused owner b3 was written")
	}
	if err := put("b3", "0/boreal", "1/boreal"); err != nil { // b1 goes, with its two jobs: room for two
		t.Fatalf("b3 with 2 jobs, dropping b1's 2 = %v", err)
	}
	if _, err := q.Client().Get(ctx, q.OwnerKey("b1")).Result(); err == nil {
		t.Error("the oldest owner b1 is still held past Keep 2")
	}
	for _, id := range []string{"b1/0/atlas", "b1/1/boreal"} {
		if _, err := q.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("job %s of the dropped owner: %v, want ErrNotFound", id, err)
		}
	}
	wantCounts(t, q, Counts{Pending: 4})
	var got []string
	for _, j := range mustLease(t, q, 10) {
		got = append(got, j.ID)
	}
	slices.Sort(got)
	if want := []string{"b2/0/cedar", "b2/1/cedar", "b3/0/boreal", "b3/1/boreal"}; !slices.Equal(got, want) {
		t.Errorf("delivered %v, want %v (nothing of b1)", got, want)
	}
}

// Redis restarted empty (no persistence): the queue recreates its group and
// goes on, rather than failing every pass with NOGROUP.
func TestStreamRecreatesItsGroupAfterARestart(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	s := redistest.Start(t)
	q := streams(t, s, 1)[0]
	s.Restart()
	var err error
	for range 20 { // the first command after the restart may find the old connection closed
		if _, err = q.Lease(ctx, 1, time.Minute); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("Lease after the restart: %v", err)
	}
	q.Enqueue(ctx, Job{ID: "after"})
	if jobs := mustLease(t, q, 1); len(jobs) != 1 || jobs[0].ID != "after" {
		t.Errorf("after the restart, Lease = %+v", jobs)
	}
}

func mustLease(t *testing.T, q *Stream, n int) []Job {
	t.Helper()
	jobs, err := q.Lease(context.Background(), n, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// A job enqueued with a NotBefore (a supplier's Retry-After) is not
// delivered before it, and is delivered once it is due.
func TestStreamEnqueueHonoursNotBefore(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	q := streams(t, redistest.Start(t), 1)[0]
	const wait = 400 * time.Millisecond
	notBefore := time.Now().Add(wait)
	if err := q.Enqueue(ctx, Job{ID: "later", NotBefore: notBefore}, Job{ID: "now"}); err != nil {
		t.Fatal(err)
	}
	if got := ids(mustLease(t, q, 10)); !slices.Equal(got, []string{"now"}) {
		t.Fatalf("leased at once: %v, want only the job without a NotBefore", got)
	}
	var jobs []Job
	for len(jobs) == 0 && ctx.Err() == nil {
		if jobs = mustLease(t, q, 10); len(jobs) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if at := time.Now(); len(jobs) != 1 || jobs[0].ID != "later" || at.Before(notBefore) {
		t.Fatalf("leased %v at %s before its NotBefore (negative: early), want [later] once due",
			ids(jobs), at.Sub(notBefore))
	}
	wantCounts(t, q, Counts{Leased: 2})
}

// Redis's clock counts whole milliseconds: a NotBefore between two of them
// is stored as the later one, or the job would be due before it
// (TestStreamEnqueueHonoursNotBefore failed now and then by a fraction of a
// millisecond before this).
func TestNotBeforeRoundsUpToTheMillisecond(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	for _, tc := range []struct {
		t    time.Time
		want int64
	}{
		{at, 1_700_000_000_123},
		{at.Add(time.Nanosecond), 1_700_000_000_124},
		{at.Add(999 * time.Microsecond), 1_700_000_000_124},
	} {
		if got := ceilMilli(tc.t); got != tc.want {
			t.Errorf("ceilMilli(%s) = %d, want %d", tc.t.Format(time.StampNano), got, tc.want)
		}
	}
}

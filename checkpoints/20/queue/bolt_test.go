package queue

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a test's hand-moved time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// openQueue opens path as a Bolt queue on clk; the file is closed at cleanup.
func openQueue(t testing.TB, path string, clk *clock) (*Bolt, *bolt.DB) {
	return openQueueWith(t, path, clk, Limits{MaxTries: 5})
}

func openQueueWith(t testing.TB, path string, clk *clock, lim Limits) (*Bolt, *bolt.DB) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	q, err := NewBolt(db, lim)
	if err != nil {
		t.Fatal(err)
	}
	q.now = clk.now
	return q, db
}

func newQueue(t testing.TB) (*Bolt, *clock) {
	clk := &clock{t: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	q, _ := openQueue(t, filepath.Join(t.TempDir(), "q.db"), clk)
	return q, clk
}

func ids(jobs []Job) []string {
	var s []string
	for _, j := range jobs {
		s = append(s, j.ID)
	}
	return s
}

func wantCounts(t *testing.T, q Queue, want Counts) {
	t.Helper()
	got, err := q.Counts(context.Background())
	if err != nil || got != want {
		t.Errorf("Counts = %+v, %v; want %+v", got, err, want)
	}
}

func TestAJobSurvivesReopeningTheFile(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Now()}
	path := filepath.Join(t.TempDir(), "q.db")
	q, db := openQueue(t, path, clk)
	if err := q.Enqueue(ctx, Job{ID: "b1/0/boreal", Body: []byte(`{"sku":"KB-001"}`)}); err != nil {
		t.Fatal(err)
	}
	db.Close() // what a restart does; kill -9 skips even this, and bbolt has synced already

	q2, _ := openQueue(t, path, clk)
	jobs, err := q2.Lease(ctx, 10, time.Second)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "b1/0/boreal" || string(jobs[0].Body) != `{"sku":"KB-001"}` {
		t.Fatalf("after reopening, Lease = %+v, %v; want the job enqueued before", jobs, err)
	}
}

func TestAnExpiredLeaseIsDeliveredAgain(t *testing.T) {
	ctx := context.Background()
	q, clk := newQueue(t)
	q.Enqueue(ctx, Job{ID: "a"}, Job{ID: "b"})
	first, _ := q.Lease(ctx, 1, 10*time.Second)
	if len(first) != 1 || first[0].Tries != 1 {
		t.Fatalf("Lease(1) = %+v, want one job on its first try", first)
	}
	wantCounts(t, q, Counts{Pending: 1, Leased: 1})
	clk.advance(9 * time.Second)
	if again, _ := q.Lease(ctx, 10, 10*time.Second); len(again) != 1 || again[0].ID == first[0].ID {
		t.Errorf("before the lease expired, Lease = %v; want only the other job", ids(again))
	}
	clk.advance(2 * time.Second) // the first worker died: its lease ran out
	again, _ := q.Lease(ctx, 10, 10*time.Second)
	if len(again) != 1 || again[0].ID != first[0].ID || again[0].Tries != 2 {
		t.Errorf("after the lease expired, Lease = %+v; want %s again on try 2", again, first[0].ID)
	}
}

func TestEnqueueAndCompleteAreIdempotent(t *testing.T) {
	ctx := context.Background()
	q, _ := newQueue(t)
	q.Enqueue(ctx, Job{ID: "a"})
	q.Enqueue(ctx, Job{ID: "a"}) // the same cut-off call written twice
	jobs, _ := q.Lease(ctx, 10, time.Second)
	if len(jobs) != 1 {
		t.Fatalf("two enqueues of one ID gave %d deliveries, want 1", len(jobs))
	}
	if err := q.Complete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	q.Complete(ctx, "a")
	q.Enqueue(ctx, Job{ID: "a"}) // and once more after it is done
	if jobs, _ := q.Lease(ctx, 10, time.Second); len(jobs) != 0 {
		t.Errorf("a done job was delivered again: %v", ids(jobs))
	}
	if dead, err := q.Fail(ctx, "a", "timeout", 0); dead || err != nil {
		t.Errorf("a late Fail of a done job = %v, %v; want no change", dead, err)
	}
	wantCounts(t, q, Counts{Done: 1})
}

func TestAJobIsDeadAfterFiveTries(t *testing.T) {
	ctx := context.Background()
	q, clk := newQueue(t)
	q.Enqueue(ctx, Job{ID: "a"})
	for try := 1; try <= 5; try++ {
		jobs, _ := q.Lease(ctx, 10, time.Second)
		if len(jobs) != 1 || jobs[0].Tries != try {
			t.Fatalf("try %d: Lease = %+v", try, jobs)
		}
		dead, err := q.Fail(ctx, "a", "http_503", 100*time.Millisecond)
		if err != nil || dead != (try == 5) {
			t.Fatalf("try %d: Fail = %v, %v; want dead only on the fifth", try, dead, err)
		}
		if jobs, _ := q.Lease(ctx, 10, time.Second); len(jobs) != 0 {
			t.Fatalf("try %d: delivered again before its retry delay", try)
		}
		clk.advance(100 * time.Millisecond)
	}
	if jobs, _ := q.Lease(ctx, 10, time.Second); len(jobs) != 0 {
		t.Errorf("a dead job was delivered: %+v", jobs)
	}
	if j, _ := q.Get("a"); j.State != Dead || j.LastReason != "http_503" {
		t.Errorf("job = %+v, want dead with its last reason http_503", j)
	}
	wantCounts(t, q, Counts{Dead: 1})
}

func TestALeaseThatExpiresOnTheLastTryIsDead(t *testing.T) {
	ctx := context.Background()
	q, clk := newQueue(t)
	q.Enqueue(ctx, Job{ID: "a"})
	for range 5 {
		if jobs, _ := q.Lease(ctx, 1, time.Second); len(jobs) != 1 {
			t.Fatal("not delivered")
		}
		clk.advance(2 * time.Second) // the worker dies each time
	}
	if jobs, _ := q.Lease(ctx, 1, time.Second); len(jobs) != 0 {
		t.Errorf("delivered a sixth time")
	}
	if j, _ := q.Get("a"); j.State != Dead || j.LastReason != "lease_expired" {
		t.Errorf("job = %+v, want dead, lease_expired", j)
	}
}

func TestFinishedJobsAreKeptUpToALimit(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Now()}
	q, _ := openQueueWith(t, filepath.Join(t.TempDir(), "q.db"), clk, Limits{MaxTries: 1, KeepFinished: 10})
	const n = 25 // more than the 10 finished jobs this queue keeps
	for i := range n {
		id := fmt.Sprintf("b/%04d/boreal", i)
		if err := q.Enqueue(ctx, Job{ID: id}); err != nil {
			t.Fatal(err)
		}
		if jobs, err := q.Lease(ctx, 1, time.Second); err != nil || len(jobs) != 1 {
			t.Fatalf("Lease: %v, %v", jobs, err)
		}
		var err error
		if i%5 == 4 {
			_, err = q.Fail(ctx, id, "http_503", 0) // the only try: dead, which is finished too
		} else {
			err = q.Complete(ctx, id)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	wantCounts(t, q, Counts{Done: 8, Dead: 2, Pruned: n - 10})
	if _, err := q.Get("b/0000/boreal"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the oldest done job is still held (%v): finished jobs must be pruned, oldest first", err)
	}
	if j, err := q.Get(fmt.Sprintf("b/%04d/boreal", n-1)); err != nil || j.State != Dead {
		t.Errorf("the newest finished job = %+v, %v; want it kept, dead", j, err)
	}
	if err := q.Complete(ctx, "b/0000/boreal"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Complete of a pruned job = %v, want ErrNotFound", err)
	}
}

func TestThePendingJobsAreBoundedInCountAndSize(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Now()}
	q, _ := openQueueWith(t, filepath.Join(t.TempDir(), "q.db"), clk, Limits{MaxOpen: 3})
	if err := q.Enqueue(ctx, Job{ID: "a"}, Job{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Enqueue(ctx, Job{ID: "c"}, Job{ID: "d"}); !errors.Is(err, ErrFull) {
		t.Errorf("a fourth job = %v, want ErrFull", err)
	}
	wantCounts(t, q, Counts{Pending: 2}) // all of the refused Enqueue or none of it
	q.Lease(ctx, 1, time.Second)
	q.Complete(ctx, "a")
	if err := q.Enqueue(ctx, Job{ID: "c"}, Job{ID: "d"}); err != nil {
		t.Errorf("after one job finished, two more = %v; want room for them", err)
	}
	for _, j := range []Job{{ID: strings.Repeat("x", MaxIDBytes+1)}, {ID: "e", Body: make([]byte, MaxBodyBytes+1)}} {
		if err := q.Enqueue(ctx, j); !errors.Is(err, ErrTooLarge) {
			t.Errorf("a %d-byte ID, %d-byte body = %v, want ErrTooLarge", len(j.ID), len(j.Body), err)
		}
	}
}

// A job enqueued with a NotBefore (a supplier's Retry-After) is not
// delivered before it, and is delivered once it is due.
func TestEnqueueHonoursNotBefore(t *testing.T) {
	q, clk := newQueue(t)
	ctx := context.Background()
	if err := q.Enqueue(ctx, Job{ID: "later", NotBefore: clk.now().Add(time.Second)}, Job{ID: "now"}); err != nil {
		t.Fatal(err)
	}
	if jobs, err := q.Lease(ctx, 10, time.Minute); err != nil || !slices.Equal(ids(jobs), []string{"now"}) {
		t.Fatalf("Lease at once = %v, %v; want only the job without a NotBefore", ids(jobs), err)
	}
	clk.advance(999 * time.Millisecond)
	if jobs, _ := q.Lease(ctx, 10, time.Minute); len(jobs) != 0 {
		t.Fatalf("leased %v 1 ms before its NotBefore", ids(jobs))
	}
	clk.advance(time.Millisecond)
	if jobs, _ := q.Lease(ctx, 10, time.Minute); !slices.Equal(ids(jobs), []string{"later"}) {
		t.Fatalf("Lease at its NotBefore = %v, want [later]", ids(jobs))
	}
}

// waiting enqueues n jobs due in an hour, in one transaction.
func waiting(tb testing.TB, q *Bolt, clk *clock, n int) {
	tb.Helper()
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{ID: fmt.Sprintf("b%05d/0/boreal", i), Body: []byte(`{"sku":"KB-001"}`), NotBefore: clk.now().Add(time.Hour)}
	}
	if err := q.Enqueue(context.Background(), jobs...); err != nil {
		tb.Fatal(err)
	}
}

// With 20,000 jobs waiting and none due, a poll finds nothing without a
// write: no transaction is committed to disk (before the due index, each
// poll walked every job inside a write transaction, ~90 ms and a commit).
// A job that is due among them is still found at once.
func TestAnIdlePollWritesNothing(t *testing.T) {
	clk := &clock{t: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	q, _ := openQueueWith(t, filepath.Join(t.TempDir(), "q.db"), clk, Limits{MaxOpen: 20_001})
	waiting(t, q, clk, 20_000)
	ctx := context.Background()
	written := func() int64 { st := q.DB().Stats(); return st.TxStats.GetWrite() }
	writes := written()
	for range 10 {
		if jobs, err := q.Lease(ctx, 50, time.Minute); err != nil || len(jobs) != 0 {
			t.Fatalf("Lease with nothing due = %v, %v", ids(jobs), err)
		}
	}
	if n := written() - writes; n != 0 {
		t.Errorf("10 idle polls wrote %d times to the file, want 0", n)
	}
	if err := q.Enqueue(ctx, Job{ID: "due"}); err != nil {
		t.Fatal(err)
	}
	if jobs, err := q.Lease(ctx, 50, time.Minute); err != nil || !slices.Equal(ids(jobs), []string{"due"}) {
		t.Errorf("Lease with one job due among 20,000 = %v, %v; want [due]", ids(jobs), err)
	}
	clk.advance(time.Hour)
	if jobs, _ := q.Lease(ctx, 50, time.Minute); len(jobs) != 50 {
		t.Errorf("an hour later Lease(50) = %d jobs, want 50", len(jobs))
	}
}

// BenchmarkIdlePoll is one poll of a queue of 20,000 jobs none of which is due.
func BenchmarkIdlePoll(b *testing.B) {
	q, clk := newQueue(b)
	waiting(b, q, clk, 20_000)
	ctx := context.Background()
	for b.Loop() {
		if jobs, err := q.Lease(ctx, 50, time.Minute); err != nil || len(jobs) != 0 {
			b.Fatal(len(jobs), err)
		}
	}
}

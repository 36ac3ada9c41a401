package quoteflow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"quoteflowlab.dev/checkpoints/20/queue"
)

func TestTheStoreKeepsAtMostItsLimitOfBaskets(t *testing.T) {
	d := newData(t)
	q, err := queue.NewBolt(d.db, queue.Limits{MaxOpen: 3}) // room for the kept baskets' jobs only
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewBoltStore(d.db, q, 3)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	const n = 5
	for i := range n {
		id := fmt.Sprintf("basket%d", i)
		b := Basket{ID: id, Items: []BasketLine{{Index: 0, SKU: "KB-001", Quantity: 1}}}
		if err := store.Put(ctx, b, queue.Job{ID: id + "/0/boreal"}); err != nil {
			t.Fatalf("basket %d: %v (a dropped basket's job must make room for the new one)", i, err)
		}
	}
	for i := range n {
		_, err := store.Get(ctx, fmt.Sprintf("basket%d", i))
		if kept := i >= n-3; kept != (err == nil) {
			t.Errorf("basket %d of %d: %v; want only the newest 3 kept", i, n, err)
		}
	}
	if _, err := d.queue.Get("basket0/0/boreal"); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("a dropped basket's job is still queued (%v): it has nowhere to go", err)
	}
	if c, _ := d.queue.Counts(ctx); c.Pending != 3 {
		t.Errorf("queue %+v, want the kept baskets' 3 jobs", c)
	}
	if err := q.Enqueue(ctx, queue.Job{ID: "x"}); !errors.Is(err, queue.ErrFull) {
		t.Errorf("a job beyond the kept baskets' = %v, want ErrFull", err)
	}
}

// brokenStore fails every write of a basket, as a full disk or a crash
// in the middle of the write would.
type brokenStore struct{ *BoltStore }

func (brokenStore) Put(context.Context, Basket, ...queue.Job) error { return errors.New("disk full") }

func TestNoJobIsQueuedWithoutItsBasket(t *testing.T) {
	fake := newFake(map[string]reply{"boreal": status(503)})
	d := newData(t)
	s := basketService(t, fake, d, Config{Store: brokenStore{d.store}})
	s.store = brokenStore{d.store}
	if _, err := s.Basket(testCtx(t), lines(2)); err == nil {
		t.Fatal("the basket was answered though it could not be stored")
	}
	if c, _ := d.queue.Counts(testCtx(t)); c != (queue.Counts{}) {
		t.Errorf("queue %+v after the basket write failed; want nothing: the basket and its jobs are written together or not at all", c)
	}
}

func TestABasketIsStoredOnlyWithItsJobs(t *testing.T) {
	d := newData(t)
	ctx := testCtx(t)
	b := Basket{ID: "b1", Items: []BasketLine{{Index: 0, SKU: "KB-001", Quantity: 1}}}
	// A job bbolt refuses (an empty key) fails the whole transaction.
	if err := d.store.Put(ctx, b, queue.Job{ID: "b1/0/boreal"}, queue.Job{ID: ""}); err == nil {
		t.Fatal("Put with an unwritable job succeeded")
	}
	if _, err := d.store.Get(ctx, "b1"); !errors.Is(err, ErrNoBasket) {
		t.Errorf("the basket was stored (%v) though its jobs were not", err)
	}
	if c, _ := d.queue.Counts(ctx); c != (queue.Counts{}) {
		t.Errorf("queue %+v, want nothing: one job of the basket was refused, so none is kept", c)
	}
	if err := d.store.Put(ctx, b, queue.Job{ID: "b1/0/boreal"}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.store.Get(ctx, "b1"); err != nil {
		t.Error(err)
	}
	if c, _ := d.queue.Counts(ctx); c != (queue.Counts{Pending: 1}) {
		t.Errorf("queue %+v, want the basket's one job", c)
	}
}

func TestABasketThatDoesNotFitTheQueueIsRefusedWhole(t *testing.T) {
	fake := newFake(map[string]reply{"boreal": status(503)})
	d := newData(t)
	q, err := queue.NewBolt(d.db, queue.Limits{MaxOpen: 1})
	if err != nil {
		t.Fatal(err)
	}
	store, err := NewBoltStore(d.db, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := basketService(t, fake, d, Config{Store: store, Queue: q})
	s.store, s.queue = store, q
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/baskets",
		strings.NewReader(`{"items":[{"sku":"KB-001","quantity":1},{"sku":"KB-001","quantity":1}]}`)))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "compensation_queue_full") || rec.Header().Get("Retry-After") == "" {
		t.Errorf("two queued lines into a queue with room for one: %d %s, want 503 compensation_queue_full with Retry-After", rec.Code, rec.Body)
	}
	if c, _ := q.Counts(testCtx(t)); c != (queue.Counts{}) {
		t.Errorf("queue %+v, want nothing of the refused basket", c)
	}
}

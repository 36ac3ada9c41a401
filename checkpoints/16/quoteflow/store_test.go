package quoteflow

import (
	"context"
	"errors"
	"testing"

	"quoteflowlab.dev/checkpoints/16/queue"
)

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

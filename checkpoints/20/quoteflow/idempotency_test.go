package quoteflow

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"quoteflowlab.dev/checkpoints/20/queue"
)

// postBasket sends body to POST /api/baskets with key as its Idempotency-Key ("" for none).
func postBasket(h http.Handler, key, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/api/baskets", strings.NewReader(body))
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

const twoLines = `{"items":[{"sku":"KB-001","quantity":1},{"sku":"KB-001","quantity":2}],"scenario":"normal"}`

// A client that retries its POST with the same Idempotency-Key (its answer
// was lost) gets the same basket, and no supplier is asked again; the same
// key with other lines is refused with 422, and a malformed key too.
func TestAnIdempotencyKeyGetsTheSameBasket(t *testing.T) {
	fake := newFake(nil)
	s := basketService(t, fake, newData(t), Config{})
	h := s.Handler()
	first := postBasket(h, "order-1041", twoLines)
	b := decodeJSON[Basket](t, first)
	if first.Code != http.StatusOK || b.IdempotencyKey != "order-1041" {
		t.Fatalf("first POST: %d %s", first.Code, first.Body)
	}
	calls := fake.TotalCalls()
	again := postBasket(h, "order-1041", twoLines)
	if got := decodeJSON[Basket](t, again); again.Code != http.StatusOK || got.ID != b.ID {
		t.Errorf("the same POST again: %d, basket %s; want 200 and basket %s", again.Code, got.ID, b.ID)
	}
	if other := decodeJSON[Basket](t, postBasket(h, "order-1042", twoLines)); other.ID == b.ID {
		t.Errorf("another key got the same basket %s", b.ID)
	}
	if n := fake.TotalCalls(); n != 2*calls {
		t.Errorf("%d supplier calls for two keys and a retry, want %d: the retry asked again", n, 2*calls)
	}
	for _, c := range []struct{ key, body, detail string }{
		{"order-1041", `{"items":[{"sku":"KB-001","quantity":3}],"scenario":"normal"}`, "idempotency_key_reused"},
		{"order-1041", strings.Replace(twoLines, "normal", "slow", 1), "idempotency_key_reused"},
		{strings.Repeat("k", MaxIdempotencyKey+1), twoLines, "Idempotency-Key"},
		{"tab\tin key", twoLines, "Idempotency-Key"},
	} {
		rec := postBasket(h, c.key, c.body)
		if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), c.detail) {
			t.Errorf("key %.20q, body %.40s: %d %s; want 422 naming %s", c.key, c.body, rec.Code, rec.Body, c.detail)
		}
	}
	if n := fake.TotalCalls(); n != 2*calls {
		t.Errorf("refused requests asked suppliers: %d calls, want %d", n, 2*calls)
	}
}

// A retry that arrives while the first request is still being answered is
// told so (409, Retry-After) and asks no supplier; once the first is
// answered, the retry gets its basket.
func TestARetryDuringTheFirstRequestIsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(nil)
		// Each call takes 400 ms: under the call timeout of 1 s, so nothing
		// is retried (at exactly 1 s the timeout and the answer race), and
		// under the hedge's first delay (500 ms while nothing is known of a
		// supplier), so nothing is hedged either.
		fake.latency = 400 * time.Millisecond
		s := basketService(t, fake, newData(t), Config{})
		h := s.Handler()
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- postBasket(h, "order-7", twoLines) }()
		time.Sleep(100 * time.Millisecond)
		early := postBasket(h, "order-7", twoLines)
		if early.Code != http.StatusConflict || early.Header().Get("Retry-After") == "" || !strings.Contains(early.Body.String(), "idempotency_key_in_flight") {
			t.Errorf("a retry while the first runs: %d %s, want 409 idempotency_key_in_flight with Retry-After", early.Code, early.Body)
		}
		first := decodeJSON[Basket](t, <-done)
		late := postBasket(h, "order-7", twoLines)
		if got := decodeJSON[Basket](t, late); late.Code != http.StatusOK || got.ID != first.ID || got.Items[0].Status != LineComplete {
			t.Errorf("the retry after the answer: %d %s; want 200 with basket %s", late.Code, late.Body, first.ID)
		}
		if n := fake.TotalCalls(); n != 6 {
			t.Errorf("%d supplier calls, want 6 (2 lines × 3 suppliers, once)", n)
		}
	})
}

// The keys are kept as long as their baskets, so the table is bounded as
// the store is: in count (its limit of baskets) and size (a key is at most
// MaxIdempotencyKey bytes). A key whose basket was dropped makes a new one.
func TestIdempotencyKeysAreBoundedWithTheBaskets(t *testing.T) {
	fake := newFake(nil)
	d := newData(t)
	store, err := NewBoltStore(d.db, d.queue, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := basketService(t, fake, d, Config{})
	s.store = store
	h := s.Handler()
	ids := map[string]string{}
	for _, key := range []string{"a", "b", "c"} {
		ids[key] = decodeJSON[Basket](t, postBasket(h, key, twoLines)).ID
	}
	if _, err := store.Get(testCtx(t), ids["a"]); err != ErrNoBasket {
		t.Fatalf("basket of key a: %v, want dropped (the store keeps 2)", err)
	}
	calls := fake.TotalCalls()
	if again := decodeJSON[Basket](t, postBasket(h, "c", twoLines)); again.ID != ids["c"] || fake.TotalCalls() != calls {
		t.Errorf("key c again: basket %s after %d new calls, want %s and none", again.ID, fake.TotalCalls()-calls, ids["c"])
	}
	if again := decodeJSON[Basket](t, postBasket(h, "a", twoLines)); again.ID != ids["a"] || fake.TotalCalls() == calls {
		t.Errorf("key a, forgotten with its basket: basket %s, %d new calls; want a new basket", again.ID, fake.TotalCalls()-calls)
	}
}

// fullDisk is a store on a full disk: every write fails as bbolt's does
// when the file cannot grow.
type fullDisk struct{ *BoltStore }

var errNoSpace = &fs.PathError{Op: "write", Path: "quoteflow.db", Err: syscall.ENOSPC}

func (fullDisk) Reserve(context.Context, Basket, func(Basket) bool) (Basket, error) {
	return Basket{}, errNoSpace
}
func (fullDisk) Put(context.Context, Basket, ...queue.Job) error { return errNoSpace }

// A basket that cannot be stored (a full disk) is answered 503
// store_unavailable with Retry-After, logged in one line, and costs no
// supplier call: the basket is written before the fan-out.
func TestABasketThatCannotBeStoredAsksNoSupplier(t *testing.T) {
	var logs bytes.Buffer
	fake := newFake(nil)
	d := newData(t)
	s := basketService(t, fake, d, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s.store = fullDisk{d.store}
	rec := postBasket(s.Handler(), "", twoLines)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"store_unavailable"`) {
		t.Errorf("full disk: %d %s (Retry-After %q), want 503 store_unavailable with Retry-After", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
	if n := fake.TotalCalls(); n != 0 {
		t.Errorf("%d supplier calls for a basket that could not be stored, want 0", n)
	}
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "no space left on device") {
		t.Errorf("logs:\n%s\nwant one line naming the cause", logs.String())
	}
}

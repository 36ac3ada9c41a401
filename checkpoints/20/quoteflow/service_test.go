package quoteflow

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

func TestQuotesAreRankedAndShortStockIsFilteredNotFailed(t *testing.T) {
	s := newService(t, Config{Transport: newFake(nil)})
	res, err := s.Quote(testCtx(t), kb(2))
	if err != nil {
		t.Fatal(err)
	}
	if got := quoted(res); !slices.Equal(got, []string{"boreal", "atlas"}) {
		t.Errorf("quoted %v, want [boreal atlas] (cedar has stock 1)", got)
	}
	if len(res.Failures) != 0 {
		t.Errorf("failures = %v, want none: short stock is not a failure", res.Failures)
	}
	if res.Best == nil || res.Best.Supplier != "boreal" || res.Best.TotalCents != 1100*2+400 {
		t.Errorf("best = %+v, want boreal at 2600", res.Best)
	}
}

func TestEqualTotalsAreOrderedBySupplier(t *testing.T) {
	same := body(`{"supplier":"cedar","sku":"KB-001","unit_cents":1100,"shipping_cents":400,"stock":10}`)
	s := newService(t, Config{Transport: newFake(map[string]reply{"cedar": same})})
	res, err := s.Quote(testCtx(t), kb(2))
	if err != nil {
		t.Fatal(err)
	}
	if got := quoted(res); !slices.Equal(got, []string{"boreal", "cedar", "atlas"}) {
		t.Errorf("quoted %v, want [boreal cedar atlas]", got)
	}
}

func TestEverySupplierIsAskedOnceWithOneRequestID(t *testing.T) {
	fake := newFake(nil)
	s := newService(t, Config{Transport: fake})
	res, err := s.Quote(testCtx(t), kb(2))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(res.RequestID) {
		t.Errorf("request_id = %q, want 32 hex digits", res.RequestID)
	}
	for _, name := range suppliers {
		if ids := fake.IDs(name); len(ids) != 1 || ids[0] != res.RequestID {
			t.Errorf("%s saw X-Request-ID %v, want exactly [%s]", name, ids, res.RequestID)
		}
	}
}

func TestTheBudgetEndsTheQuoteAndKeepsFinishedResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fake := newFake(map[string]reply{"atlas": after(100*time.Millisecond, normal), "boreal": hang})
		s := newService(t, Config{Transport: fake})
		start := time.Now()
		res, err := s.Quote(t.Context(), kb(1))
		if err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != DefaultBudget {
			t.Errorf("Quote returned after %v, want exactly %v", elapsed, DefaultBudget)
		}
		if got := codes(res)["boreal"]; got != CodeTimeout {
			t.Errorf("boreal = %q, want timeout", got)
		}
		if got := quoted(res); !slices.Equal(got, []string{"cedar", "atlas"}) {
			t.Errorf("quoted %v, want atlas and cedar kept", got)
		}
	})
}

func TestBudgetIsConfigurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": hang}), Budget: 50 * time.Millisecond})
		start := time.Now()
		if _, err := s.Quote(t.Context(), kb(2)); err != nil {
			t.Fatal(err)
		}
		if elapsed := time.Since(start); elapsed != 50*time.Millisecond {
			t.Errorf("Quote returned after %v, want 50ms", elapsed)
		}
	})
}

func TestCancellingTheCallerEndsTheQuote(t *testing.T) {
	entered := make(chan struct{})
	waiting := func(r *http.Request, n int) (*http.Response, error) {
		close(entered)
		return hang(r, n)
	}
	s := newService(t, Config{Transport: newFake(map[string]reply{"boreal": waiting}), Budget: time.Minute})
	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := s.Quote(ctx, kb(2))
		done <- err
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("Quote returned (err %v) without asking boreal", err)
	case <-time.After(5 * time.Second):
		t.Fatal("boreal was not asked within 5s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Quote did not return within 5s of cancellation")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"negative budget":   {Budget: -time.Second},
		"relative URL":      {ProviderURL: "127.0.0.1:9101"},
		"non-HTTP scheme":   {ProviderURL: "ftp://127.0.0.1:9101"},
		"negative inbound":  {InboundLimit: -1},
		"negative outbound": {OutboundLimit: -1},
		"negative pool":     {PoolSize: -1},
		"negative connect":  {ConnectTimeout: -time.Second},
		"negative floor":    {MinAttempt: -time.Millisecond},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: New succeeded, want an error", name)
		}
	}
}

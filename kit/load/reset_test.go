package load

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

// --reset against the real provider lab: it takes the reset (which it
// refuses unless sent as JSON) and its counters start again from zero.
func TestResetStatsResetsTheRealProvider(t *testing.T) {
	srv, err := provider.Start(provider.Options{}, "127.0.0.1:0", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	resp, err := http.Get(srv.URL + "/quotes/atlas?sku=KB-001&scenario=normal")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := total(t, srv.URL); got != 1 {
		t.Fatalf("before the reset the provider counts %d requests, want 1", got)
	}
	if err := ResetStats(context.Background(), srv.URL); err != nil {
		t.Fatalf("ResetStats: %v", err)
	}
	if got := total(t, srv.URL); got != 0 {
		t.Fatalf("after the reset the provider counts %d requests, want 0", got)
	}
}

func total(t *testing.T, base string) int {
	t.Helper()
	resp, err := http.Get(base + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ Total int }
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s.Total
}

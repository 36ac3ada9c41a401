package provider_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"quoteflowlab.dev/provider"
)

// checkStats returns what is inconsistent in one /stats snapshot ("" if nothing).
func checkStats(st provider.Stats) string {
	var statuses int64
	for _, n := range st.PerStatus {
		statuses += n
	}
	sup := st.PerSupplier.Atlas + st.PerSupplier.Boreal + st.PerSupplier.Cedar
	switch {
	case statuses > st.Total:
		return fmt.Sprintf("per_status sums to %d, above total %d", statuses, st.Total)
	case sup+st.Partner > st.Total:
		return fmt.Sprintf("per_supplier %d + partner %d is above total %d", sup, st.Partner, st.Total)
	case st.Abandoned > st.Total, st.ClientGone > st.Total, st.Resets > st.Total:
		return fmt.Sprintf("abandoned %d, client_gone %d or resets %d above total %d", st.Abandoned, st.ClientGone, st.Resets, st.Total)
	case st.MaxActive < st.Active:
		return fmt.Sprintf("max_active %d below active %d", st.MaxActive, st.Active)
	case st.Total < 0 || st.Active < 0:
		return fmt.Sprintf("negative counter: total %d, active %d", st.Total, st.Active)
	}
	return ""
}

func TestStatsAreOneConsistentSnapshotUnderTrafficAndResets(t *testing.T) {
	t.Parallel()
	p := provider.New(provider.Options{})
	h := p.Routes()
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	targets := [][]string{
		{"/quotes/atlas?sku=KB-001"},
		{"/quotes/boreal?sku=KB-001&scenario=broken"},
		{"/quotes/boreal?sku=KB-001&scenario=flaky", "X-Request-ID", "same"},
		{"/quotes/cedar?sku=NOPE"},
		{"/quotes/cedar?sku=KB-001", "X-Budget-Ms", "0"}, // abandoned
		{"/call?fail=1&key=k"},
		{"/budget", "X-Budget-Ms", "5"},
	}
	var wg sync.WaitGroup
	for i := range 8 { // traffic
		wg.Go(func() {
			for n := i; ctx.Err() == nil; n++ {
				tg := targets[n%len(targets)]
				serve(h, "GET", tg[0], tg[1:]...)
			}
		})
	}
	wg.Go(func() { // resets
		for ctx.Err() == nil {
			p.Reset()
			time.Sleep(100 * time.Microsecond) // a reset now and then, not a reset storm
		}
	})
	var bad []string
	var mu sync.Mutex
	for range 2 { // readers
		wg.Go(func() {
			for ctx.Err() == nil {
				if problem := checkStats(p.Snapshot()); problem != "" {
					mu.Lock()
					bad = append(bad, problem)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("%d inconsistent snapshots, e.g. %s", len(bad), bad[0])
	}
	if problem := checkStats(p.Snapshot()); problem != "" {
		t.Errorf("final snapshot: %s", problem)
	}
}

package provider

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

func TestKeyTableStaysBoundedUnderAMillionDistinctKeys(t *testing.T) {
	t.Parallel()
	n := 1_000_000
	if testing.Short() {
		n = 50_000
	}
	const limit = 1000
	kt := newKeyTable[int64](limit)
	for i := range n {
		incr(kt, fmt.Sprint("id-", i))
	}
	if got := kt.len(); got != limit {
		t.Errorf("after %d distinct keys the table holds %d, want %d", n, got, limit)
	}
}

func TestKeyTableCheckAndSetIsAtomic(t *testing.T) {
	kt := newKeyTable[int64](10)
	var firsts atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 1000 {
				if incr(kt, "same") == 1 {
					firsts.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if v, _ := kt.get("same"); v != 64_000 || firsts.Load() != 1 {
		t.Errorf("count %d with %d firsts; want 64000 with exactly 1", v, firsts.Load())
	}
}

func TestKeyTableLimitSmallerThanShards(t *testing.T) {
	kt := newKeyTable[int64](3)
	for i := range 100 {
		incr(kt, fmt.Sprint(i))
	}
	if got := kt.len(); got != 3 {
		t.Errorf("len %d, want 3", got)
	}
}

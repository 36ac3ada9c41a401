package quota_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"quoteflowlab.dev/checkpoints/20/quota"
)

func newLocal(t *testing.T, limit int, rate quota.Rate) *quota.Local {
	t.Helper()
	l, err := quota.NewLocal(limit, rate)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// One process: the semaphore holds its limit exactly.
func TestLocalLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var g gauge
	if _, _, err := hammer(ctx, []quota.Quota{newLocal(t, 6, quota.Rate{})}, 36, time.Millisecond, &g); err != nil {
		t.Fatal(err)
	}
	if peak := g.peak.Load(); peak != 6 {
		t.Errorf("peak = %d, want 6", peak)
	}
}

// Three processes, each with its own semaphore of 6: the suppliers see 18.
// This is why lesson 17 exists.
func TestLocalLimitIsPerProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	qs := []quota.Quota{newLocal(t, 6, quota.Rate{}), newLocal(t, 6, quota.Rate{}), newLocal(t, 6, quota.Rate{})}
	var g gauge
	if _, _, err := hammer(ctx, qs, 12, 5*time.Millisecond, &g); err != nil {
		t.Fatal(err)
	}
	if peak := g.peak.Load(); peak != 18 {
		t.Errorf("peak across three local quotas = %d, want 18 (6 each)", peak)
	}
}

// The local rate: at most N in any window, ErrRateLimited when the room
// comes after the deadline, and keys counted apart.
func TestLocalRate(t *testing.T) {
	rate := quota.Rate{N: 5, Per: 100 * time.Millisecond}
	l := newLocal(t, 6, rate)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var adm []admission
	for range 15 {
		from := time.Now()
		if err := l.Wait(ctx, "boreal"); err != nil {
			t.Fatal(err)
		}
		adm = append(adm, admission{from, time.Now()})
	}
	if set := crowded(adm, rate.N, rate.Per); set != nil {
		t.Errorf("%d admissions within one window of %s, want at most %d", len(set), rate.Per, rate.N)
	}
	if took := adm[14].to.Sub(adm[0].from); took < 2*rate.Per {
		t.Errorf("15 calls at 5 per %s took %s, want at least %s", rate.Per, took, 2*rate.Per)
	}
	short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancelShort()
	if err := l.Wait(short, "boreal"); !errors.Is(err, quota.ErrRateLimited) {
		t.Errorf("Wait with a full window and 10 ms left = %v, want ErrRateLimited", err)
	}
	if err := l.Wait(short, "atlas"); err != nil {
		t.Errorf("atlas waited on boreal's window: %v", err)
	}
}

func TestParseRate(t *testing.T) {
	for in, want := range map[string]quota.Rate{
		"5/250ms": {N: 5, Per: 250 * time.Millisecond},
		"none":    {},
		"100/1s":  {N: 100, Per: time.Second},
	} {
		if got, err := quota.ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"5", "0/1s", "-1/1s", "5/0s", "5/abc", "x/1s", "5/1us"} {
		if _, err := quota.ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) = nil error, want one", bad)
		}
	}
}

// Local weighs calls too: a cost rate in one process.
func TestLocalWeightedRate(t *testing.T) {
	l := newLocal(t, 6, quota.Rate{N: 100, Per: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := l.WaitN(ctx, "boreal", 60); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitN(ctx, "boreal", 60); !errors.Is(err, quota.ErrRateLimited) {
		t.Errorf("cost 60 after 60 of 100: %v, want ErrRateLimited", err)
	}
	if err := l.WaitN(ctx, "boreal", 40); err != nil {
		t.Errorf("cost 40 after 60 of 100: %v, want admitted", err)
	}
	if err := l.WaitN(ctx, "atlas", 101); !errors.Is(err, quota.ErrRateLimited) {
		t.Errorf("cost 101 in a window of 100: %v, want ErrRateLimited at once", err)
	}
}

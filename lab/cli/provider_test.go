package cli

import (
	"net"
	"strings"
	"testing"
)

// --latency-scale takes a finite number from 0 to 100; anything else is a
// usage error (exit 2, one sentence) before any port is opened. The address
// given is busy, so a value that gets past the check ends with exit 1
// instead of serving.
func TestProviderLatencyScaleMustBeFiniteAndSane(t *testing.T) {
	providerFlagExits(t, "--latency-scale", "--latency-scale must be a number from 0 to 100", map[string]int{
		"NaN": 2, "nan": 2, "+Inf": 2, "-Inf": 2, "Infinity": 2, "1e300": 2, "100.5": 2,
		"-1": 2, "-0.001": 2,
		"0": 1, "0.25": 1, "1": 1, "100": 1,
	})
}

// --brownout-shape is 503 or hang; anything else is a usage error (exit 2,
// one sentence) before any port is opened (the busy address makes a value
// that gets past the check end with exit 1).
func TestProviderBrownoutShapeIs503OrHang(t *testing.T) {
	providerFlagExits(t, "--brownout-shape", "--brownout-shape must be 503 or hang", map[string]int{"503": 1, "hang": 1, "": 2, "HANG": 2, "500": 2, "stall": 2})
}

// providerFlagExits runs lab provider with flag set to each value of want,
// on a busy address (a value that gets past the check ends with exit 1
// instead of serving), and wants its exit code; exit 2 with the sentence
// says.
func providerFlagExits(t *testing.T, flag, says string, want map[string]int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for value, code := range want {
		var stdout, stderr strings.Builder
		if got := runProvider([]string{flag, value, "--addr", busy, "--blackhole-addr", ""}, &stdout, &stderr); got != code {
			t.Errorf("%s %q: exit %d (%s), want %d", flag, value, got, strings.TrimSpace(stderr.String()), code)
		}
		if code == 2 && !strings.Contains(stderr.String(), says) {
			t.Errorf("%s %q: stderr %q, want the sentence %q", flag, value, stderr.String(), says)
		}
	}
}

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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for _, c := range []struct {
		value string
		code  int
	}{
		{"NaN", 2}, {"nan", 2}, {"+Inf", 2}, {"-Inf", 2}, {"Infinity", 2}, {"1e300", 2}, {"100.5", 2},
		{"-1", 2}, {"-0.001", 2},
		{"0", 1}, {"0.25", 1}, {"1", 1}, {"100", 1},
	} {
		var stdout, stderr strings.Builder
		code := runProvider([]string{"--latency-scale", c.value, "--addr", busy, "--blackhole-addr", ""}, &stdout, &stderr)
		if code != c.code {
			t.Errorf("--latency-scale %s: exit %d (%s), want %d", c.value, code, strings.TrimSpace(stderr.String()), c.code)
		}
		if c.code == 2 && !strings.Contains(stderr.String(), "--latency-scale must be a number from 0 to 100") {
			t.Errorf("--latency-scale %s: stderr %q, want a sentence naming the range", c.value, stderr.String())
		}
	}
}

// --brownout-shape is 503 or hang; anything else is a usage error (exit 2,
// one sentence) before any port is opened (the busy address makes a value
// that gets past the check end with exit 1).
func TestProviderBrownoutShapeIs503OrHang(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	busy := ln.Addr().String()
	for value, want := range map[string]int{"503": 1, "hang": 1, "": 2, "HANG": 2, "500": 2, "stall": 2} {
		var stdout, stderr strings.Builder
		code := runProvider([]string{"--brownout-shape", value, "--addr", busy, "--blackhole-addr", ""}, &stdout, &stderr)
		if code != want {
			t.Errorf("--brownout-shape %q: exit %d (%s), want %d", value, code, strings.TrimSpace(stderr.String()), want)
		}
		if want == 2 && !strings.Contains(stderr.String(), "--brownout-shape must be 503 or hang") {
			t.Errorf("--brownout-shape %q: stderr %q, want a sentence naming both shapes", value, stderr.String())
		}
	}
}

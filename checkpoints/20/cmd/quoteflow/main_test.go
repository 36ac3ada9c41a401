package main

import (
	"bytes"
	"context"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"quoteflowlab.dev/checkpoints/20/internal/redistest"
	"quoteflowlab.dev/checkpoints/20/quota"
)

func TestMain(m *testing.M) {
	redis.SetLogger(quiet{}) // a server that does not answer is one of the cases
	goleak.VerifyTestMain(m)
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// These cases all end before serving, so no test waits on a server.
func TestRunRefusesWhatItCannotDo(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		name string
		args []string
		code int
		say  string // in stderr
	}{
		{"help", []string{"-h"}, 0, "-addr"},
		{"unknown flag", []string{"--bogus"}, 2, "-bogus"},
		{"stray argument", []string{"extra", "--addr", "127.0.0.1:0"}, 2, `unexpected argument "extra"`},
		{"bad provider URL", []string{"--provider", "ftp://x", "--addr", busy.Addr().String()}, 2, `ProviderURL "ftp://x"`},
		{"empty provider URL", []string{"--provider", "", "--addr", busy.Addr().String()}, 2, "--provider is empty"},
		{"port in use", []string{"--addr", busy.Addr().String()}, 1, busy.Addr().String()},
		{"compensate without --once", []string{"compensate"}, 2, "--once"},
		{"compensate with an argument", []string{"compensate", "--once", "extra"}, 2, "usage"},
		{"zero visibility timeout", []string{"--queue-visibility", "0s", "--addr", busy.Addr().String()}, 2, "--queue-visibility 0s"},
		{"negative poll", []string{"compensate", "--once", "--queue-poll", "-1s"}, 2, "--queue-poll -1s"},
		{"lease TTL too short", []string{"--lease-ttl", "10ms", "--addr", busy.Addr().String()}, 2, "--lease-ttl 10ms: want at least 30ms"},
		{"redis URL not redis://", []string{"--redis", "http://127.0.0.1:6379", "--addr", busy.Addr().String()}, 2, `--redis "http://127.0.0.1:6379" is not a redis://`},
		{"redis URL malformed", []string{"--redis", "redis://127.0.0.1:6379/notadb", "--addr", busy.Addr().String()}, 2, "--redis"},
		{"bad rate", []string{"--redis", "redis://127.0.0.1:1/0", "--rate", "5", "--addr", busy.Addr().String()}, 2, "--rate"},
		{"rate without redis", []string{"--rate", "5/250ms", "--addr", busy.Addr().String()}, 2, "--rate needs --redis"},
		{"bad rate-by", []string{"--redis", "redis://127.0.0.1:1/0", "--rate", "5/250ms", "--rate-by", "tokens", "--addr", busy.Addr().String()}, 2, "--rate-by \"tokens\": want calls or quantity"},
		{"hedge ceiling below its floor", []string{"--hedge-floor", "50ms", "--hedge-ceiling", "20ms", "--addr", busy.Addr().String()}, 2, "want 0 < floor ≤ ceiling"},
		{"adaptive limit's minimum 0", []string{"--limit-min", "0", "--addr", busy.Addr().String()}, 2, "want 1 <= min <= initial <= max <= 1000"},
		{"adaptive limit's initial above its maximum", []string{"--limit-initial", "30", "--addr", busy.Addr().String()}, 2, "--limit-initial 30"},
		{"supplier queue target 0", []string{"--limit-queue-target", "0s", "--addr", busy.Addr().String()}, 2, "--limit-queue-target 0s"},
		{"negative inbound queue target", []string{"--inbound-queue-target", "-1ms", "--addr", busy.Addr().String()}, 2, "--inbound-queue-target -1ms"},
		{"inbound queue of 0", []string{"--inbound-queue", "0", "--addr", busy.Addr().String()}, 2, "--inbound-queue 0"},
		{"negative inbound", []string{"--inbound", "-1", "--addr", busy.Addr().String()}, 2, "--inbound -1: want 0 (the default) to 10000"},
		{"negative outbound", []string{"--outbound", "-1", "--addr", busy.Addr().String()}, 2, "--outbound -1"},
		{"budget ratio above 1", []string{"--budget-ratio", "2", "--addr", busy.Addr().String()}, 2, "--budget-ratio 2"},
		{"budget cap below one token", []string{"compensate", "--once", "--budget-cap", "0.5"}, 2, "--budget-cap 0.5"},
		{"breaker failure rate NaN", []string{"--breaker-failure-rate", "NaN", "--addr", busy.Addr().String()}, 2, "--breaker-failure-rate NaN"},
		{"breaker failure rate +Inf", []string{"--breaker-failure-rate", "+Inf", "--addr", busy.Addr().String()}, 2, "--breaker-failure-rate +Inf"},
		{"breaker failure rate above 1", []string{"--breaker-failure-rate", "1.5", "--addr", busy.Addr().String()}, 2, "failure rate 1.5"},
		{"breaker jitter NaN", []string{"--breaker-jitter", "NaN", "--addr", busy.Addr().String()}, 2, "jitter NaN"},
		{"breaker jitter above 1", []string{"--breaker-jitter", "2", "--addr", busy.Addr().String()}, 2, "jitter 2"},
		{"breaker window too big", []string{"--breaker-window", "1001", "--addr", busy.Addr().String()}, 2, "window 1001"},
		{"breaker min calls above the window", []string{"--breaker-window", "5", "--breaker-min-calls", "6", "--addr", busy.Addr().String()}, 2, "minimum calls 6"},
		{"breaker zero probes", []string{"--breaker-probes", "0", "--addr", busy.Addr().String()}, 2, "--breaker-probes"},
		{"breaker negative cool-down", []string{"--breaker-cooldown", "-1s", "--addr", busy.Addr().String()}, 2, "cool-down -1s"},
		{"negative max stale", []string{"--max-stale", "-1s", "--addr", busy.Addr().String()}, 2, "--max-stale -1s"},
		{"max stale past a day", []string{"--max-stale", "25h", "--addr", busy.Addr().String()}, 2, "--max-stale 25h0m0s"},
		{"redis not answering", []string{"compensate", "--once", "--redis", "redis://" + busy.Addr().String() + "/0"}, 1, "cannot reach Redis"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(c.args, &stdout, &stderr); code != c.code {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", c.args, code, c.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.say) {
				t.Errorf("stderr %q does not mention %q", stderr.String(), c.say)
			}
			if strings.Contains(stderr.String(), "quoteflow: quoteflow:") {
				t.Errorf("stderr repeats the prefix: %q", stderr.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing: it never served", stdout.String())
			}
		})
	}
}

func TestCompensateOnceDrainsAndSaysWhatIsLeft(t *testing.T) {
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	if code := run([]string{"compensate", "--once", "--data", dir}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	if want := "compensation: pending 0, leased 0, done 0, dead 0, pruned 0\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
}

// The service says at start which quota and queue it uses: without --redis
// checkpoint 16's local semaphore and bbolt file, with it the shared ones.
func TestItSaysWhichQuotaAndQueueItUses(t *testing.T) {
	dir := t.TempDir()
	svc, closeData, uses, err := open("http://127.0.0.1:9101", dir, &sharedFlags{})
	if err != nil {
		t.Fatal(err)
	}
	closeData()
	_ = svc
	for _, want := range []string{"quota: local, 6 supplier calls at once in this process", "bbolt in " + filepath.Join(dir, "quoteflow.db")} {
		if !strings.Contains(uses, want) {
			t.Errorf("without --redis it says %q, want it to mention %q", uses, want)
		}
	}

	s := redistest.Start(t)
	shared := &sharedFlags{url: s.URL(), rate: "5/250ms"}
	var stderr bytes.Buffer
	if code, ok := shared.check(&stderr); !ok {
		t.Fatalf("check = %d: %s", code, stderr.String())
	}
	_, closeData, uses, err = open("http://127.0.0.1:9101", dir, shared)
	if err != nil {
		t.Fatal(err)
	}
	closeData()
	for _, want := range []string{"quota: redis " + s.URL(), "6 supplier calls at once for every process on it", "rate 5/250ms per supplier", "baskets and queue: redis stream"} {
		if !strings.Contains(uses, want) {
			t.Errorf("with --redis it says %q, want it to mention %q", uses, want)
		}
	}

	var stdout bytes.Buffer
	if code := run([]string{"compensate", "--once", "--redis", s.URL()}, &stdout, &stderr); code != 0 {
		t.Fatalf("compensate --once --redis: exit %d; stderr:\n%s", code, stderr.String())
	}
	if want := "compensation: pending 0, leased 0, done 0, dead 0, pruned 0\n"; stdout.String() != want {
		t.Errorf("stdout %q, want %q", stdout.String(), want)
	}
}

// The timings come from the flags, else from the environment, else from
// the lesson; a bad environment value is a usage error.
func TestTimingsFromFlagsAndEnvironment(t *testing.T) {
	parse := func(args ...string) *timings {
		t.Helper()
		fs := flag.NewFlagSet("quoteflow", flag.ContinueOnError)
		tm := timingFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tm := parse()
	if p, q := tm.basket(), tm.quota(quota.Rate{}); p.Visibility != 10*time.Second || p.PollEvery != 100*time.Millisecond || q.TTL != quota.DefaultTTL || q.Poll != quota.DefaultPoll {
		t.Errorf("defaults: visibility %s, poll %s, lease TTL %s, quota poll %s; want the lesson's 10s, 100ms, %s, %s",
			p.Visibility, p.PollEvery, q.TTL, q.Poll, quota.DefaultTTL, quota.DefaultPoll)
	}
	t.Setenv("QUOTEFLOW_QUEUE_VISIBILITY", "300ms")
	t.Setenv("QUOTEFLOW_QUEUE_POLL", "20ms")
	t.Setenv("QUOTEFLOW_LEASE_TTL", "300ms")
	t.Setenv("QUOTEFLOW_QUOTA_POLL", "5ms")
	tm = parse()
	if p, q := tm.basket(), tm.quota(quota.Rate{}); p.Visibility != 300*time.Millisecond || p.PollEvery != 20*time.Millisecond || q.TTL != 300*time.Millisecond || q.Poll != 5*time.Millisecond {
		t.Errorf("from the environment: visibility %s, poll %s, lease TTL %s, quota poll %s; want 300ms, 20ms, 300ms, 5ms", p.Visibility, p.PollEvery, q.TTL, q.Poll)
	}
	if q := parse("--lease-ttl", "1s").quota(quota.Rate{}); q.TTL != time.Second {
		t.Errorf("a flag over the environment: lease TTL %s, want 1s", q.TTL)
	}
	t.Setenv("QUOTEFLOW_LEASE_TTL", "soon")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"compensate", "--once"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `QUOTEFLOW_LEASE_TTL="soon"`) {
		t.Errorf("QUOTEFLOW_LEASE_TTL=soon: exit %d, stderr %q; want 2 naming the variable", code, stderr.String())
	}
}

// The start line names the data file by its absolute path: run from any
// directory, the reader learns where the baskets and the queue live. The
// test runs in the package's directory, as go test starts it (no t.Chdir:
// go keys a cached result by every directory a test changes to, so a suite
// with one would run again in every new clone of the course).
func TestItSaysWhereTheDataLives(t *testing.T) {
	got := dataFile("./quoteflow-data")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, "quoteflow-data", "quoteflow.db"); got != want {
		t.Errorf("dataFile(./quoteflow-data) = %q, want %q", got, want)
	}
}

// Every number the command takes, from a flag or from the environment, is
// checked: NaN, an infinity or a value out of range is a usage error (exit
// 2) whose first line names it, before anything is opened.
func TestEveryNumberOutOfRangeIsAUsageError(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		says string
		env  []string // name, value
		args []string
	}{
		{"--queue-poll 1ns", nil, []string{"--queue-poll", "1ns"}}, // a busy loop
		{"--queue-poll 0s", nil, []string{"--queue-poll", "0"}},    //
		{"--queue-visibility 1000h0m0s", nil, []string{"--queue-visibility", "1000h"}},
		{"QUOTEFLOW_QUEUE_VISIBILITY=\"0s\"", []string{"QUOTEFLOW_QUEUE_VISIBILITY", "0s"}, nil},
		{"QUOTEFLOW_QUEUE_POLL=\"25h\"", []string{"QUOTEFLOW_QUEUE_POLL", "25h"}, nil},
		{"QUOTEFLOW_QUEUE_POLL=\"NaN\"", []string{"QUOTEFLOW_QUEUE_POLL", "NaN"}, nil},
		{"--lease-ttl 1000h0m0s", nil, []string{"--lease-ttl", "1000h"}},
		{"--quota-poll 100ns", nil, []string{"--quota-poll", "100ns"}},
		{"QUOTEFLOW_LEASE_TTL=\"9999999h\"", []string{"QUOTEFLOW_LEASE_TTL", "9999999h"}, nil},
		{"QUOTEFLOW_QUOTA_POLL=\"Inf\"", []string{"QUOTEFLOW_QUOTA_POLL", "Inf"}, nil},
		{"--rate 2000000/1s", nil, []string{"--redis", "redis://127.0.0.1:1/0", "--rate", "2000000/1s"}},
		{"--rate 5/1000h", nil, []string{"--redis", "redis://127.0.0.1:1/0", "--rate", "5/1000h"}},
		{"--rate: rate \"NaN/1s\"", nil, []string{"--redis", "redis://127.0.0.1:1/0", "--rate", "NaN/1s"}},
		{"--rate: rate \"5/Inf\"", nil, []string{"--redis", "redis://127.0.0.1:1/0", "--rate", "5/Inf"}},
		{"--budget-ratio NaN", nil, []string{"--budget-ratio", "NaN"}}, // every retry silently off
		{"--budget-ratio +Inf", nil, []string{"--budget-ratio", "Inf"}},
		{"--budget-ratio 0", nil, []string{"--budget-ratio", "0"}},
		{"--budget-cap NaN", nil, []string{"--budget-cap", "NaN"}},   // an unlimited budget
		{"--budget-cap +Inf", nil, []string{"--budget-cap", "Inf"}},  // an unlimited budget
		{"--budget-cap -Inf", nil, []string{"--budget-cap", "-Inf"}}, //
		{"--budget-cap 2e+06", nil, []string{"--budget-cap", "2e6"}},
		{"-budget-cap: value out of range", nil, []string{"--budget-cap", "1e400"}},
		{"--hedge-ceiling 1000h0m0s", nil, []string{"--hedge-ceiling", "1000h"}},
	} {
		t.Run(c.says, func(t *testing.T) {
			if c.env != nil {
				t.Setenv(c.env[0], c.env[1])
			}
			var stdout, stderr bytes.Buffer
			// With the port taken, a value let through ends in exit 1, not in a server.
			code := run(append(c.args, "--addr", busy.Addr().String(), "--data", t.TempDir()), &stdout, &stderr)
			first, _, _ := strings.Cut(stderr.String(), "\n")
			if code != 2 || !strings.Contains(first, c.says) {
				t.Errorf("%v %v: exit %d, first line %q; want 2 and a line naming %q", c.env, c.args, code, first, c.says)
			}
		})
	}
}

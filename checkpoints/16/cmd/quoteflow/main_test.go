package main

import (
	"bytes"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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

// The worker's timings come from the flags, else from the environment, else
// from the lesson; a bad environment value is a usage error.
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
	if p := parse().basket(); p.Visibility != 10*time.Second || p.PollEvery != 100*time.Millisecond {
		t.Errorf("defaults: visibility %s, poll %s; want the lesson's 10s and 100ms", p.Visibility, p.PollEvery)
	}
	t.Setenv("QUOTEFLOW_QUEUE_VISIBILITY", "300ms")
	t.Setenv("QUOTEFLOW_QUEUE_POLL", "20ms")
	if p := parse().basket(); p.Visibility != 300*time.Millisecond || p.PollEvery != 20*time.Millisecond {
		t.Errorf("from the environment: visibility %s, poll %s; want 300ms and 20ms", p.Visibility, p.PollEvery)
	}
	if p := parse("--queue-visibility", "1s").basket(); p.Visibility != time.Second {
		t.Errorf("a flag over the environment: visibility %s, want 1s", p.Visibility)
	}
	t.Setenv("QUOTEFLOW_QUEUE_POLL", "soon")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"compensate", "--once"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `QUOTEFLOW_QUEUE_POLL="soon"`) {
		t.Errorf("QUOTEFLOW_QUEUE_POLL=soon: exit %d, stderr %q; want 2 naming the variable", code, stderr.String())
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

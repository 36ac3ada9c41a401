package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"quoteflowlab.dev/checkpoints/16/quoteflow"
)

// timings are the settings of the compensation worker's waits: flags whose
// defaults come from environment variables when those are set, and else
// from the lesson. Tests and exercises shorten them (a visibility timeout of
// 300ms redelivers a lost job in 300ms, not 10s).
type timings struct {
	visibility, poll time.Duration
	bad              []string        // environment values that are not durations
	check1           []func() string // one per flag: what is wrong with its value
}

func timingFlags(fs *flag.FlagSet) *timings {
	t := &timings{}
	t.duration(fs, &t.visibility, "queue-visibility", "QUOTEFLOW_QUEUE_VISIBILITY", 10*time.Second,
		"a compensation job a worker took and did not finish is delivered again after this (the queue's visibility timeout)")
	t.duration(fs, &t.poll, "queue-poll", "QUOTEFLOW_QUEUE_POLL", 100*time.Millisecond,
		"the compensation worker looks for due jobs this often")
	return t
}

// The range of every timing: a shorter wait would spin a CPU, a longer one
// is no setting of a lesson's service (and near the largest Duration a
// jittered wait overflows).
const (
	minTiming = time.Millisecond
	maxTiming = 24 * time.Hour
)

// duration defines flag name, defaulting to env's value when it is set.
func (t *timings) duration(fs *flag.FlagSet, p *time.Duration, name, env string, def time.Duration, usage string) {
	if v := os.Getenv(env); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < minTiming || d > maxTiming {
			t.bad = append(t.bad, fmt.Sprintf("%s=%q is not a duration from %s to %s (like 300ms)", env, v, minTiming, maxTiming))
		} else {
			def = d
		}
	}
	fs.DurationVar(p, name, def, usage+" (env "+env+")")
	t.check1 = append(t.check1, func() string {
		if *p < minTiming || *p > maxTiming {
			return fmt.Sprintf("--%s %s: want a duration from %s to %s (like 300ms)", name, *p, minTiming, maxTiming)
		}
		return ""
	})
}

// check refuses a bad setting as a usage error, before anything is opened.
func (t *timings) check(stderr io.Writer) (int, bool) {
	for _, b := range t.bad {
		fmt.Fprintln(stderr, "quoteflow:", b)
		return 2, false
	}
	for _, c := range t.check1 {
		if msg := c(); msg != "" {
			fmt.Fprintln(stderr, "quoteflow:", msg)
			return 2, false
		}
	}
	return 0, true
}

// basket is the basket policy with these timings (the rest: the lesson's).
func (t *timings) basket() quoteflow.BasketPolicy {
	return quoteflow.BasketPolicy{Visibility: t.visibility, PollEvery: t.poll}
}

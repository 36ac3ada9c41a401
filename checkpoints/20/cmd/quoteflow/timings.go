package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"quoteflowlab.dev/checkpoints/20/quota"
	"quoteflowlab.dev/checkpoints/20/quoteflow"
)

// timings are the settings of the waits of the compensation worker and of
// the shared quota (with --redis): flags whose defaults come from
// environment variables when those are set, and else from the lesson. Tests
// and exercises shorten them (a lease TTL of 300ms gives a killed process's
// slots back in 300ms, not 2s).
type timings struct {
	visibility, poll    time.Duration
	leaseTTL, quotaPoll time.Duration
	bad                 []string        // environment values that are not durations
	check1              []func() string // one per flag: what is wrong with its value
}

func timingFlags(fs *flag.FlagSet) *timings {
	t := &timings{}
	t.duration(fs, &t.visibility, "queue-visibility", "QUOTEFLOW_QUEUE_VISIBILITY", 10*time.Second,
		"a compensation job a worker took and did not finish is delivered again after this (the queue's visibility timeout)")
	t.duration(fs, &t.poll, "queue-poll", "QUOTEFLOW_QUEUE_POLL", 100*time.Millisecond,
		"the compensation worker looks for due jobs this often")
	t.duration(fs, &t.leaseTTL, "lease-ttl", "QUOTEFLOW_LEASE_TTL", quota.DefaultTTL,
		"with --redis: a quota lease not renewed for this long expires (a killed process's slots come back within it); "+
			"a running call renews its lease every TTL/3, and after Redis comes back empty no new lease is granted for one TTL (the grace)")
	t.duration(fs, &t.quotaPoll, "quota-poll", "QUOTEFLOW_QUOTA_POLL", quota.DefaultPoll,
		"with --redis: a caller waiting in line for the shared quota is woken when a slot is granted to it; "+
			"if no wake-up comes, it tries again after about this long (jittered), or when the first lease would expire")
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
	if t == nil {
		return 0, true
	}
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
	if t.leaseTTL < minLeaseTTL {
		fmt.Fprintf(stderr, "quoteflow: --lease-ttl %s: want at least %s (renewals run every TTL/3)\n", t.leaseTTL, minLeaseTTL)
		return 2, false
	}
	return 0, true
}

// minLeaseTTL is the shortest TTL package quota accepts.
const minLeaseTTL = 30 * time.Millisecond

// quota is the shared quota's configuration with these timings (nil: the
// lesson's).
func (t *timings) quota(rate quota.Rate) quota.RedisConfig {
	c := quota.RedisConfig{Limit: quoteflow.DefaultOutbound, Rate: rate, TTL: quota.DefaultTTL, Poll: quota.DefaultPoll}
	if t != nil {
		c.TTL, c.Poll = t.leaseTTL, t.quotaPoll
	}
	return c
}

// basket is the basket policy with these timings (the rest, or all of it
// for nil: the lesson's).
func (t *timings) basket() quoteflow.BasketPolicy {
	if t == nil {
		return quoteflow.BasketPolicy{}
	}
	return quoteflow.BasketPolicy{Visibility: t.visibility, PollEvery: t.poll}
}

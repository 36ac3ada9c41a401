// Package queue is a durable work queue with leases: a job stays in it until
// a worker says it is done, so a worker that dies mid-job loses nothing —
// the lease expires and the job is delivered again (at least once).
package queue

import (
	"context"
	"errors"
	"time"
)

// DefaultMaxTries is how many deliveries a job gets before it is dead.
const DefaultMaxTries = 5

// Job is one unit of work. ID is the caller's, and makes Enqueue idempotent.
type Job struct {
	ID         string    `json:"id"`
	Body       []byte    `json:"body"`        // the caller's payload, opaque here
	Tries      int       `json:"tries"`       // deliveries so far, this one included once leased
	LastReason string    `json:"last_reason"` // why the last try failed ("" before any)
	State      State     `json:"state"`
	NotBefore  time.Time `json:"not_before"`  // pending: not delivered before this
	LeaseUntil time.Time `json:"lease_until"` // leased: delivered again after this
}

// State is where a job stands.
type State string

const (
	Pending State = "pending" // waiting for a worker
	Leased  State = "leased"  // a worker has it until LeaseUntil
	Done    State = "done"    // finished; kept (up to a limit) so a second Enqueue of its ID is a no-op
	Dead    State = "dead"    // failed MaxTries times; kept with its LastReason
)

// Counts is the number of jobs in each state.
type Counts struct {
	Pending int `json:"pending"`
	Leased  int `json:"leased"`
	Done    int `json:"done"`
	Dead    int `json:"dead"`
	// Pruned counts the finished jobs removed so far to keep the queue bounded.
	Pruned int `json:"pruned"`
}

// ErrNotFound is returned for an ID the queue does not hold.
var ErrNotFound = errors.New("queue: no such job")

// Queue is what a compensation worker needs. Every method is safe for
// concurrent use, and a write is durable when it returns.
type Queue interface {
	// Enqueue adds jobs as pending, each delivered no earlier than its
	// NotBefore (zero: at once); a job whose ID is already held, in any
	// state, is left as it is. A queue is bounded: past its limit Enqueue
	// fails with ErrFull and writes nothing.
	Enqueue(ctx context.Context, jobs ...Job) error
	// Lease hands out up to n jobs that are pending and due, or leased with
	// an expired lease, and leases them for visibility. Each delivery counts
	// a try; a job whose lease expired on its last try becomes dead instead.
	Lease(ctx context.Context, n int, visibility time.Duration) ([]Job, error)
	// Complete marks a job done. Completing a done job again is a no-op; a
	// job no longer held (pruned, or deleted with what it was for) is
	// ErrNotFound.
	Complete(ctx context.Context, id string) error
	// Fail records why a try failed: the job is pending again, due after
	// retryIn, or dead when it has had its MaxTries. It reports dead.
	Fail(ctx context.Context, id, reason string, retryIn time.Duration) (dead bool, err error)
	// Counts counts the jobs by state.
	Counts(ctx context.Context) (Counts, error)
}

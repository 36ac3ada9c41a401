package quoteflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"quoteflowlab.dev/checkpoints/20/adaptive"
	"quoteflowlab.dev/checkpoints/20/fanout"
	"quoteflowlab.dev/checkpoints/20/queue"
)

// leaseBatch is how many compensation jobs one pass takes at most.
const leaseBatch = 50

// compensation is a queued supplier call: enough to make it again, with the
// line's X-Request-ID, and to put its answer in the right place.
type compensation struct {
	BasketID  string `json:"basket_id"`
	Index     int    `json:"index"`
	Supplier  string `json:"supplier"`
	SKU       string `json:"sku"`
	Quantity  int    `json:"quantity"`
	Scenario  string `json:"scenario"`
	RequestID string `json:"request_id"`
}

// compensationJob is the queue job for one cut-off call. Its ID is
// (basket, line, supplier): enqueued twice, it is still one job.
func compensationJob(basketID string, index int, supplier string, item BasketItem, scenario, requestID string) queue.Job {
	c := compensation{BasketID: basketID, Index: index, Supplier: supplier, SKU: item.SKU,
		Quantity: item.Quantity, Scenario: scenario, RequestID: requestID}
	body, _ := json.Marshal(c) // plain strings and ints
	return queue.Job{ID: fmt.Sprintf("%s/%d/%s", basketID, index, supplier), Body: body}
}

// CompensateOnce takes the compensation jobs that are due (up to a batch),
// makes their calls through the shared limiter with the basket's retry
// policy, and writes each result into its basket: a quote or a final failure
// completes the job; a retryable failure puts it back (dead after its last
// try, which the basket then shows). A job whose line was already settled is
// completed without a call: delivery is at least once, the effect once.
// It returns how many jobs it took.
func (s *Service) CompensateOnce(ctx context.Context) (int, error) {
	if s.queue == nil || s.store == nil {
		return 0, ErrNoStore
	}
	jobs, err := s.queue.Lease(ctx, leaseBatch, s.basket.Visibility)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	var todo []queue.Job
	var tasks []compensation
	var calls []fanout.Job[*Quote]
	for _, j := range jobs {
		var c compensation
		if err := json.Unmarshal(j.Body, &c); err != nil {
			s.queue.Fail(ctx, j.ID, "bad_job", 0)
			continue
		}
		b, err := s.store.Get(ctx, c.BasketID)
		switch {
		case errors.Is(err, ErrNoBasket):
			s.queue.Complete(ctx, j.ID) // its basket is gone: there is nothing left to fill in
			continue
		case err != nil:
			return 0, err
		case !b.queuedFailure(c.Index, c.Supplier):
			s.queue.Complete(ctx, j.ID) // settled already, by an earlier delivery
			continue
		}
		q := QuoteRequest{SKU: c.SKU, Quantity: c.Quantity, Scenario: c.Scenario}
		todo, tasks = append(todo, j), append(tasks, c)
		calls = append(calls, s.supplierJob(c.Supplier, q, c.RequestID, nil))
	}
	// Each pass ends well within the lease, so no job is delivered twice while
	// it runs. Each job is recorded the moment it ends, not when the slowest
	// of the batch does: a worker killed mid-pass loses only the calls still
	// running, never an answer it already had (which would be asked again).
	opts := s.options(s.basket.Visibility / 2)
	opts.Budget = nil // the queue paces itself (RetryDelay, dead after 5 tries): the budget is for answers a buyer waits on
	errs := make([]error, len(calls))
	panics := make([]any, len(calls))
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			defer catchPanic(&panics[i])
			o := opts
			o.Gate = s.gate(func(int) string { return tasks[i].Supplier })
			// A queued line is still a basket's line: it waits behind
			// single quotes at its supplier's line and is shed first.
			r := fanout.Run(withPriority(ctx, adaptive.Low), calls[i:i+1], o)[0]
			errs[i] = s.finish(ctx, todo[i], tasks[i], r)
		})
	}
	wg.Wait()
	for _, p := range panics {
		if p != nil {
			panic(p)
		}
	}
	return len(jobs), errors.Join(errs...)
}

// finish writes one compensation result to its basket and the queue, and
// logs it. A basket the store dropped while the call ran (it keeps only the
// newest, with their jobs) has nothing left to fill in.
func (s *Service) finish(ctx context.Context, j queue.Job, c compensation, r fanout.Result[*Quote]) error {
	err := s.record(ctx, j, c, r)
	if errors.Is(err, ErrNoBasket) || errors.Is(err, queue.ErrNotFound) {
		return nil
	}
	return err
}

func (s *Service) record(ctx context.Context, j queue.Job, c compensation, r fanout.Result[*Quote]) error {
	reason := "ok"
	if !r.OK() {
		reason = string(r.Code)
	}
	s.logger.Info("compensation call finished", "job", j.ID, "try", j.Tries, "attempts", r.Attempts,
		"elapsed_ms", float64(millis(r.Elapsed)), "reason", reason)
	if !r.OK() && fanout.Retryable(r.Code) {
		dead, err := s.queue.Fail(ctx, j.ID, reason, max(s.retryDelay(j.Tries), retryAfter(r.Err)))
		if err != nil || !dead {
			return err
		}
		// The stores settle a dead job's line in the queue's own transaction
		// (or script), so this finds it settled and changes nothing; it
		// covers a queue and store that do not.
		return s.settle(ctx, c, nil, &LineFailure{Supplier: c.Supplier, Code: Code(r.Code), Attempts: r.Attempts,
			ElapsedMS: millis(r.Elapsed), Dead: true})
	}
	var f *LineFailure
	if !r.OK() {
		f = &LineFailure{Supplier: c.Supplier, Code: Code(r.Code), Attempts: r.Attempts, ElapsedMS: millis(r.Elapsed)}
	}
	if err := s.settle(ctx, c, r.Value, f); err != nil {
		return err
	}
	return s.queue.Complete(ctx, j.ID)
}

// settle writes a supplier's final word into the stored basket, once: a
// second delivery of the same job finds the failure no longer queued and
// changes nothing.
func (s *Service) settle(ctx context.Context, c compensation, q *Quote, f *LineFailure) error {
	return s.store.Update(ctx, c.BasketID, func(b *Basket) bool {
		if !b.queuedFailure(c.Index, c.Supplier) {
			return false
		}
		b.settle(c.Index, c.Supplier, q, f)
		return true
	})
}

// retryDelay is the pause before a failed job's next delivery.
func (s *Service) retryDelay(tries int) time.Duration {
	d := s.basket.RetryDelay
	for i := 1; i < tries && d < 2*time.Second; i++ {
		d *= 2
	}
	return min(d, 2*time.Second)
}

// Drain runs CompensateOnce until no job is due: what `quoteflow compensate
// --once` does. Jobs waiting for their retry delay stay queued.
func (s *Service) Drain(ctx context.Context) error {
	for {
		n, err := s.CompensateOnce(ctx)
		if err != nil || n == 0 {
			return err
		}
	}
}

// RunCompensation is the in-process worker: it drains the queue every
// PollEvery until ctx ends, and returns then. A queue out of reach (Redis
// gone) is logged once, and again when a pass works.
func (s *Service) RunCompensation(ctx context.Context) {
	t := time.NewTicker(s.basket.PollEvery)
	defer t.Stop()
	failing := false
	for {
		switch err := s.Drain(ctx); {
		case err != nil && ctx.Err() == nil && !failing:
			s.logger.Error("compensation pass failed; retrying quietly until one works", "err", err)
			failing = true
		case err == nil && failing:
			s.logger.Info("compensation passes work again")
			failing = false
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

package budget

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// A stamp is when one call arrived at the partner by the grader's clock,
// and the X-Budget-Ms it carried (-1: none).
type stamp struct {
	at     time.Time
	budget int64
}

// watchArrivals reads the partner's log of key while the tool runs (until
// done is closed). The log gives arrival times relative to the key's first
// call; a call still running gives its time so far, so the grader's clock
// less that time, read after the answer came back, is no earlier than the
// call's real arrival. The earliest such estimate of the first call puts
// every arrival on the grader's clock: late, never early.
func (l *lab) watchArrivals(ctx context.Context, key string, done <-chan struct{}) func() []stamp {
	var first time.Time
	var mu sync.Mutex
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for {
			log, err := l.partnerLog(ctx, key)
			now := time.Now()
			if err == nil && len(log.Calls) > 0 && log.Calls[0].End == "running" {
				at := now.Add(-time.Duration(log.Calls[0].DurationMs * float64(time.Millisecond)))
				mu.Lock()
				if first.IsZero() || at.Before(first) {
					first = at
				}
				mu.Unlock()
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() []stamp {
		<-finished
		log, err := l.partnerLog(ctx, key)
		if err != nil || first.IsZero() {
			return nil
		}
		var out []stamp
		for _, e := range log.Calls {
			st := stamp{at: first.Add(time.Duration((e.ArrivalMs - log.Calls[0].ArrivalMs) * float64(time.Millisecond))), budget: -1}
			if e.BudgetMs != nil {
				st.budget = *e.BudgetMs
			}
			out = append(out, st)
		}
		return out
	}
}

// Fanout's drawn classes: where the budget ends against the partner's
// 200 ms of work per call. Each grading deals every class once (a deck),
// with --n (1, 2-3, 4-5) and --connect (left to its default, short, long)
// dealt from decks of their own, and the budget drawn inside its class
// at least 30 ms from every call's end, where the outcome changes.
const (
	fanoutFirstCut = iota // under one call's work: the first call is sent and cut
	fanoutCutMid          // ends inside a later call: it is cut, the rest not sent
	fanoutAllFit          // every call answered, with time to spare
	fanoutClasses
)

// randomFanouts draws n fanout runs, stratified (above).
func randomFanouts(r *rand.Rand, n int) map[string]*fanned {
	out := map[string]*fanned{}
	budgets, ns, connects := deck(r, fanoutClasses, n), deck(r, 3, n), deck(r, 3, n)
	for i := range n {
		c := &fanned{}
		switch ns[i] {
		case 0:
			c.n = 1
		case 1:
			c.n = 2 + r.IntN(2)
		default:
			c.n = 4 + r.IntN(2)
		}
		switch budgets[i] {
		case fanoutFirstCut:
			c.budget = float64(60 + r.IntN(110)) // 60-169 ms
		case fanoutCutMid:
			if c.n == 1 {
				c.n = 2 // a later call needs one before it
			}
			k := 1 + r.IntN(c.n-1) // calls answered before the cut
			c.budget = float64(k)*fanoutWork + float64(30+r.IntN(141))
		default:
			c.budget = float64(c.n)*fanoutWork + float64(300+r.IntN(301))
		}
		switch connects[i] {
		case 1:
			c.connect = float64(2+r.IntN(4)) / 10 // 0.2-0.5 s
		case 2:
			c.connect = float64(10+r.IntN(11)) / 10 // 1-2 s
		}
		out[fmt.Sprintf("random%d", i)] = c
	}
	return out
}

func (c *fanned) String() string {
	s := fmt.Sprintf("fanout --budget-ms %.0f --n %d", c.budget, c.n)
	if c.connect != 0 {
		s += fmt.Sprintf(" --connect %v", c.connect)
	}
	return s
}

// modelFanout compares every field of one fanout run with the model: each
// call sent carries the budget left by the grader's clock (from the tool's
// start to the call's arrival), what it received is what the partner
// echoed, and its time fits the partner's work and the run.
func modelFanout(m *model, c *fanned) {
	wall := c.run.wallMS()
	m.need("calls", len(c.out.Calls) == c.n, "has %d entries for --n %d", len(c.out.Calls), c.n)
	sentSeen, stopped := 0, false
	for i, call := range c.out.Calls {
		f := func(name string) string { return "calls[]." + name }
		m.need(f("elapsed_ms"), call.ElapsedMS >= 0 && call.ElapsedMS <= wall+rounding, "of call %d is %.1f, more than the %.0f ms the process lived", i+1, call.ElapsedMS, wall)
		if call.SentBudgetMS <= 0 { // not sent: nothing was left
			stopped = true
			m.need(f("sent_budget_ms"), true, "")
			m.need(f("received"), call.Received == nil, "of call %d, not sent, is set, want null", i+1)
			m.need(f("elapsed_ms"), call.ElapsedMS <= 1, "of call %d, not sent, is %.1f, want 0", i+1, call.ElapsedMS)
			continue
		}
		m.need(f("sent_budget_ms"), !stopped, "of call %d is %.0f after a call with nothing left", i+1, call.SentBudgetMS)
		k := sentSeen
		sentSeen++
		m.need(f("sent_budget_ms"), call.SentBudgetMS <= c.budget, "of call %d is %.0f, more than the budget of %.0f ms", i+1, call.SentBudgetMS, c.budget)
		if c.stamps == nil {
			m.saw(f("sent_budget_ms"), "the first call's arrival was not seen while it ran: compared with the partner's log only")
		} else if k < len(c.stamps) {
			st := c.stamps[k]
			m.need(f("sent_budget_ms"), st.budget >= 0 && math.Abs(float64(st.budget)-call.SentBudgetMS) <= 1, "of call %d is %.0f, but the call carried X-Budget-Ms %d", i+1, call.SentBudgetMS, st.budget)
			// By the grader's clock: the tool cannot have started before the
			// grader started it, nor sent before the call arrived, so at least
			// the budget less the time from the start to the arrival was left.
			since := float64(st.at.Sub(c.run.start)) / float64(time.Millisecond)
			m.need(f("sent_budget_ms"), float64(st.budget) >= c.budget-since-1, "of call %d is %d, less than the %.0f ms left by the grader's clock (%.0f ms from the tool's start to the call's arrival)", i+1, st.budget, c.budget-since, since)
			m.within(f("sent_budget_ms"), float64(st.budget), c.budget-since+slack, "of call %d is %d where %.0f ms were left by the grader's clock, as if the budget started long after the tool", i+1, st.budget, c.budget-since)
		} else {
			if lostInTransit(c) {
				m.slow(f("sent_budget_ms"), "of call %d is %.0f, but no such call arrived (cut before it did)", i+1, call.SentBudgetMS)
			} else {
				m.need(f("sent_budget_ms"), false, "of call %d is %.0f, but no such call arrived", i+1, call.SentBudgetMS)
			}
		}
		if call.Received != nil {
			m.need(f("received"), k < len(c.log) && c.log[k].BudgetMs != nil && math.Abs(*call.Received-float64(*c.log[k].BudgetMs)) <= 1, "of call %d is %.0f, not the X-Budget-Ms the partner received", i+1, *call.Received)
			m.need(f("elapsed_ms"), call.ElapsedMS >= fanoutWork-rounding, "of call %d is %.1f for an answer the partner sent after 200 ms", i+1, call.ElapsedMS)
			if late := fanoutWork - call.SentBudgetMS; late > 100 {
				// Read that late past its budget: its timer was late by as
				// much; a timing miss while the machine can explain it
				// (checkFanoutCut says how), never more.
				explained := 100 + loadLate(c.run)
				if k < len(c.log) {
					explained += max(c.log[k].DurationMs-fanoutWork, 0)
				}
				if late > explained {
					m.need(f("received"), false, "of call %d is set: it read the partner's 200 ms answer with %.0f ms left, %.0f ms past its budget, more than the %.0f ms the machine can have made its timer late", i+1, call.SentBudgetMS, late, explained)
				} else {
					m.slow(f("received"), "of call %d is set: it read the partner's 200 ms answer with %.0f ms left (the machine can have made its timer %.0f ms late)", i+1, call.SentBudgetMS, explained)
				}
			}
		} else {
			m.need(f("elapsed_ms"), call.ElapsedMS >= min(call.SentBudgetMS, fanoutWork)-early, "of call %d is %.1f: a call cut before its budget of %.0f ms", i+1, call.ElapsedMS, call.SentBudgetMS)
			if call.SentBudgetMS >= fanoutWork+300 {
				m.slow(f("received"), "of call %d is null, though %.0f ms were left for 200 ms of work", i+1, call.SentBudgetMS)
			} else {
				m.seen[f("received")] = true
			}
		}
	}
	if sentSeen != len(c.log) && lostInTransit(c) {
		m.slow("calls", "holds %d calls sent, but %d arrived (the last ones cut before they arrived)", sentSeen, len(c.log))
	} else {
		m.need("calls", sentSeen == len(c.log), "holds %d calls sent, but %d arrived", sentSeen, len(c.log))
	}
	// On the ideal clock, call k starts at 200·k: it is answered when
	// at least 200 ms are left, and sent while anything is.
	answered := 0
	for _, call := range c.out.Calls {
		if call.Received != nil {
			answered++
		}
	}
	if ideal := int(math.Min(float64(c.n), math.Floor((c.budget-1)/fanoutWork))); answered < ideal-1 {
		m.slow("calls", "has %d answered calls where the budget leaves time for %d", answered, ideal)
	}
	total := 0.0
	for _, call := range c.out.Calls {
		total += call.ElapsedMS
	}
	m.within("calls", total, c.budget+slack, "took %.1f ms together for a budget of %.0f ms", total, c.budget)
}

// checkFanoutModel compares every fanout run with the model.
func (g *grader) checkFanoutModel(cases map[string]*fanned, seed uint64) {
	var v verdict
	var unseen, names []string
	for _, name := range sortedNames(cases) {
		names = append(names, name)
		m := newModel(&v, cases[name].String())
		modelFanout(m, cases[name])
		unseen = append(unseen, checkFields("fanout", m)...)
	}
	g.modelJudge("fanout_model", "fanout", v, names, dedupe(unseen), seed, "", "")
}

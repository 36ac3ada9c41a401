package budget

import (
	"context"
	"fmt"
	"strings"
)

// Running one drawn case alone: for its shrink, and for --case.

// failedHard reports whether a verdict failed on more than timing.
func failedHard(v verdict) bool { return !v.ok() && v.hard }

// absorb adds w's clauses to v.
func (v *verdict) absorb(w verdict) {
	for _, b := range w.buts {
		v.add(b)
	}
	v.hard = v.hard || w.hard
}

// callOnce runs one call case and compares it with the model.
func (g *grader) callOnce(ctx context.Context, c callCase) verdict {
	var v verdict
	args := c.args(g.lab)
	r := g.exec(ctx, "call", args...)
	var o callOut
	if !v.need(r.problem == "", "%s: %s", c, r.problem) {
		return v
	}
	if err := r.decode(&o, callKeys...); !v.need(err == nil, "%s: %v", c, err) {
		return v
	}
	log, _ := g.callLog(ctx, args)
	modelCall(newModel(&v, c.String()), c, o, r, log)
	return v
}

// deadlineOnce runs one deadline case and compares it with the model.
func (g *grader) deadlineOnce(ctx context.Context, c deadlineCase) verdict {
	var v verdict
	key := nonce()
	args, urls := c.args(g.lab, key)
	r := g.exec(ctx, "deadline", args...)
	if !v.need(r.problem == "", "%s: %s", c, r.problem) {
		return v
	}
	var o deadlineOut
	err := r.decode(&o, deadlineKeys...)
	if err == nil {
		err = nestedKeys(firstValue(r.stdout), "calls", deadlineCallKeys...)
	}
	if !v.need(err == nil, "%s: %v", c, err) {
		return v
	}
	log, err := g.lab.settle(ctx, key)
	if !v.need(err == nil, "%s: %v", c, err) {
		return v
	}
	var arrivals []arrival
	for _, e := range log.Calls {
		arrivals = append(arrivals, arrival{at: e.ArrivalMs, end: e.End, dur: e.DurationMs})
	}
	modelDeadline(newModel(&v, c.String()), c, urls, o, r, arrivals)
	return v
}

// retryOnce runs one retry case and compares it with the model.
func (g *grader) retryOnce(ctx context.Context, j retryJob) verdict {
	var v verdict
	key := nonce()
	r := g.execWithin(ctx, retryTimeout, "retry", j.args(g.lab, key)...)
	if !v.need(r.problem == "", "%s: %s", j, r.problem) {
		return v
	}
	x := &retried{job: j, run: r}
	if err := r.decode(&x.out, retryKeys...); !v.need(err == nil, "%s: %v", j, err) {
		return v
	}
	if j.partner() {
		var err error
		if x.log, err = g.lab.settle(ctx, key); !v.need(err == nil, "%s: %v", j, err) {
			return v
		}
	}
	modelRetry(newModel(&v, j.String()), x)
	return v
}

// A drawn case, as the shrink and the report see it.
type drawnCase interface {
	String() string
	Encode() string
}

// shrunk shrinks the first drawn case (by name) whose own verdict failed
// hard, and returns the clause that names its smallest failing form, what
// failed in it, and the command that replays it, and the drawn case as
// named in its own clauses; "" when no drawn case failed hard.
func shrunk[C drawnCase](prop string, cases map[string]C, per map[string]verdict, smaller func(C) []C, once func(C) verdict) (clause, drawn string) {
	for _, name := range sortedNames(per) {
		if !strings.HasPrefix(name, "drawn") || !failedHard(per[name]) {
			continue
		}
		c, ok := cases[name]
		if !ok {
			continue
		}
		why := per[name].buts
		small, runs := shrink(c, smaller, func(s C) bool {
			v := once(s)
			if failedHard(v) {
				why = v.buts
				return true
			}
			return false
		})
		how := "as drawn"
		if runs > 0 && small.Encode() != c.Encode() {
			how = fmt.Sprintf("shrunk from %s in %d runs", c, runs)
		}
		return fmt.Sprintf("the smallest failing case (%s): %s; replay it alone: %s", how, strings.Join(shortList(why, 2), "; "), replay(prop, small.Encode())), c.String()
	}
	return "", ""
}

// judgeReplay judges prop from the one case --case named.
func (g *grader) judgeReplay(prop string, c drawnCase, v verdict) {
	detail := fmt.Sprintf("the case %s (--case '%s') is what the contract makes of it", c, c.Encode())
	if !v.ok() {
		detail = strings.Join(shortList(v.buts, 6), "; ")
	}
	g.judge(prop, v, "%s", detail)
}

// replayed runs the --case of tool, when there is one: it reports whether
// it did (and the tool's other scenarios are then not run).
func (g *grader) replayed(ctx context.Context, tool string) bool {
	rc := g.replay
	if rc == nil || rc.tool != tool {
		return false
	}
	switch tool {
	case "call":
		g.judgeReplay("call_model", rc.call, g.callOnce(ctx, rc.call))
	case "deadline":
		g.judgeReplay("deadline_model", rc.deadline, g.deadlineOnce(ctx, rc.deadline))
	case "retry":
		g.judgeReplay("retry_model", rc.retry, g.retryOnce(ctx, rc.retry))
	}
	return true
}

package quoteflow

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// budgetHeader tells a supplier how many whole milliseconds it may work
// (budgetToSend), so it can stop work whose answer nobody would read.
// It plays the part of gRPC's grpc-timeout header.
const budgetHeader = "X-Budget-Ms"

// replyAllowance is kept back from the budget a supplier is told: a supplier
// told N ms stops N ms after the request reaches it, and its "I stopped"
// answer must still travel back while we listen. Told exactly what is left,
// it would stop at the very instant we hang up, and which came first would be
// a coin toss (measured against the provider lab: 13 of 20 slow quotes).
const replyAllowance = 20 * time.Millisecond

// budgetLeft is the time left before ctx's deadline, never negative. The
// quote's context always has one (Quote sets it); the attempt's read limit is
// that same deadline, so the read limit of every attempt is exactly the
// budget left when it starts.
func budgetLeft(ctx context.Context) time.Duration {
	deadline, ok := ctx.Deadline()
	if !ok {
		return DefaultBudget
	}
	return max(time.Until(deadline), 0)
}

// budgetToSend is the X-Budget-Ms for an attempt starting with left: the
// whole milliseconds left, rounded down (never promise more time than there
// is), less the replyAllowance.
func budgetToSend(left time.Duration) string {
	return strconv.FormatInt(max(left-replyAllowance, 0).Milliseconds(), 10)
}

// stoppedAtBudget reports a supplier's answer to X-Budget-Ms: 504 with the
// error code budget_exhausted, meaning it stopped working when the budget we
// sent ran out. That is our timeout, seen from the other side, and is reported
// as one: on a machine busy enough to delay the answer past our own deadline
// the result is timeout too, so the code does not depend on whose clock won.
func stoppedAtBudget(resp *http.Response) bool {
	if resp.StatusCode != http.StatusGatewayTimeout {
		return false
	}
	var body struct {
		Error string `json:"error"`
	}
	err := json.NewDecoder(io.LimitReader(resp.Body, maxSupplierBody)).Decode(&body)
	return err == nil && body.Error == "budget_exhausted"
}

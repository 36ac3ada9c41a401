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
// whole milliseconds left, rounded down: never promise more time than there
// is. The supplier counts from when the request reaches it, so it stops a
// little after we hang up; the provider lab counts such work as abandoned
// whichever of the two it notices first.
func budgetToSend(left time.Duration) string {
	return strconv.FormatInt(max(left, 0).Milliseconds(), 10)
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

// The breaker of checkpoint 19's defaults, built with failsafe-go's
// circuitbreaker instead: which errors count, 10 failures of the last 20,
// open for 1 s ±20 %, 3 good probes to close. Twelve calls that all fail
// show when it opens and that it then refuses at once.
//
// Run it:  go run ./lessons/19/failsafe
package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
)

// errOutage stands for a 5xx, a timeout or a transport error.
var errOutage = errors.New("outage")

func main() {
	cb := circuitbreaker.NewBuilder[any]().
		HandleIf(func(_ any, err error) bool { return errors.Is(err, errOutage) }). // only outages count
		WithFailureThresholdRatio(10, 20).                                          // 10 failures of the last 20
		WithDelay(time.Second).WithJitterFactor(0.2).                               // open for 1 s ±20 %
		WithSuccessThreshold(3).                                                    // 3 good probes close it
		Build()
	calls := 0
	for i := 1; i <= 12; i++ {
		err := failsafe.With[any](cb).Run(func() error { calls++; return errOutage })
		fmt.Printf("call %2d: %-22v breaker %-6v (the dependency was called %d times)\n", i, err, cb.State(), calls)
	}
}

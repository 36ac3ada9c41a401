// Command retry calls one URL until it succeeds, runs out of attempts, or
// runs out of budget. (E15 starter: write it.)
//
//	retry --url U --budget-ms N --attempts K [--base-ms B] [--connect S] [--min-ms N]
//
// Defaults: --base-ms 100, --connect 1 (seconds), --min-ms 0.
//
// Print one JSON object:
//
//	{"ok": bool, "attempts": n, "elapsed_ms": number, "waits_ms": [...],
//	 "stopped_reason": "ok"|"attempts"|"budget"}
//
// Rules:
//
//   - The wait before attempt k+1 is uniform in [0, B·2^(k-1)] (full jitter).
//     Take a --seed flag if you want repeatable runs; the grader does not pass one.
//   - Each attempt's read limit is the budget left when it starts, and no
//     attempt starts with less than --min-ms left.
//   - Waits are paid from the same budget as the calls: before sleeping, stop
//     with "budget" if after the wait no call would fit (less than --min-ms left).
//   - waits_ms lists the waits you really slept, in order: each one measured
//     around the sleep, or the planned wait of a sleep that ran to its end
//     (a sleep cut short by the budget is not a wait). The grader checks
//     them against the partner's clock, and the caps allow 25 ms of timer
//     lateness for a measured sleep.
//   - elapsed_ms is the whole run, waits included, as you measured it.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "retry: TODO: not written yet (lessons/15/README.md, `lab hint E15`)")
	os.Exit(1)
}

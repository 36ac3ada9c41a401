// Command probe measures the three ways a call fails. (E15 starter: write it.)
//
//	probe --base BASE --blackhole ADDR
//
// Print the three rows as a JSON array (an object holding them under
// "rows" is accepted too):
//
//	[{"kind": "refused", "target", "elapsed_ms", "error"},
//	 {"kind": "connect_timeout", ...},
//	 {"kind": "read_timeout", ...}]
//
// Choose your own connect and read limits (flags with defaults are fine;
// 0.5 s each is a good start). Save one run, made with no flags but --base
// and --blackhole, as probe.json beside the tools: your report quotes it,
// and the grader compares it with a run it makes itself.
//
// Rules:
//
//   - refused: a closed loopback port (listen on 127.0.0.1:0, close it, dial it).
//   - connect_timeout: the provider lab's blackhole (--blackhole, default lab 127.0.0.1:9102).
//     Never dial an address outside 127.0.0.0/8.
//   - read_timeout: a partner call slower than your read limit, e.g. BASE/call?ms=2000.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "probe: TODO: not written yet (lessons/15/README.md, `lab hint E15`)")
	os.Exit(1)
}

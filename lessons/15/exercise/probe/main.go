// Command probe measures the three ways a call fails. (E15 starter: write it.)
//
//	probe --base BASE --blackhole ADDR
//
// Print the three rows as a JSON array:
//
//	[{"kind": "refused", "target", "elapsed_ms", "error"},
//	 {"kind": "connect_timeout", ...},
//	 {"kind": "read_timeout", ...}]
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

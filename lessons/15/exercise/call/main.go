// Command call makes one GET with separate connect and read limits and says
// in which phase it ended. (E15 starter: write it.)
//
//	call --url U [--connect S] [--read S]
//
// --connect and --read are seconds (fractional: 0.3); defaults --connect 1,
// --read 5. Print one JSON object:
//
//	{"ok": bool, "status": int or null, "phase": "done"|"connect"|"read", "elapsed_ms": number, "error": string or null}
//
// elapsed_ms is the call's time as you measured it, from before the connect
// to the end; the grader compares it with its own clock.
//
// Rules:
//
//   - The connect limit covers reaching the partner only: put it in a
//     net.Dialer{Timeout: ...} used by your own http.Transport.
//   - The read limit covers waiting for the response, header AND body, once
//     connected: a partner that sends its headers at once and trickles the
//     body must still be cut at --read (Transport.ResponseHeaderTimeout is
//     not enough).
//   - A refused connection is phase "connect" (the partner was never reached).
//   - A received 4xx/5xx is phase "done" with ok false (the partner answered).
//   - Classify errors with errors.Is / errors.As, never by their text.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "call: TODO: not written yet (lessons/15/README.md, `lab hint E15`)")
	os.Exit(1)
}

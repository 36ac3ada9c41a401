// Package demo is the library of the lessons' demos: the experiments a
// lesson page shows, each run end to end and printed as the page's table.
// A lesson's demos are a program of its own, lessons/NN/demo, whose main
// calls Main with the lesson's Demos; `lab demo NN NAME` builds and runs
// it (so does `go run ./lessons/NN/demo NAME`).
//
// A demo gets an Env, which starts what the experiment needs on free
// loopback ports and stops all of it when the demo ends, however it ends:
// a checkpoint's QuoteFlow or a mutant of it (Build, Quoteflow), a
// provider lab in the program itself (Provider), a redis-server or its
// embedded stand-in (Redis); Do, PostQuote, PostBasket, RequestLog and
// Stats drive QuoteFlow and read the provider; a Table prints the figures.
// Markers and Figures are how `lab verify --docs` checks a page's copy of
// a demo's table against a fresh run.
//
// The program's protocol, for lab or any other caller:
//
//	PROGRAM -list    one line per demo, in page order: NAME, a tab, what it shows
//	PROGRAM NAME     runs the demo: its table on stdout, what it starts on stderr
//
// Exit 0 when the demo ran, 1 when it failed, 2 for an unknown name.
// With LAB_DEMO_RESULT=FILE in its environment (ResultEnv), the program
// also writes a Result there as JSON (how busy the machine was, the error)
// and leaves saying so to its caller; without it, it says so on stderr.
package demo

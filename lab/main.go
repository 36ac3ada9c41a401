// Command lab is the course's tool: it runs the provider lab, lists the
// lessons, checks answers, and shows hints, checks, diffs and demos. It
// knows no lesson: it finds them under lessons/ (quoteflowlab.dev/kit/course).
//
//	go run ./lab help
package main

import (
	"os"

	"quoteflowlab.dev/lab/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }

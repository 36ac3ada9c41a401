// Command lab runs the QuoteFlow provider lab and checks exercise answers.
//
//	go run ./lab help
package main

import (
	"os"

	"quoteflowlab.dev/lab/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }

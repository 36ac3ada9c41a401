// Command grader is E15's grader: lab check builds and runs it, and it
// answers with a report (the protocol is package report's). Its grading is
// package budget's.
package main

import (
	"os"

	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/lessons/15/grader/budget"
)

func main() {
	os.Exit(grade.Main(os.Args[1:], budget.New(), os.Stdout, os.Stderr))
}

// Command remake brings the mutant definitions in testscripts/mutants up to
// date with their checkpoints: for each one it applies the definition's
// replace/with edits to the current checkpoint file and rewrites the
// replacement file and its base hash. Run it after changing a checkpoint
// file that has mutants, and read the diff it leaves before committing:
//
//	go run ./lab/internal/mutant/remake          # remake what is out of date
//	go run ./lab/internal/mutant/remake -check   # only report; exit 1 if any is
//
// A new mutant is written as a definition with its story, required, the
// replace/with sections and an empty section named after the checkpoint
// file; remake fills in the rest.
package main

import (
	"flag"
	"fmt"
	"os"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/mutant"
)

func main() {
	checkOnly := flag.Bool("check", false, "only report out-of-date mutants; exit 1 if there are any")
	flag.Parse()
	wd, err := os.Getwd()
	if err != nil {
		fail(err)
	}
	root, err := course.FindRoot(wd)
	if err != nil {
		fail(err)
	}
	ms, err := mutant.LoadAll(root)
	if err != nil {
		fail(err)
	}
	stale, failed := 0, 0
	for _, m := range ms {
		if err := m.CheckCurrent(root); err == nil {
			continue
		} else if *checkOnly {
			fmt.Println(err)
			stale++
			continue
		}
		changed, err := m.Remake(root)
		switch {
		case err != nil:
			fmt.Fprintln(os.Stderr, "remake:", err)
			failed++
		case changed:
			fmt.Printf("remade %s/%s from the current %s\n", m.Exercise, m.Name, m.Target)
			stale++
		}
	}
	fmt.Printf("%d mutants, %d out of date, %d could not be remade\n", len(ms), stale, failed)
	if failed > 0 || (*checkOnly && stale > 0) {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "remake:", err)
	os.Exit(1)
}

package check

import (
	"fmt"
	"slices"
	"strings"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/report"
)

// Which says which of a lesson's checks to load.
type Which int

const (
	All Which = iota
	// Builds are the checkpoint's mutants and wheats: the builds an answer
	// runs on.
	Builds
	// Tools are the broken variants of the reference answer's tools (kind
	// broken): what a lesson's grader must reject.
	Tools
)

func (w Which) keeps(c Check) bool {
	switch w {
	case Builds:
		return c.Kind != report.Broken
	case Tools:
		return c.Kind == report.Broken
	}
	return true
}

// Of loads lesson l's checks of kind which, in Load's order; with only
// (lab check --only, --variant) just the one of that name, or none.
func Of(root string, l course.Lesson, which Which, only string) ([]Check, error) {
	all, err := Load(root, l.Checks(), l.Exercise())
	return slices.DeleteFunc(all, func(c Check) bool {
		return !which.keeps(c) || only != "" && c.Name != only
	}), err
}

// Find returns lesson l's check of kind which called name; for a name it
// does not have, an *UnknownError.
func Find(root string, l course.Lesson, which Which, name string) (Check, error) {
	cs, err := Of(root, l, which, "")
	if err != nil {
		return Check{}, err
	}
	if i := slices.IndexFunc(cs, func(c Check) bool { return c.Name == name }); i >= 0 {
		return cs[i], nil
	}
	return Check{}, &UnknownError{Which: which, Name: name, Known: Names(cs)}
}

// Names lists the checks' names, in order.
func Names(cs []Check) []string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return names
}

// UnknownError is Find's error for a name the lesson has no check of.
type UnknownError struct {
	Which Which
	Name  string
	Known []string // the names it has, in order
}

func (e *UnknownError) Error() string {
	what := "check"
	if e.Which == Tools {
		what = "broken variant"
	}
	return fmt.Sprintf("no such %s %q (known: %s)", what, e.Name, strings.Join(e.Known, ", "))
}

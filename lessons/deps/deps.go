//go:build lessondeps

// This file names the checkpoint packages that the lessons'
// starters and reference answers import. Those folders are in go.mod's
// ignore block (left out of ./...), and go mod tidy does not look into
// ignored folders: without this file it would drop the require lines of the
// checkpoints only they import, and `go run ./lessons/17/exercise` would
// no longer build. go mod tidy reads every file whatever its build tags;
// no build sets the tag lessondeps, so nothing here is ever compiled.
// lab/coursetest's TestLessonsThatImportACheckpointAreLeftOutOfDotDotDot
// keeps the list exact.
package deps

import (
	_ "quoteflowlab.dev/checkpoints/12/quoteflow"
	_ "quoteflowlab.dev/checkpoints/13/quoteflow"
	_ "quoteflowlab.dev/checkpoints/14/quoteflow"
	_ "quoteflowlab.dev/checkpoints/16/fanout"
	_ "quoteflowlab.dev/checkpoints/16/queue"
	_ "quoteflowlab.dev/checkpoints/16/quoteflow"
	_ "quoteflowlab.dev/checkpoints/17/queue"
	_ "quoteflowlab.dev/checkpoints/17/quota"
	_ "quoteflowlab.dev/checkpoints/17/quoteflow"
	_ "quoteflowlab.dev/checkpoints/18/hedge"
	_ "quoteflowlab.dev/checkpoints/18/quoteflow"
	_ "quoteflowlab.dev/checkpoints/19/breaker"
	_ "quoteflowlab.dev/checkpoints/19/fanout"
	_ "quoteflowlab.dev/checkpoints/19/hedge"
	_ "quoteflowlab.dev/checkpoints/19/quoteflow"
	_ "quoteflowlab.dev/checkpoints/20/adaptive"
	_ "quoteflowlab.dev/checkpoints/20/quoteflow"
)

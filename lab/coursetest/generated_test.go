package coursetest_test

import (
	"slices"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/lab/internal/mutagen"
	"quoteflowlab.dev/lab/internal/mutation"
)

// Every mutant-graded exercise has generated mutants (lab/internal/mutagen)
// of the code its scope.txt names, and generated.txt holds their last
// kill-set run. This test fails when
//
//   - generated.txt is missing, or stale: the generator, the scope, a file
//     in scope or the reference answer changed since the run (it says the
//     command that remakes it);
//   - a survivor (the reference passes on it) or a mutant the reference
//     hangs on has no review line: equivalent, out of scope, or a property
//     to state, with a reason;
//   - a required mutant's message (what the reference says on it) maps to
//     no row of properties.md (the table under "## The reference's
//     messages"): each breaks a stated property, or crashes the service on
//     a scenario every answer runs ("crash: <on what>"), or is marked "not
//     stated: <why>" there and is then not required of an answer;
//   - a merged mutant names no required one.
//
// CONTRIBUTING.md ("Generated mutants") says how to review and map them.
func TestGeneratedMutantsAreCurrentAndReviewed(t *testing.T) {
	eachMutantLesson(t, func(t *testing.T, root string, l course.Lesson) {
		res, file := currentRun(t, root, l, mutation.Mutants, "review its survivors", "a file in scope")
		rows, props, err := mutation.Messages(root, l)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if mutation.Stated(r.Property) && !strings.HasPrefix(r.Property, mutation.Crash) && !slices.Contains(props, r.Property) {
				t.Errorf("%s/properties.md:%d: the message `%s` maps to %q, which is no row of the properties table", l.Checks(), r.Line, r.Contains, r.Property)
			}
		}
		required := map[string]bool{}
		for _, e := range res.Entries {
			if e.Status == mutagen.Required {
				required[e.Name] = true
			}
		}
		for _, e := range res.Entries {
			switch e.Status {
			case mutagen.Survivor, mutagen.Hangs:
				if reviewKind(e.Review) == "" {
					t.Errorf("%s: %s (%s at %s: %s) is a %s with no review line: write `review: <%s>: <why>` (lab show %s %s)",
						file, e.Name, e.Op, e.Where, e.Edit, e.Status, joinKinds(), l.Exercise(), e.Name)
				}
			case mutagen.Required:
				if p := mutation.PropertyOf(rows, e); p == "" {
					t.Errorf("%s: required %s (%s at %s) states no property: the reference says %q, and no row of the messages table of %s/properties.md matches it",
						file, e.Name, e.Op, e.Where, e.Says, l.Checks())
				}
			case mutagen.Merged:
				if !required[e.MergedInto] {
					t.Errorf("%s: %s is merged into %s, which is not required", file, e.Name, e.MergedInto)
				}
			}
		}
	})
}

func joinKinds() string {
	s := ""
	for i, k := range mutagen.ReviewKinds {
		if i > 0 {
			s += " | "
		}
		s += k
	}
	return s
}

// Every mutant-graded exercise says in allowed.txt what its contract allows
// to change and where, and wheats.txt holds the last wheat run of the
// wheats generated from it (lab/internal/mutagen). This test fails when
// allowed.txt or wheats.txt is missing, when wheats.txt is stale (the
// generator, allowed.txt, a file it names or the reference answer changed
// since the run: it says the command that remakes it), when a wheat the
// reference rejected has no review line (`review: promised: <what the
// contract promises>`), or when a recorded wheat is no longer generated.
func TestGeneratedWheatsAreCurrentAndReviewed(t *testing.T) {
	eachMutantLesson(t, func(t *testing.T, root string, l course.Lesson) {
		if !mutation.Wheats.Declared(root, l) {
			t.Fatalf("%s: no %s: say what the contract allows to change and where (CONTRIBUTING.md, \"Generated wheats\")", l.Exercise(), mutation.Wheats.From(l))
		}
		res, file := currentRun(t, root, l, mutation.Wheats, "review what the reference rejects", "a file it names")
		for _, e := range res.Entries {
			if e.Status == mutagen.Rejected && !wheatReviewed(e.Review) {
				t.Errorf("%s: %s (%s at %s: %s) was rejected by the reference (%d of %d runs: %s) with no review line: write `review: %s: <what the contract promises that it changes>`, or fix the reference if it pins more than the contract",
					file, e.Name, e.Op, e.Where, e.Edit, e.Killed, res.Runs, e.Says, mutagen.WheatReviewKind)
			}
		}
		if _, err := mutation.GeneratedWheats(root, l); err != nil {
			t.Error(err)
		}
	})
}

// currentRun reads the lesson's run of set, which must be there (else: run
// the command, then review) and current (else: stale, and what changed).
func currentRun(t *testing.T, root string, l course.Lesson, set mutation.Set, review, files string) (*mutagen.Results, string) {
	t.Helper()
	file, remake := set.File(l), set.Command(l)
	res, err := set.Read(root, l)
	if err != nil {
		t.Fatal(err)
	}
	if res == nil {
		t.Fatalf("%s: no %s: run `%s`, then %s", l.Exercise(), file, remake, review)
	}
	covers, err := set.Covers(root, l)
	if err != nil {
		t.Fatal(err)
	}
	if res.Covers != covers || res.Generator != mutagen.Version {
		t.Errorf("%s is stale: the generator, %s, %s or the reference answer (%s) changed since its %s; run `%s` and review what it says",
			file, set.From(l), files, l.Reference(), set.RunName(), remake)
	}
	return res, file
}

func TestReviewKind(t *testing.T) {
	if reviewKind("equivalent: c is always true here") != "equivalent" || reviewKind("equivalent:") != "" || reviewKind("maybe: x") != "" {
		t.Error("reviewKind accepts a review with no reason or an unknown verdict")
	}
}

// reviewKind returns the verdict of a review line, or "" when it has none
// of mutagen.ReviewKinds or no reason after it.
func reviewKind(review string) string {
	kind, reason, ok := strings.Cut(review, ":")
	if !ok || strings.TrimSpace(reason) == "" || !slices.Contains(mutagen.ReviewKinds, strings.TrimSpace(kind)) {
		return ""
	}
	return strings.TrimSpace(kind)
}

// wheatReviewed reports whether a rejected wheat's review line gives its
// verdict (mutagen.WheatReviewKind) and a reason.
func wheatReviewed(review string) bool {
	kind, reason, ok := strings.Cut(review, ":")
	return ok && strings.TrimSpace(kind) == mutagen.WheatReviewKind && strings.TrimSpace(reason) != ""
}

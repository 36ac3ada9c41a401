package mutagen

import "testing"

// A review follows its edit when an added line renumbers the mutants of a
// function, and is never guessed when two entries of that edit disagree.
func TestReviewFollowsTheEditNotTheName(t *testing.T) {
	prev := &Results{Entries: []Entry{
		{Name: "gen_do_call_removed_3", Op: "call_removed", Where: "hedge/hedge.go:90 (Do)", Edit: "`wg.Wait()` removed", Status: Survivor, Review: "property to state: waits"},
		{Name: "gen_do_const_inc_1", Op: "const_inc", Where: "hedge/hedge.go:80 (Do)", Edit: "`1` → `2`", Status: Survivor, Review: "equivalent: a"},
		{Name: "gen_do_const_inc_2", Op: "const_inc", Where: "hedge/hedge.go:85 (Do)", Edit: "`1` → `2`", Status: Survivor, Review: "equivalent: b"},
	}}
	moved := Entry{Name: "gen_do_call_removed_4", Op: "call_removed", Where: "hedge/hedge.go:97 (Do)", Edit: "`wg.Wait()` removed", Status: Survivor}
	if got := prev.ReviewFor(moved); got != "property to state: waits" {
		t.Errorf("renumbered mutant: review %q, want the one of its edit", got)
	}
	if got := prev.ReviewFor(Entry{Name: "gen_do_const_inc_9", Op: "const_inc", Where: "hedge/hedge.go:99 (Do)", Edit: "`1` → `2`", Status: Survivor}); got != "" {
		t.Errorf("two reviews of one edit: got %q, want none guessed", got)
	}
	moved.Status = Hangs
	if got := prev.ReviewFor(moved); got != "" {
		t.Errorf("a survivor's review carried to a hang: %q", got)
	}
	moved.Status, moved.Where = Survivor, "hedge/other.go:97 (Do)"
	if got := prev.ReviewFor(moved); got != "" {
		t.Errorf("a review carried to another file: %q", got)
	}
}

package grade

import (
	"path/filepath"
	"testing"
)

// The guard over the real course: NewGuard reads every file, Restore after
// a run that changed nothing.
func BenchmarkGuardRealCourse(b *testing.B) {
	root, _ := filepath.Abs("../../..")
	answer := filepath.Join(root, "lessons", "15", "answer_previous")
	b.Run("new", func(b *testing.B) {
		for b.Loop() {
			if _, err := NewGuard(root, answer); err != nil {
				b.Fatal(err)
			}
		}
	})
	g, err := NewGuard(root, answer)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			if c := g.Restore(); len(c) > 0 {
				b.Fatal(c)
			}
		}
	})
}

package grade

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCacheKeepsTheLastFewAnswers(t *testing.T) {
	dir := t.TempDir()
	for i := range 6 {
		d := filepath.Join(dir, fmt.Sprintf("answer%d", i))
		os.MkdirAll(d, 0o755)
		at := time.Now().Add(time.Duration(i-10) * time.Minute)
		os.Chtimes(d, at, at)
	}
	// A broken variant's tools, used long ago: not an answer's build.
	variant := filepath.Join(dir, "lessons_16_answer_previous@no_floor")
	os.MkdirAll(variant, 0o755)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(variant, old, old)
	Prune(dir, 3)
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "answer3 answer4 answer5 lessons_16_answer_previous@no_floor" {
		t.Fatalf("kept %v; want the three most recent answers and the variant", names)
	}
}

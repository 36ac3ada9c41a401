package check

import (
	"strings"
	"testing"
)

func TestCappedBufferKeepsTheStartAndSaysItCut(t *testing.T) {
	var b cappedBuffer
	chunk := strings.Repeat("x", 1000)
	for range maxOutput/1000 + 10 {
		if n, err := b.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v; a capped writer must not fail the child", n, err)
		}
	}
	got := b.String()
	if !strings.HasSuffix(got, "(output truncated)\n") || len(got) > maxOutput+100 {
		t.Fatalf("len %d, tail %q", len(got), got[len(got)-40:])
	}
}

func TestWrapAndLastLine(t *testing.T) {
	if got := wrap("one two three four", 9); strings.Join(got, "|") != "one two|three|four" {
		t.Errorf("wrap = %q", got)
	}
	if got := lastLine("noise\nE14 passed: yes\n\n"); got != "E14 passed: yes" {
		t.Errorf("lastLine = %q", got)
	}
}

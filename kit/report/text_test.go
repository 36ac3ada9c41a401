package report

import (
	"strings"
	"testing"
)

// English wraps at spaces, as it always did; Chinese, which has no spaces
// between words, also between two characters, never before closing
// punctuation; no line is wider than asked, counting a CJK character as
// two columns.
func TestWrap(t *testing.T) {
	en := "a supplier's 503 is never retried, so one passing hiccup loses a supplier that would have answered a moment later."
	got := wrap(en, 70)
	want := []string{"a supplier's 503 is never retried, so one passing hiccup loses a", "supplier that would have answered a moment later."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("English: %q", got)
	}
	zh := "我们自己的“太忙”错误没有映射成带 Retry-After: 1 的 503，于是客户端拿到的是 500 internal_error，也不知道一秒后可以重试；入站槽位全被占着时，新请求排队等槽位，而不是立刻被拒绝，于是调用方一直挂着，听不到“忙”。"
	lines := wrap(zh, 70)
	if len(lines) < 2 {
		t.Fatalf("Chinese not wrapped: %q", lines)
	}
	for i, l := range lines {
		if i < len(lines)-1 && Columns(l) < 60 {
			t.Errorf("%q is %d columns wide: a line is filled before the next begins", l, Columns(l))
		}
		if Columns(l) > 70 {
			t.Errorf("%q is %d columns wide, want at most 70", l, Columns(l))
		}
		if strings.HasPrefix(l, "，") || strings.HasPrefix(l, "。") || strings.HasPrefix(l, "）") {
			t.Errorf("%q starts with closing punctuation", l)
		}
	}
	if strings.ReplaceAll(strings.Join(lines, ""), " ", "") != strings.ReplaceAll(zh, " ", "") {
		t.Errorf("wrapping lost or changed text: %q", lines)
	}
}

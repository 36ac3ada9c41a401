package kept

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTakeKeepsWhatWasGivenBack(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir()) // os.UserCacheDir on macOS
	dir, give := Take("tools")
	if dir == "" {
		t.Skip("no user cache directory here")
	}
	if err := os.WriteFile(filepath.Join(dir, "bin"), []byte("linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A second taker while the first holds it starts empty.
	other, giveOther := Take("tools")
	if other == dir {
		t.Fatalf("two takers got the same directory %s", dir)
	}
	if _, err := os.Stat(filepath.Join(other, "bin")); !os.IsNotExist(err) {
		t.Fatalf("the second taker sees the first one's file: %v", err)
	}
	give()
	giveOther() // the first handed back first: this copy goes
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatalf("a copy handed back second is left at %s", other)
	}
	again, giveAgain := Take("tools")
	defer giveAgain()
	if data, err := os.ReadFile(filepath.Join(again, "bin")); err != nil || string(data) != "linked" {
		t.Fatalf("after give, Take found %q, %v; want the file kept", data, err)
	}
}

func TestTakeAsMovesItInAndBack(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	dst := filepath.Join(t.TempDir(), "cache")
	give, err := TakeAs("state", dst)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "answer"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	give()
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("%s still there after give: %v", dst, err)
	}
	dst2 := filepath.Join(t.TempDir(), "cache")
	give2, err := TakeAs("state", dst2)
	if err != nil {
		t.Fatal(err)
	}
	defer give2()
	if _, err := os.Stat(filepath.Join(dst2, "answer")); err != nil {
		t.Fatalf("not kept: %v", err)
	}
}

func TestAStaleTakenCopyIsPrunedAndALiveOneIsNot(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	root, err := Root()
	if err != nil {
		t.Skip("no user cache directory here")
	}
	stale := filepath.Join(root, "x.taken-1-1000") // taken in 1970
	live, give := Take("x")
	defer give()
	if err := os.MkdirAll(stale, 0o755); err != nil {
		t.Fatal(err)
	}
	_, give2 := Take("x")
	defer give2()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("a copy taken a day ago is still there: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("a copy in use was pruned: %v", err)
	}
}

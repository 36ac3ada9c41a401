package mutagen

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const wheatSrc = `package toy

import (
	"context"
	"sync"
	"time"
)

// Visit calls f on each element, each in a goroutine, and waits.
func Visit(ctx context.Context, xs []string, f func(string)) {
	var wg sync.WaitGroup
	for _, x := range xs {
		wg.Go(func() {
			f(x)
		})
	}
	wg.Wait()
}

// Order returns xs's elements in the order it visits them.
func Order(xs []string) []string {
	var out []string
	for i := range xs {
		out = append(out, xs[i])
	}
	return out
}

// Fire waits d, then returns when it fired.
func Fire(d time.Duration) time.Time {
	t := time.NewTimer(d)
	<-t.C
	return time.Now()
}

// Count ranges over a map: no wheat of order.
func Count(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
`

// A later rule makes a wheat of the function's start, of each goroutine it
// starts and of each timer it sets; a reversed rule of each range over a
// slice (a range over a map does not compile so changed, and is dropped).
// Run on a toy module, the wheats do what they say: a reversed Order
// returns the elements last to first, a later Fire fires 20 ms later.
func TestWheatsAreMadeOfWhatTheRulesAllow(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	a, err := ParseAllowed(`# toy
later 20ms: toy/toy.go: Visit Fire
reversed: toy/toy.go: Order Count
`)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/toy\n\ngo 1.25\n")
	write("toy/toy.go", wheatSrc)
	ws, err := WheatsFromAllowed(root, a)
	if err != nil {
		t.Fatal(err)
	}
	ok, dropped, err := Compiles(root, ws)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"gen_visit_later_1", "gen_visit_later_2", "gen_fire_later_1", "gen_fire_later_2", "gen_order_reversed_1"}
	if got := names(ok); !slices.Equal(got, want) {
		t.Errorf("wheats that compile: %v, want %v", got, want)
	}
	if got := names(dropped); !slices.Equal(got, []string{"gen_count_reversed_1"}) {
		t.Errorf("dropped %v, want the map's range only", got)
	}
	for _, w := range ok {
		if w.Kind != "wheat" || !w.Required {
			t.Errorf("%s: kind %q, required %v: want a required wheat", w.Name, w.Kind, w.Required)
		}
	}

	// What two of them do, run: the edited file beside a main that prints.
	byName := map[string]Mutant{}
	for _, w := range ok {
		byName[w.Name] = w
	}
	run := func(w Mutant, main string) string {
		t.Helper()
		edited, err := w.Apply(wheatSrc)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		for name, body := range map[string]string{"go.mod": "module example.com/toy\n\ngo 1.25\n", "toy/toy.go": edited, "main.go": main} {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("go", "run", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", w.Name, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(byName["gen_order_reversed_1"], `package main

import (
	"fmt"
	"example.com/toy/toy"
)

func main() { fmt.Println(toy.Order([]string{"a", "b", "c"})) }
`); got != "[c b a]" {
		t.Errorf("reversed Order gives %s, want [c b a]", got)
	}
	got := run(byName["gen_fire_later_2"], `package main

import (
	"fmt"
	"time"
	"example.com/toy/toy"
)

func main() {
	start := time.Now()
	fmt.Println(toy.Fire(time.Millisecond).Sub(start) >= 21*time.Millisecond)
}
`)
	if got != "true" {
		t.Errorf("the timer of Fire's later wheat fired before 1 ms + 20 ms: %s", got)
	}
	if !strings.Contains(byName["gen_fire_later_2"].Edit(), "time.NewTimer((d) + 20 * time.Millisecond") {
		t.Errorf("gen_fire_later_2's edit: %s", byName["gen_fire_later_2"].Edit())
	}
	if !strings.Contains(byName["gen_visit_later_1"].Edit(), "case <-ctx.Done()") || !strings.Contains(byName["gen_fire_later_1"].Edit(), "time.Sleep(20 * time.Millisecond)") {
		t.Errorf("a later start waits on ctx where one is in scope, else sleeps: %s; %s", byName["gen_visit_later_1"].Edit(), byName["gen_fire_later_1"].Edit())
	}
}

// An allowed.txt that cannot be meant is refused, each with a line that
// says why: a delay under MinWheatDelay (a wheat 3 ms late lets a test that
// pins timing too tightly pass), an unknown change, every function at once.
func TestAllowedRefusesWhatCannotBeMeant(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"later 3ms: a/b.go: F", "at least 10ms"},
		{"later soon: a/b.go: F", "at least 10ms"},
		{"faster: a/b.go: F", "want `later <duration>` or `reversed`"},
		{"reversed: a/b.go: *", "name each function"},
		{"reversed: a/b_test.go: F", "non-test .go file"},
		{"reversed a/b.go F", "want `later 30ms"},
		{"# nothing\n", "no rule"},
	} {
		if _, err := ParseAllowed(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseAllowed(%q) = %v, want an error saying %q", tc.text, err, tc.want)
		}
	}
	if a, err := ParseAllowed("later 10ms: a/b.go: F Recv.M\n"); err != nil || a.Rules[0].Delay != 10*time.Millisecond || !slices.Equal(a.Rules[0].Funcs, []string{"F", "Recv.M"}) {
		t.Errorf("ParseAllowed(later 10ms) = %+v, %v", a, err)
	}
}

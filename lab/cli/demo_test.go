package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"quoteflowlab.dev/lab/internal/demo"
)

// TestDemoAndLoadHelpListEverything: `lab demo --help` names every demo,
// `lab load --help` every flag, and the README names every demo too.
func TestDemoAndLoadHelpListEverything(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"demo", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("lab demo --help: exit %d", code)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range demo.All {
		if !strings.Contains(errb.String(), "lab demo "+strconv.Itoa(d.Lesson)+" "+d.Name) {
			t.Errorf("lab demo --help does not list %d %s:\n%s", d.Lesson, d.Name, errb.String())
		}
		if !strings.Contains(string(readme), "`"+d.Name+"`") {
			t.Errorf("README.md does not name the demo `%s` (lesson %d)", d.Name, d.Lesson)
		}
	}
	errb.Reset()
	if code := Main([]string{"load", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("lab load --help: exit %d", code)
	}
	for _, f := range []string{"-target", "-lines", "-scenario", "-concurrency", "-rate", "-duration", "-requests", "-provider", "-reset", "-json", "-timeout"} {
		if !strings.Contains(errb.String(), f) {
			t.Errorf("lab load --help lacks %s", f)
		}
		if !strings.Contains(string(readme), "-"+f) {
			t.Errorf("README.md's lab load paragraph lacks -%s", f)
		}
	}
}

func TestLoadUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"load"},
		{"load", "basket", "--concurrency", "2", "--requests", "1"},                                    // no --lines
		{"load", "quote", "--requests", "1"},                                                           // neither rate nor concurrency
		{"load", "quote", "--rate", "5", "--concurrency", "2", "--requests", "1"},                      // both
		{"load", "quote", "--concurrency", "2"},                                                        // no end
		{"load", "quote", "--concurrency", "2", "--requests", "1", "--target", "http://10.0.0.1:9100"}, // not loopback
		{"demo"}, {"demo", "16", "no-such-demo"}, {"demo", "99"},
	} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != 2 {
			t.Errorf("lab %s: exit %d, want 2 (usage error)\n%s", strings.Join(args, " "), code, errb.String())
		}
	}
}

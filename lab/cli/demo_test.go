package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"quoteflowlab.dev/kit/load"
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
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	type named struct {
		lesson int
		name   string
	}
	var all []named
	for _, n := range demoLessons(root) {
		ds, err := listDemos(context.Background(), root, n)
		if err != nil || len(ds) == 0 {
			t.Fatalf("lesson %d's demo program lists %d demos: %v", n, len(ds), err)
		}
		for _, d := range ds {
			all = append(all, named{n, d.Name})
		}
	}
	if len(all) == 0 {
		t.Fatal("no lesson has a demo program")
	}
	for _, d := range all {
		if !strings.Contains(out.String(), "lab demo "+strconv.Itoa(d.lesson)+" "+d.name) {
			t.Errorf("lab demo --help does not list %d %s on stdout:\n%s", d.lesson, d.name, out.String())
		}
		if !strings.Contains(string(readme), "`"+d.name+"`") {
			t.Errorf("README.md does not name the demo `%s` (lesson %d)", d.name, d.lesson)
		}
	}
	// lab demo NN --help: lesson NN's demos only, on stdout (the help is
	// the answer), nothing on stderr.
	for _, lesson := range demoLessons(root) {
		for _, args := range [][]string{{"demo", strconv.Itoa(lesson), "--help"}, {"demo", "-h", strconv.Itoa(lesson)}} {
			out.Reset()
			errb.Reset()
			if code := Main(args, &out, &errb); code != 0 || errb.Len() != 0 {
				t.Errorf("lab %s: exit %d, stderr %q; want 0 and the help on stdout", strings.Join(args, " "), code, errb.String())
			}
			for _, d := range all {
				listed := strings.Contains(out.String(), "lab demo "+strconv.Itoa(d.lesson)+" "+d.name)
				if listed != (d.lesson == lesson) {
					t.Errorf("lab %s lists lesson %d's %s: %v, want %v", strings.Join(args, " "), d.lesson, d.name, listed, d.lesson == lesson)
				}
			}
		}
	}
	out.Reset()
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
	// A target that counts what reaches it: a refused run sends nothing.
	var reached atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	quote := func(more ...string) []string {
		return append([]string{"load", "quote", "--target", srv.URL}, more...)
	}
	for _, c := range []struct {
		says string // the first line names this
		args []string
	}{
		{"--rate 0.0001", quote("--rate", "0.0001", "--requests", "1")}, // rounded to no pacing at all
		{"--rate 0.001", quote("--rate", "0.001", "--requests", "1")},   // one request every 1000 s
		{"--rate 1e+10", quote("--rate", "1e10", "--requests", "1")},    // panicked: an interval of 0 ns
		{"--rate 1e+300", quote("--rate", "1e300", "--requests", "1")},  // panicked
		{"--rate NaN", quote("--rate", "NaN", "--requests", "1")},
		{"--rate +Inf", quote("--rate", "Inf", "--requests", "1")},
		{"--rate -Inf", quote("--rate", "-Inf", "--requests", "1")},
		{"-rate: value out of range", quote("--rate", "1e400", "--requests", "1")},
		{"past --duration 5s", quote("--rate", "0.1", "--duration", "5s")},                   // the first request would go after 10 s
		{"--concurrency -1", quote("--rate", "5", "--concurrency", "-1", "--requests", "1")}, // ignored before
		{"--concurrency 100000", quote("--concurrency", "100000", "--requests", "1")},
		{"--timeout -1s", quote("--concurrency", "1", "--requests", "1", "--timeout", "-1s")}, // became 30 s
		{"--timeout 0s", quote("--concurrency", "1", "--requests", "1", "--timeout", "0")},
		{"no path, query", quote("--concurrency", "1", "--requests", "1", "--target", srv.URL+"?x=1")}, // sent to srv?x=1/api/quotes: 404
		{"no path, query", quote("--concurrency", "1", "--requests", "1", "--target", srv.URL+"/?x=1")},
		{"no path, query", quote("--concurrency", "1", "--requests", "1", "--target", srv.URL+"?")},
		{"no path, query", quote("--concurrency", "1", "--requests", "1", "--target", srv.URL+"#top")},
		{"no path, query", quote("--concurrency", "1", "--requests", "1", "--target", "http://u:p@"+strings.TrimPrefix(srv.URL, "http://"))},
		{"no path, query", quote("--concurrency", "1", "--requests", "1", "--provider", srv.URL+"?x=1")},
		{"steps must rise", quote("--rates", "20,10", "--duration", "1s")},
		{"a sweep needs two steps", quote("--rates", "20", "--duration", "1s")},
		{"give --duration D", quote("--rates", "10,20")},
		{"--rate is not for a sweep", quote("--rates", "10,20", "--rate", "5", "--duration", "1s")},
		{"--requests is not for a sweep", quote("--rates", "10,20", "--requests", "5", "--duration", "1s")},
		{"given twice", []string{"load", "quote", "--rates", "10,20", "--duration", "1s", "--target", "a=" + srv.URL + ",a=" + srv.URL}},
		{"--svg draws a sweep", quote("--svg", "x.svg", "--concurrency", "1", "--requests", "1")},
		{"--deadline is for a sweep", quote("--deadline", "1s", "--concurrency", "1", "--requests", "1")},
		{"--deadline 0s", quote("--rates", "10,20", "--duration", "1s", "--deadline", "0")},
		{"--svg /no/such/dir/x.svg", quote("--rates", "10,20", "--duration", "1s", "--svg", "/no/such/dir/x.svg")},
	} {
		var out, errb bytes.Buffer
		code := Main(c.args, &out, &errb)
		first, _, _ := strings.Cut(errb.String(), "\n")
		if code != 2 || !strings.Contains(first, c.says) {
			t.Errorf("lab %s: exit %d, first line %q; want 2 (usage error) and a line that says %q", strings.Join(c.args, " "), code, first, c.says)
		}
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("refused runs sent %d requests, want 0", n)
	}
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

// A run where no request got an answer failed: exit 1, and a line that says
// so (it exited 0 when every request ended in "connection refused").
func TestLoadToADeadTargetFails(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	dead := srv.URL
	srv.Close() // nothing listens there now
	var out, errb bytes.Buffer
	code := Main([]string{"load", "quote", "--target", dead, "--concurrency", "2", "--requests", "4"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "none of the 4 requests was answered") {
		t.Errorf("lab load to a dead target: exit %d, stderr %q; want 1 and \"none of the 4 requests was answered\"\n%s", code, errb.String(), out.String())
	}
	if !strings.Contains(out.String(), "statuses:      error 4") {
		t.Errorf("the report should still show the 4 transport errors:\n%s", out.String())
	}
}

// The progress line never says "7.0 s of 5 s": once sending stopped, it
// says how many answers it still waits for.
func TestLoadProgressLineOnceSendingStopped(t *testing.T) {
	for _, c := range []struct {
		p    load.Progress
		want string
	}{
		{load.Progress{Sent: 40, Answered: 32, Elapsed: 2500 * time.Millisecond, Sending: true}, "lab load: 40 sent, 32 answered, 2.5 s of 5s"},
		{load.Progress{Sent: 50, Answered: 42, Elapsed: 7 * time.Second, Sending: false}, "lab load: all 50 sent; waiting for 8 in flight (7.0 s)"},
	} {
		if got := progressLine(c.p, 5*time.Second); got != c.want {
			t.Errorf("progressLine(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

// A sweep prints its table, writes its SVG and, with --json, the points.
func TestLoadSweepWritesTableAndSVG(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"quotes":[{"supplier":"atlas"}],"failures":[]}`))
	}))
	defer srv.Close()
	svg := filepath.Join(t.TempDir(), "sweep.svg")
	var out, errb bytes.Buffer
	code := Main([]string{"load", "quote", "--rates", "10,20", "--duration", "300ms", "--target", "one=" + srv.URL + ",two=" + srv.URL, "--svg", svg}, &out, &errb)
	if code != 0 || !strings.Contains(out.String(), "one goodput/s") || !strings.Contains(out.String(), "two goodput/s") || !strings.Contains(out.String(), "wrote "+svg) {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	data, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(data, []byte("<svg")) || bytes.Count(data, []byte("<polyline")) != 4 {
		t.Errorf("the SVG (%v): %.200s", err, data)
	}
	out.Reset()
	if code := Main([]string{"load", "quote", "--rates", "10,20", "--duration", "300ms", "--target", srv.URL, "--json"}, &out, &errb); code != 0 {
		t.Fatalf("--json: exit %d %s", code, errb.String())
	}
	var sw struct {
		Points [][]struct {
			Good int `json:"good"`
		} `json:"points"`
	}
	if err := json.Unmarshal(out.Bytes(), &sw); err != nil || len(sw.Points) != 2 || sw.Points[1][0].Good != 6 {
		t.Errorf("--json: %v %+v\n%s", err, sw, out.String())
	}
}

// toyDemo is a lesson's demo program that speaks kit/demo's protocol with
// the standard library alone: -list, then one demo by name, whose Result
// goes where LAB_DEMO_RESULT says.
const toyDemo = `package main

import (
	"fmt"
	"os"
)

func main() {
	switch {
	case len(os.Args) == 2 && os.Args[1] == "-list":
		fmt.Println("hello\tsays hello from a lesson lab has never heard of")
	case len(os.Args) == 2 && os.Args[1] == "hello":
		fmt.Println("hello from lesson 99")
		if f := os.Getenv("LAB_DEMO_RESULT"); f != "" {
			os.WriteFile(f, []byte("{}"), 0o644)
		}
	default:
		os.Exit(2)
	}
}
`

// lab demo knows no lesson: it finds a lesson's demo program by its folder,
// lessons/NN/demo, lists its demos by asking it, and runs one. Here in a
// course of one lesson, 99, that no file of lab names.
func TestDemoFindsALessonsProgramByItsFolder(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":                  "module quoteflowlab.dev\n\ngo 1.26\n",
		"lessons/99/demo/main.go": toyDemo,
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(root)
	var out, errb bytes.Buffer
	if code := Main([]string{"demo", "--help"}, &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "lab demo 99 hello            says hello from a lesson lab has never heard of") {
		t.Fatalf("lab demo --help: exit %d; want lesson 99's demo listed\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := Main([]string{"demo", "99", "hello"}, &out, &errb); code != 0 || out.String() != "hello from lesson 99\n" {
		t.Fatalf("lab demo 99 hello: exit %d, stdout %q; want 0 and the program's output\n%s", code, out.String(), errb.String())
	}
	for _, args := range [][]string{{"demo", "99", "goodbye"}, {"demo", "98", "hello"}} {
		if code := Main(args, &out, &errb); code != 2 {
			t.Errorf("lab %s: exit %d, want 2 (no such demo)", strings.Join(args, " "), code)
		}
	}
}

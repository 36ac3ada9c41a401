//go:build unix

package cli

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"quoteflowlab.dev/kit/testenv"
	"quoteflowlab.dev/kit/testpar"

	"quoteflowlab.dev/lab/internal/watch"
)

// These tests run `lab watch` in a process of its own (this test binary as
// lab: cli.Main, all that lab/main.go runs) in the background on a copy of
// an answer, change the copy, and read what it prints.

var (
	runHeader = regexp.MustCompile(`^── E12 · run (\d+) · \d\d:\d\d:\d\d · `)
	verdict   = regexp.MustCompile(`^verdict: `)
)

// A watchProc is one `lab watch` running in a process group of its own.
type watchProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	lines  chan outLine
	seen   []outLine
	exited chan error
}

type outLine struct {
	text string
	at   time.Time
}

// runAsLab is set in the environment of a copy of this test binary that is
// to be the lab command: TestMain then runs cli.Main with its arguments, as
// lab/main.go does, and nothing else (no build of lab to wait for or link).
const runAsLab = "LAB_CLI_TEST_RUN_AS_LAB"

// labCommand returns the program the watch tests run as lab: this test
// binary, which TestMain turns into lab when runAsLab is set.
func labCommand(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestMain runs the test binary as lab when asked to (see runAsLab). The
// watch tests mostly wait (for a debounce, a lab check's runs): unless go
// test is given -parallel, three run at once per CPU instead of one.
func TestMain(m *testing.M) {
	if os.Getenv(runAsLab) == "1" {
		testRoles() // the lifetime tests' parts: a QuoteFlow stand-in, a demo, go run's stand-in
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	testpar.PerCPU(3, 1)
	os.Exit(m.Run())
}

func startWatch(t *testing.T, bin, root string, env []string, args ...string) *watchProc {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"watch"}, args...)...)
	cmd.Dir = root
	cmd.Env = append(append(os.Environ(), runAsLab+"=1"), env...)
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	p := &watchProc{t: t, cmd: cmd, lines: make(chan outLine, 1024), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.lines <- outLine{sc.Text(), time.Now()}
		}
		close(p.lines)
	}()
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("lab watch printed:\n%s", p.output())
		}
	})
	return p
}

func (p *watchProc) output() string {
	var b strings.Builder
	for _, l := range p.seen {
		fmt.Fprintf(&b, "%s  %s\n", l.at.Format("15:04:05.000"), l.text)
	}
	return b.String()
}

// waitLine reads lines until one matches re, failing after d.
func (p *watchProc) waitLine(re *regexp.Regexp, d time.Duration) outLine {
	p.t.Helper()
	l, matched, ended := p.scan(re, d)
	switch {
	case ended:
		p.t.Fatalf("lab watch ended before printing a line matching %q", re)
	case !matched:
		p.t.Fatalf("no line matching %q within %v", re, d)
	}
	return l
}

// quiet reads lines for d and fails if one matches re.
func (p *watchProc) quiet(re *regexp.Regexp, d time.Duration) {
	p.t.Helper()
	if l, matched, _ := p.scan(re, d); matched {
		p.t.Fatalf("unexpected line %q", l.text)
	}
}

// scan reads lines, keeping each, until one matches re (matched), lab
// watch ends (ended) or d passes.
func (p *watchProc) scan(re *regexp.Regexp, d time.Duration) (l outLine, matched, ended bool) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return l, false, true
			}
			p.seen = append(p.seen, l)
			if re.MatchString(l.text) {
				return l, true, false
			}
		case <-timer.C:
			return l, false, false
		}
	}
}

// count is how many lines seen so far match re.
func (p *watchProc) count(re *regexp.Regexp) int {
	n := 0
	for _, l := range p.seen {
		if re.MatchString(l.text) {
			n++
		}
	}
	return n
}

// settle reads lines until every run has ended and nothing was printed for
// 2 s.
func (p *watchProc) settle() {
	p.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return
			}
			p.seen = append(p.seen, l)
		case <-time.After(2 * time.Second):
			if p.count(runHeader) == p.count(verdict) {
				return
			}
		}
	}
	p.t.Fatal("the runs did not end within 2 minutes")
}

// interrupt sends SIGINT (Ctrl-C) and returns the exit code.
func (p *watchProc) interrupt() int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		p.t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		for l := range p.lines {
			p.seen = append(p.seen, l)
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			p.t.Fatal(err)
		}
		return 0
	case <-time.After(10 * time.Second):
		p.t.Fatalf("lab watch did not exit within 10s of SIGINT")
		return -1
	}
}

// runs checks that every run ended before the next began, and returns how
// many runs there were.
func (p *watchProc) runs() int {
	p.t.Helper()
	n, open := 0, false
	for _, l := range p.seen {
		switch {
		case runHeader.MatchString(l.text):
			if open {
				p.t.Fatalf("run %d started while run %d was going", n+1, n)
			}
			n++
			if got, _ := strconv.Atoi(runHeader.FindStringSubmatch(l.text)[1]); got != n {
				p.t.Fatalf("header says run %d, want %d", got, n)
			}
			open = true
		case verdict.MatchString(l.text):
			if !open {
				p.t.Fatalf("a verdict with no run: %q", l.text)
			}
			open = false
		}
	}
	return n
}

// committedStarter is E12's starter as committed, whatever a student wrote.
func committedStarter(t *testing.T, root string) []byte {
	t.Helper()
	if out, err := exec.Command("git", "-C", root, "show", "HEAD:lessons/12/exercise/main.go").Output(); err == nil {
		return out
	}
	data, err := os.ReadFile(filepath.Join(root, "lessons/12/exercise/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// weakAnswer is the reference answer minus the supplier count: it checks
// only the status, so it misses the handler that asks the suppliers
// before it rejects.
func weakAnswer(t *testing.T, good []byte) []byte {
	t.Helper()
	src := string(good)
	start := strings.Index(src, "\tif n := suppliers.calls.Load(); n != 0 {")
	end := strings.Index(src, "\tstatus, body, err = post(api, `{\"sku\": \"KB-001\", \"quantity\": 2}`)")
	ret := strings.Index(src[end:], "\treturn nil\n}")
	if start < 0 || end < start || ret < 0 {
		t.Fatal("lessons/13/answer_previous changed shape: update weakAnswer")
	}
	const claim = "quantity 0 got 422 naming quantity with 0 supplier calls; a valid request got 200 with 3 calls"
	if !strings.Contains(src, claim) {
		t.Fatal("lessons/13/answer_previous changed its last line: update weakAnswer")
	}
	return []byte(strings.Replace(src[:start]+src[end+ret:], claim, "quantity 0 got 422 naming quantity", 1))
}

func write(t *testing.T, file string, data []byte, note string) time.Time {
	t.Helper()
	if note != "" {
		data = append(append([]byte(nil), data...), "\n// "+note+"\n"...)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// watchTest starts a test that watches its own folder with its own lab
// process, in parallel with the others; skipped with -short, since it
// does what why says. It returns the root and the lab command.
func watchTest(t *testing.T, why string) (root, bin string) {
	if testing.Short() {
		t.Skip(why)
	}
	t.Parallel()
	return testenv.Root(t), labCommand(t)
}

// reference12 is E12's reference answer (lesson 13's previous answer).
func reference12(t *testing.T, root string) []byte {
	good, err := os.ReadFile(filepath.Join(root, "lessons/13/answer_previous/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	return good
}

// watchMode starts lab watch E12 on the answer in dir, on file events or
// (mode "poll") polling, its state in state, and returns its first line; a
// system whose file events cannot be set up skips the test.
func watchMode(t *testing.T, bin, root, state, dir, mode string) (*watchProc, outLine) {
	args := []string{"E12", "--answer", dir}
	if mode == "poll" {
		args = append(args, "--poll")
	}
	p := startWatch(t, bin, root, []string{"LAB_STATE_DIR=" + state}, args...)
	l := p.waitLine(regexp.MustCompile(`.`), 10*time.Second)
	if strings.Contains(l.text, "could not be set up") {
		t.Skipf("no file events here: %s", l.text)
	}
	return p, l
}

// The watch loop on E12: the starter, a weak answer, the reference answer;
// one run per change, never two at once; Ctrl-C exits 0.
func TestWatchWeakThenGood(t *testing.T) {
	root, bin := watchTest(t, "builds and checks E12 three times")
	good := reference12(t, root)
	weak := weakAnswer(t, good)
	for _, mode := range []string{"poll", "events"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // its own folder, state dir and lab process
			dir, state := t.TempDir(), t.TempDir()
			main := filepath.Join(dir, "main.go")
			write(t, main, committedStarter(t, root), "")
			first := regexp.MustCompile(`^lab watch E12: file events on .* · no events arrived\? try ` + "`lab watch --poll`")
			if mode == "poll" {
				first = regexp.MustCompile(`^lab watch E12: polling .* every 500ms \(--poll\)`)
			}
			p, l := watchMode(t, bin, root, state, dir, mode)
			if !first.MatchString(l.text) {
				t.Fatalf("first line %q, want %q", l.text, first)
			}
			p.waitLine(regexp.MustCompile(`^verdict: NOT STARTED: `), 2*time.Minute)

			write(t, main, weak, "")
			p.waitLine(regexp.MustCompile(`^── E12 · run 2 · .* · last run: NOT STARTED in `), 10*time.Second)
			p.waitLine(regexp.MustCompile(`^  MISSED +required +validates_after_fanout$`), 2*time.Minute)
			p.waitLine(regexp.MustCompile(`^verdict: FAILED: .*lets through: .*validates_after_fanout.*\.$`), 10*time.Second)

			saved := write(t, main, good, "")
			p.waitLine(regexp.MustCompile(`^── E12 · run 3 · .* · last run: FAILED in `), 10*time.Second)
			firstLine := p.waitLine(regexp.MustCompile(`^E12 · `), 2*time.Minute)
			p.waitLine(regexp.MustCompile(`^verdict: PASSED: `), 2*time.Minute)
			p.waitLine(regexp.MustCompile(`^next: E13 · .* run `+"`lab watch E13`"), 10*time.Second)
			p.quiet(runHeader, 1500*time.Millisecond) // nothing changed: no run
			if code := p.interrupt(); code != 0 {
				t.Fatalf("Ctrl-C: exit %d, want 0", code)
			}
			if n := p.runs(); n != 3 {
				t.Fatalf("%d runs for the first run and two changes, want 3", n)
			}
			// The time from the last save to the first line of its report:
			// logged, not asserted (a figure, not a bound).
			t.Logf("%s: save → first line of the verdict %v", mode, firstLine.at.Sub(saved).Round(time.Millisecond))
		})
	}
}

// A burst of 20 writes within 100 ms is one run, after the burst (a second,
// queued run is allowed: the burst may straddle the start of a run).
func TestWatchBurstIsOneRun(t *testing.T) {
	root, bin := watchTest(t, "builds and checks E12")
	good := reference12(t, root)
	for _, mode := range []string{"poll", "events"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel() // its own folder, state dir and lab process
			dir := t.TempDir()
			main := filepath.Join(dir, "main.go")
			write(t, main, good, "")
			p, _ := watchMode(t, bin, root, t.TempDir(), dir, mode)
			p.waitLine(regexp.MustCompile(`^verdict: PASSED`), 2*time.Minute)

			// 20 writes, 2 ms apart. On a machine so busy that two writes end
			// up Quiet apart they are two bursts, and "one run" does not
			// apply: let the runs finish and try again.
			var before int
			var end time.Time
			for attempt := 1; ; attempt++ {
				before = p.count(runHeader)
				begin, last, gap := time.Now(), time.Now(), time.Duration(0)
				for i := range 20 {
					now := write(t, main, good, fmt.Sprintf("attempt %d save %d", attempt, i))
					gap, last = max(gap, now.Sub(last)), now
					time.Sleep(2 * time.Millisecond)
				}
				t.Logf("20 writes in %v, at most %v apart", last.Sub(begin).Round(time.Millisecond), gap.Round(time.Millisecond))
				if gap < watch.Quiet/2 {
					end = last
					break
				}
				if attempt == 3 {
					t.Skipf("the machine is too busy to write a burst: writes %v apart", gap)
				}
				p.settle()
			}
			h := p.waitLine(runHeader, 10*time.Second)
			if h.at.Before(end) {
				t.Fatalf("a run started %v before the burst ended: not debounced", end.Sub(h.at))
			}
			p.waitLine(verdict, 2*time.Minute)
			p.settle() // a queued run, if any
			p.quiet(runHeader, 2*time.Second)
			if code := p.interrupt(); code != 0 {
				t.Fatalf("Ctrl-C: exit %d, want 0", code)
			}
			after := p.runs() - before
			t.Logf("%s: %d run(s) after the burst", mode, after)
			if after < 1 || after > 2 {
				t.Fatalf("%d runs after the burst, want 1 (at most 1 more queued)", after)
			}
		})
	}
}

// slowAnswer starts a grandchild (sleep), says their pids, and fails once
// the file $WATCH_TEST_GATE exists (the test opens the gate), or after a
// minute.
const slowAnswer = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	sleep := exec.Command("sleep", "60")
	if err := sleep.Start(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	f := os.Getenv("WATCH_TEST_PIDS")
	os.WriteFile(f+".tmp", fmt.Appendf(nil, "%d %d %d\n", os.Getpid(), syscall.Getpgrp(), sleep.Process.Pid), 0o644)
	os.Rename(f+".tmp", f)
	gate := os.Getenv("WATCH_TEST_GATE")
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(gate); gate != "" && err == nil {
			break
		}
	}
	fmt.Println("E12 failed: slow on purpose")
	os.Exit(1)
}
`

// waitPids waits for the slow answer to say it runs, and returns its pid,
// its process group and its grandchild's pid.
func waitPids(t *testing.T, file string) (pid, pgid, grandchild int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		data, err := os.ReadFile(file)
		if err == nil {
			if _, err := fmt.Sscan(string(data), &pid, &pgid, &grandchild); err == nil {
				os.Remove(file)
				return pid, pgid, grandchild
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the answer never started")
		}
		time.Sleep(20 * time.Millisecond) // another process's file: no event to wait on
	}
}

// Saves during a run queue exactly one more run.
func TestWatchSavesDuringARunQueueOne(t *testing.T) {
	root, bin := watchTest(t, "builds and checks E12")
	dir := t.TempDir()
	main, pids := filepath.Join(dir, "main.go"), filepath.Join(t.TempDir(), "pids")
	gate := filepath.Join(t.TempDir(), "gate")
	slow := []byte(slowAnswer)
	write(t, main, slow, "")
	// Polled every 100 ms, so that the waits below span several polls
	// without waiting out the default 500 ms ones.
	p := startWatch(t, bin, root, []string{"LAB_STATE_DIR=" + t.TempDir(), "WATCH_TEST_PIDS=" + pids, "WATCH_TEST_GATE=" + gate}, "E12", "--poll", "--poll-interval", "100ms", "--answer", dir)
	waitPids(t, pids) // run 1 is running the answer, until the gate opens
	var saved time.Time
	for i := range 3 {
		saved = write(t, main, slow, fmt.Sprintf("save %d", i))
		time.Sleep(250 * time.Millisecond) // three separate changes, each debounced on its own
	}
	// Five polls after the third save, run 1 still going: then let it end.
	// Run 2's answer finds the gate open and ends at once.
	time.Sleep(500 * time.Millisecond)
	write(t, gate, nil, "")
	if v := p.waitLine(verdict, time.Minute); v.at.Before(saved) { // FAILED, or INCONCLUSIVE on a busy machine
		t.Fatalf("run 1 ended before the third save, with its gate shut")
	}
	p.waitLine(regexp.MustCompile(`^── E12 · run 2 · `), 10*time.Second)
	p.waitLine(verdict, time.Minute) // FAILED, or INCONCLUSIVE on a busy machine
	p.quiet(runHeader, time.Second)  // ten polls: no third run
	if code := p.interrupt(); code != 0 {
		t.Fatalf("Ctrl-C: exit %d, want 0", code)
	}
	if n := p.runs(); n != 2 {
		t.Fatalf("%d runs for three saves during run 1, want 2 (the first, and one queued)", n)
	}
}

// Ctrl-C during a run: exit 0, and the answer, its grandchild and every
// process group involved are gone.
func TestWatchInterruptKillsTheRun(t *testing.T) {
	root, bin := watchTest(t, "builds E12's answer")
	dir := t.TempDir()
	pids := filepath.Join(t.TempDir(), "pids")
	write(t, filepath.Join(dir, "main.go"), []byte(slowAnswer), "") // no gate: runs a minute
	p := startWatch(t, bin, root, []string{"LAB_STATE_DIR=" + t.TempDir(), "WATCH_TEST_PIDS=" + pids}, "E12", "--answer", dir)
	pid, pgid, grandchild := waitPids(t, pids)
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }) // when the test fails, leave nothing behind
	if pgid == p.cmd.Process.Pid {
		t.Fatalf("the answer runs in lab watch's own process group")
	}
	start := time.Now()
	if code := p.interrupt(); code != 0 {
		t.Fatalf("Ctrl-C: exit %d, want 0", code)
	}
	t.Logf("lab watch exited %v after SIGINT", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(p.output(), "lab watch: stopped") {
		t.Errorf("no goodbye on Ctrl-C")
	}
	if strings.Contains(p.output(), "verdict:") {
		t.Errorf("an interrupted run printed a verdict")
	}
	for _, c := range []struct {
		what string
		pgid int
	}{{"the answer's", pgid}, {"lab watch's", p.cmd.Process.Pid}} {
		if left := groupMembers(c.pgid); len(left) > 0 {
			t.Errorf("%s process group %d still has processes %v", c.what, c.pgid, left)
		}
	}
	for _, pr := range []int{pid, grandchild} {
		if alive(pr) {
			t.Errorf("process %d still runs", pr)
		}
	}
}

// groupMembers lists the live (not zombie) processes of a process group,
// waiting up to a second for kills to land.
func groupMembers(pgid int) []int {
	deadline := time.Now().Add(time.Second)
	for {
		var left []int
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		if len(stats) == 0 { // no /proc: ask the kernel about the group
			if syscall.Kill(-pgid, 0) == nil {
				left = append(left, -pgid)
			}
		}
		for _, f := range stats {
			data, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			s := string(data)
			i := strings.LastIndexByte(s, ')')
			if i < 0 {
				continue
			}
			fields := strings.Fields(s[i+1:]) // state ppid pgrp ...
			if len(fields) > 2 && fields[0] != "Z" && fields[2] == strconv.Itoa(pgid) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
				left = append(left, pid)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func alive(pid int) bool {
	deadline := time.Now().Add(time.Second)
	for {
		stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if syscall.Kill(pid, 0) != nil || strings.Contains(string(stat), ") Z ") {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
}

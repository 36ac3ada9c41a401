package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"quoteflowlab.dev/lab/internal/course"
	"quoteflowlab.dev/lab/internal/grade"
	"quoteflowlab.dev/lab/internal/report"
	"quoteflowlab.dev/lab/internal/runner"
	"quoteflowlab.dev/lab/internal/watch"
)

// clearScreen moves the cursor home and clears the screen and its scrollback.
const clearScreen = "\x1b[H\x1b[2J\x1b[3J"

// runWatch implements `lab watch [ENN] [--answer DIR] [--poll] [--poll-interval D] [--timeout D]`:
// lab check, again on every save, until Ctrl-C.
func runWatch(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("watch", "[ENN] [--answer DIR] [--poll] [--poll-interval D] [--timeout D]", stderr)
	noteState(fs)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprintln(stderr, "Without ENN: the first exercise not passed yet, as `lab list` shows. The check runs once, then")
		fmt.Fprintln(stderr, "again whenever a .go file (E15: also budget_plan.json, budget_report.md) under the answer's")
		fmt.Fprintln(stderr, "folder changes. Keys on a terminal: h hint, r run again, n next exercise after a pass, q quit.")
		fmt.Fprintln(stderr, "Ctrl-C stops the running check and everything it started; the exit code is 0.")
	}
	answer := fs.String("answer", "", "the answer's package `dir`, as for lab check (default lessons/NN/exercise)")
	poll := fs.Bool("poll", false, "notice changes by scanning the folder instead of by file events: for folders where\n"+
		"events never arrive (a Windows drive under WSL2, network and synced folders, some editors)")
	interval := fs.Duration("poll-interval", watch.DefaultInterval, "how often --poll scans (also used when file events cannot be set up)")
	timeout := fs.Duration("timeout", grade.DefaultTimeout, "kill a run of the answer after this long, as for lab check")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) > 1:
		return usageError(fs, stderr, "want at most one exercise, like E14")
	case *interval < 10*time.Millisecond || *interval > time.Minute:
		return usageError(fs, stderr, "--poll-interval must be between 10ms and 1m")
	case *timeout <= 0:
		return usageError(fs, stderr, "--timeout must be positive")
	}
	root, ok := findRoot("watch", stderr)
	if !ok {
		return 1
	}
	exercise := ""
	if len(pos) == 1 {
		exercise = pos[0]
	} else {
		l, ok := firstNotPassed(root, stderr)
		if !ok {
			fmt.Fprintln(stderr, "lab watch: every exercise passes; name one to watch it again, like `lab watch E12`")
			return 1
		}
		exercise = l.Exercise()
	}
	s := &watchSession{root: root, stdout: stdout, stderr: stderr, poll: *poll, interval: *interval, timeout: *timeout, usage: fs.Usage}
	req, code, ok := s.options(exercise, *answer)
	if !ok {
		return code
	}
	if f, isFile := stdout.(*os.File); isFile && watch.IsTerminal(f) {
		s.clear = true
		if keys, restore, ok := watch.Keys(os.Stdin); ok {
			defer restore()
			s.keys = keys
		}
	}
	ctx, stop := stopContext()
	defer stop()
	runner.BecomeSubreaper()
	for {
		next, code, again := s.watch(ctx, req)
		if !again {
			return code
		}
		req = next
	}
}

// firstNotPassed is the exercise `lab list` sends the student to.
func firstNotPassed(root string, stderr io.Writer) (course.Lesson, bool) {
	st, warnings, err := course.LoadState(course.StateDir(root))
	for _, w := range warnings {
		fmt.Fprintf(stderr, "lab watch: warning: %s\n", w)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lab watch: %v (taking every exercise as not started)\n", err)
	}
	for _, l := range course.Lessons {
		if st.Exercises[l.Exercise()].Status != report.Passed {
			return l, true
		}
	}
	return course.Lesson{}, false
}

// watchSession is one `lab watch`: the exercise changes with `n`.
type watchSession struct {
	root           string
	stdout, stderr io.Writer
	poll           bool
	interval       time.Duration
	timeout        time.Duration
	usage          func()
	clear          bool        // stdout is a terminal: clear it between runs
	keys           <-chan byte // key presses; nil without a terminal
}

// options parses the check's options with lab check's own parser, so that
// watch checks exactly what lab check would; its complaints are reworded
// as lab watch's.
func (s *watchSession) options(exercise, answer string) (checkRequest, int, bool) {
	args := []string{exercise, "--timeout", s.timeout.String()}
	if answer != "" {
		args = append(args, "--answer", answer)
	}
	var msg strings.Builder
	req, code, ok := checkOptions(args, &msg)
	if !ok {
		text, _, _ := strings.Cut(msg.String(), "usage: lab check")
		fmt.Fprint(s.stderr, strings.ReplaceAll(text, "lab check", "lab watch"))
		if code == 2 {
			s.usage()
		}
	}
	return req, code, ok
}

// watch checks one exercise on every change until Ctrl-C or a key. again
// is true when the student moves on to next.
func (s *watchSession) watch(ctx context.Context, req checkRequest) (next checkRequest, code int, again bool) {
	l := req.req.Lesson
	shown := req.req.Answer // as the student knows it
	w, err := watch.Start(ctx, watch.Options{Dir: req.req.AnswerDir(), Match: req.grader.Watches, Poll: s.poll, Interval: s.interval})
	if err != nil {
		fmt.Fprintf(s.stderr, "lab watch: %v\n", err)
		return next, 1, false
	}
	defer w.Close()
	mode := modeLine(l, req.grader.Watching(), shown, w)
	recorded := recorded(req.req) // as lab check: only the student's own folder is progress
	if !s.clear {
		fmt.Fprintln(s.stdout, mode)
	}

	var (
		runs    int
		last    = "first run"
		pending = true // the first run
		cur     *checkRun
		passed  bool
	)
	stopRun := func() {
		if cur != nil {
			cur.stop()
			cur = nil
		}
	}
	defer stopRun()
	for {
		if cur == nil && pending {
			pending, passed = false, false
			runs++
			if s.clear {
				fmt.Fprint(s.stdout, clearScreen)
				fmt.Fprintln(s.stdout, mode)
			}
			fmt.Fprintf(s.stdout, "── %s · run %d · %s · %s ──\n", l.Exercise(), runs, time.Now().Format("15:04:05"), last)
			cur = startRun(ctx, req, s.stderr)
		}
		changes, done := w.C, (<-chan report.Report)(nil)
		if cur != nil {
			changes, done = nil, cur.done // a change now waits in w.C: exactly one more run
		}
		select {
		case <-ctx.Done():
			stopRun()
			fmt.Fprintln(s.stderr, "lab watch: stopped")
			return next, 0, false
		case <-changes:
			pending = true
		case r := <-done:
			took := time.Since(cur.started)
			cur.cancel()
			cur = nil
			if ctx.Err() != nil {
				continue // interrupted: the report says nothing
			}
			if recorded {
				remember(s.root, r, s.stderr)
			}
			r.WriteText(s.stdout)
			last = fmt.Sprintf("last run: %s in %s", report.VerdictWord(r.Verdict), report.Seconds(took.Milliseconds()))
			passed = r.Verdict == report.Passed
			s.footer(l, passed, recorded, shown)
		case k := <-s.keys:
			switch k {
			case 'q', 'Q':
				stopRun()
				return next, 0, false
			case 'r', 'R', '\r', '\n':
				pending = true
			case 'h', 'H':
				hint := l
				if n, ok := nextLesson(l); ok && passed {
					hint = n
				}
				fmt.Fprintln(s.stdout)
				runHint([]string{hint.Exercise()}, s.stdout, s.stderr)
			case 'n', 'N':
				n, ok := nextLesson(l)
				if !ok || !passed || cur != nil {
					continue
				}
				if next, code, ok := s.options(n.Exercise(), ""); ok {
					return next, code, true
				}
			}
		}
	}
}

// checkRun is one check running in the background.
type checkRun struct {
	cancel  context.CancelFunc
	done    chan report.Report
	started time.Time
}

// startRun starts one check, in this process: every child it starts goes
// through the runner, so cancelling the check kills each child's process
// group before the check returns.
func startRun(ctx context.Context, req checkRequest, stderr io.Writer) *checkRun {
	c := &checkRun{done: make(chan report.Report, 1), started: time.Now()}
	ctx, c.cancel = context.WithCancel(ctx)
	go func() { c.done <- runChecked(ctx, req, stderr) }()
	return c
}

// stop cancels the check and waits until it has returned.
func (c *checkRun) stop() {
	c.cancel()
	<-c.done
}

// footer says what happens next, after a run's report.
func (s *watchSession) footer(l course.Lesson, passed, recorded bool, shown string) {
	if passed {
		if recorded {
			fmt.Fprintf(s.stdout, "%s passed: recorded for `lab list`.\n", l.Exercise())
		} else {
			fmt.Fprintf(s.stdout, "%s passed (an answer outside %s is not recorded for `lab list`).\n", l.Exercise(), l.Starter())
		}
		n, ok := nextLesson(l)
		switch {
		case !ok:
			fmt.Fprintln(s.stdout, "That was the last exercise.")
		case s.keys != nil:
			fmt.Fprintf(s.stdout, "next: %s · %s — press n to watch it, h for its hint, q to quit\n", n.Exercise(), n.DisplayTitle(s.root))
		default:
			fmt.Fprintf(s.stdout, "next: %s · %s — run `lab watch %s` (`lab hint %s` for a hint)\n", n.Exercise(), n.DisplayTitle(s.root), n.Exercise(), n.Exercise())
		}
	} else if s.keys != nil {
		fmt.Fprintln(s.stdout, "keys: h hint · r run again · q quit")
	}
	fmt.Fprintf(s.stdout, "watching %s; save to check again (Ctrl-C stops)\n", shown)
}

// nextLesson is the lesson after l in the manifest.
func nextLesson(l course.Lesson) (course.Lesson, bool) {
	i := slices.IndexFunc(course.Lessons, func(x course.Lesson) bool { return x.Exercise() == l.Exercise() })
	if i < 0 || i+1 >= len(course.Lessons) {
		return course.Lesson{}, false
	}
	return course.Lessons[i+1], true
}

// modeLine is the first line: how changes are noticed, and how to switch.
func modeLine(l course.Lesson, what, shown string, w *watch.Watcher) string {
	switch {
	case w.Mode == watch.Events:
		return fmt.Sprintf("lab watch %s: file events on %s (%s) · no events arrived? try `lab watch --poll`", l.Exercise(), shown, what)
	case w.Fallback != nil:
		return fmt.Sprintf("lab watch %s: polling %s (%s) every %v, because file events could not be set up (%v) · --poll-interval sets the interval", l.Exercise(), shown, what, w.Interval, w.Fallback)
	default:
		return fmt.Sprintf("lab watch %s: polling %s (%s) every %v (--poll) · file events react sooner: drop --poll", l.Exercise(), shown, what, w.Interval)
	}
}

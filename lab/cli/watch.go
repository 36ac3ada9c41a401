package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/kit/grade"
	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
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
		fmt.Fprint(stderr, msg.T("watch.usage_more"))
	}
	answer := fs.String("answer", "", msg.T("watch.flag.answer"))
	poll := fs.Bool("poll", false, msg.T("watch.flag.poll"))
	interval := fs.Duration("poll-interval", watch.DefaultInterval, msg.T("watch.flag.poll_interval"))
	timeout := fs.Duration("timeout", grade.DefaultTimeout, msg.T("watch.flag.timeout"))
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	switch {
	case len(pos) > 1:
		return usageError(fs, stderr, "%s", msg.T("usage.at_most_one_exercise"))
	case *interval < 10*time.Millisecond || *interval > time.Minute:
		return usageError(fs, stderr, "%s", msg.T("usage.poll_interval_range"))
	case *timeout <= 0:
		return usageError(fs, stderr, "%s", msg.T("usage.timeout_positive"))
	}
	root, ok := findRoot("watch", stderr)
	if !ok {
		return 1
	}
	var lesson course.Lesson
	if len(pos) == 1 {
		var code int
		if lesson, code, ok = findLesson(fs, root, pos[0], stderr); !ok {
			return code
		}
	} else {
		lessons, ok := loadLessons("watch", root, stderr)
		if !ok {
			return 1
		}
		l, ok := firstNotPassed(root, lessons, stderr)
		if !ok {
			fmt.Fprint(stderr, msg.T("watch.all_pass"))
			return 1
		}
		lesson = l
	}
	s := &watchSession{root: root, stdout: stdout, stderr: stderr, poll: *poll, interval: *interval, timeout: *timeout, flags: fs}
	req, code, ok := s.options(lesson, *answer)
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
	ctx, stop := runner.StopContext()
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
func firstNotPassed(root string, lessons []course.Lesson, stderr io.Writer) (course.Lesson, bool) {
	st, warnings, err := course.LoadState(course.StateDir(root))
	for _, w := range warnings {
		fmt.Fprint(stderr, msg.T("watch.warning", w))
	}
	if err != nil {
		fmt.Fprint(stderr, msg.T("watch.state_error", err))
	}
	for _, l := range lessons {
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
	flags          *flag.FlagSet // lab watch's: its name and usage in what it prints
	clear          bool          // stdout is a terminal: clear it between runs
	keys           <-chan byte   // key presses; nil without a terminal
}

// options is the check of lesson's answer ("": its starter) that lab
// check would run, with the session's timeout.
func (s *watchSession) options(lesson course.Lesson, answer string) (checkRequest, int, bool) {
	g, req, code, ok := graded(s.flags, s.stderr, grade.Request{Root: s.root, Lesson: lesson, Timeout: s.timeout, Repeat: 1}, answer)
	return checkRequest{req: req, grader: g}, code, ok
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
		last    = msg.T("watch.first_run")
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
			fmt.Fprint(s.stdout, msg.T("watch.run_line", l.Exercise(), runs, time.Now().Format("15:04:05"), last))
			cur = startRun(ctx, req, s.stderr)
		}
		changes, done := w.C, (<-chan report.Report)(nil)
		if cur != nil {
			changes, done = nil, cur.done // a change now waits in w.C: exactly one more run
		}
		select {
		case <-ctx.Done():
			stopRun()
			fmt.Fprint(s.stderr, msg.T("watch.stopped"))
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
			last = msg.T("watch.last_run", report.VerdictWord(r.Verdict), report.Seconds(took.Milliseconds()))
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
				if n, ok := nextLesson(s.root, l); ok && passed {
					hint = n
				}
				fmt.Fprintln(s.stdout)
				runHint([]string{hint.Exercise()}, s.stdout, s.stderr)
			case 'n', 'N':
				n, ok := nextLesson(s.root, l)
				if !ok || !passed || cur != nil {
					continue
				}
				if next, code, ok := s.options(n, ""); ok {
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
			fmt.Fprint(s.stdout, msg.T("watch.passed_recorded", l.Exercise()))
		} else {
			fmt.Fprint(s.stdout, msg.T("watch.passed_not_recorded", l.Exercise(), l.Starter()))
		}
		n, ok := nextLesson(s.root, l)
		switch {
		case !ok:
			fmt.Fprint(s.stdout, msg.T("watch.last_exercise"))
		case s.keys != nil:
			fmt.Fprint(s.stdout, msg.T("watch.next_keys", n.Exercise(), n.DisplayTitle(s.root)))
		default:
			fmt.Fprint(s.stdout, msg.T("watch.next_cmd", n.Exercise(), n.DisplayTitle(s.root)))
		}
	} else if s.keys != nil {
		fmt.Fprint(s.stdout, msg.T("watch.keys"))
	}
	fmt.Fprint(s.stdout, msg.T("watch.watching", shown))
}

// nextLesson is the lesson after l in the manifest.
func nextLesson(root string, l course.Lesson) (course.Lesson, bool) {
	ls, err := course.Load(root)
	i := slices.IndexFunc(ls, func(x course.Lesson) bool { return x.Number == l.Number })
	if err != nil || i < 0 || i+1 >= len(ls) {
		return course.Lesson{}, false
	}
	return ls[i+1], true
}

// modeLine is the first line: how changes are noticed, and how to switch.
func modeLine(l course.Lesson, what, shown string, w *watch.Watcher) string {
	switch {
	case w.Mode == watch.Events:
		return msg.T("watch.mode_events", l.Exercise(), shown, what)
	case w.Fallback != nil:
		return msg.T("watch.mode_fallback", l.Exercise(), shown, what, w.Interval, w.Fallback)
	default:
		return msg.T("watch.mode_poll", l.Exercise(), shown, what, w.Interval)
	}
}

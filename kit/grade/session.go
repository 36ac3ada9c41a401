package grade

import (
	"context"
	"slices"
	"sync"

	"quoteflowlab.dev/kit/machine"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
)

// A Session is one check's hold on the machine and the course, the same
// for every grader: the monitor that tells a busy machine from a wrong
// answer, the guard that puts the course back after what the answer (or a
// tool) ran, its secret key (off the disk while anything runs), and the count of the processes the runs left behind.
// Open starts it, Run runs one program, Close ends it.
type Session struct {
	Req     Request // the request, its defaults filled
	Monitor Monitor // Req.Monitor, or one of the session's own
	Guard   *Guard
	Key     []byte // the check's secret; derive other secrets of the check from it
	Left    LeftBehind

	keep    Keep
	mu      sync.Mutex
	changed []string // what the runs changed in the course, put back
	starved float64  // the most a run's threads waited for a CPU
}

// Keep is where a session's key stays between checks: the file Name in
// the folder Dir, taken off the disk while the session is open. The zero
// Keep is a fresh key for every session, never written.
type Keep struct{ Dir, Name string }

// Open starts a session for req: the monitor, the guard (the course as it
// is now; the answer's folder and the cache are not guarded) and the key.
// An error says the course could not be read.
func Open(req Request, keep Keep) (*Session, error) {
	s := &Session{Req: req.WithDefaults(), Monitor: req.Monitor, keep: keep}
	if s.Monitor == nil {
		s.Monitor = machine.Start()
	}
	var err error
	s.Guard, err = NewGuard(s.Req.Root, s.Req.AnswerDir(), s.Req.CacheDir)
	if err != nil {
		s.Monitor.Stop()
		return nil, err
	}
	if keep.Name == "" {
		s.Key = NewKey()
	} else {
		s.Key = TakeKey(keep.Dir, keep.Name)
	}
	return s, nil
}

// Run runs one program of the check (through runner.Run: its own process
// group, killed whole at its bound) and counts what it left running.
func (s *Session) Run(ctx context.Context, cmd runner.Cmd) runner.Result {
	res := runner.Run(ctx, cmd)
	s.Left.Add(res)
	s.mu.Lock()
	s.starved = max(s.starved, res.Starved)
	s.mu.Unlock()
	return res
}

// MaxStarved is the most any run's threads waited for a CPU, as a share of
// its wall time.
func (s *Session) MaxStarved() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.starved
}

// Restore puts the course back as the guard found it and returns what was
// changed since the last Restore; Changed keeps every such file.
func (s *Session) Restore() []string {
	changed := s.Guard.Restore()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range changed {
		if !slices.Contains(s.changed, f) {
			s.changed = append(s.changed, f)
		}
	}
	return changed
}

// Changed lists every file of the course a run changed, added or removed
// (put back by Restore).
func (s *Session) Changed() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.changed)
}

// Tampered fails r when a run changed the course: its summary names the
// files and where lab kept them (who: "the answer", "a tool"), next says
// what to do. It reports whether it did.
func (s *Session) Tampered(r *report.Report, who, next string) bool {
	changed := s.Changed()
	if len(changed) == 0 {
		return false
	}
	r.Verdict, r.OK = report.Failed, false
	r.Summary = s.Guard.Tampered(who, changed)
	r.Next = next
	return true
}

// Close ends the session: the course is put back a last time, the key goes
// back to its folder (a kept one), and the monitor stops. It returns how
// busy the machine was over the session.
func (s *Session) Close() report.Machine {
	s.Restore()
	if s.keep.Name != "" {
		PutKey(s.keep.Dir, s.keep.Name, s.Key)
	}
	return s.Monitor.Stop()
}

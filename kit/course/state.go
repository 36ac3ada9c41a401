package course

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"quoteflowlab.dev/kit/report"
)

// StateDirEnv overrides where lab keeps its state (default: <root>/.lab).
// The testscripts set it so a test run never touches a student's progress.
const StateDirEnv = "LAB_STATE_DIR"

// StateDir returns the directory for lab's state and caches.
func StateDir(root string) string {
	if d := os.Getenv(StateDirEnv); d != "" {
		return d
	}
	return filepath.Join(root, ".lab")
}

// Progress is what lab remembers about one exercise.
type Progress struct {
	// Status is the verdict of the last check: report.Passed,
	// report.Failed or report.NotStarted (an inconclusive check is not
	// recorded). Files written before this field took verdicts say
	// "failing", read as report.Failed.
	Status    report.Verdict `json:"status"`
	CheckedAt time.Time      `json:"checked_at"`
	Summary   string         `json:"summary,omitempty"`
	// PassedAt is when the exercise first passed. A later failing check
	// changes Status but never this: a pass is not taken back.
	PassedAt *time.Time `json:"passed_at,omitempty"`
}

// State is the content of state.json.
type State struct {
	Exercises map[string]Progress `json:"exercises"`
	// unreadable holds entries that could not be decoded, as they were, so
	// that rewriting the file loses nothing.
	unreadable map[string]json.RawMessage
}

// StateFile is the progress record's name in the state folder.
const StateFile = "state.json"

const stateFile = StateFile

// LoadState reads the state in dir. A missing file is an empty state. An
// entry that cannot be read is kept aside (and written back as it was by
// Record) with one warning each; a file that is not JSON at all is copied
// to state.json.bad before anything replaces it, and reported.
func LoadState(dir string) (st State, warnings []string, err error) {
	st = State{Exercises: map[string]Progress{}, unreadable: map[string]json.RawMessage{}}
	file := filepath.Join(dir, stateFile)
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil, nil
	}
	if err != nil {
		return st, nil, err
	}
	var raw struct {
		Exercises map[string]json.RawMessage `json:"exercises"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		bad := file + ".bad"
		if werr := os.WriteFile(bad, data, 0o644); werr != nil {
			return st, nil, fmt.Errorf("%s is not valid JSON (%v) and could not be kept aside: %w", file, err, werr)
		}
		return st, []string{fmt.Sprintf("%s is not valid JSON (%v); kept as %s, starting a new one", file, err, bad)}, nil
	}
	for name, entry := range raw.Exercises {
		var p Progress
		if err := json.Unmarshal(entry, &p); err != nil {
			st.unreadable[name] = entry
			warnings = append(warnings, fmt.Sprintf("%s: the entry for %s cannot be read (%v); kept as it is", file, name, err))
			continue
		}
		if p.Status == "failing" {
			p.Status = report.Failed
		}
		st.Exercises[name] = p
	}
	slices.Sort(warnings)
	return st, warnings, nil
}

// Record stores p for exercise in the state under dir, keeping every other
// entry (readable or not) and the exercise's first pass. The file is
// replaced atomically (a temporary file, then a rename), so a concurrent
// `lab list` never reads half of it and a crash never leaves it cut.
func Record(dir, exercise string, p Progress) (warnings []string, err error) {
	st, warnings, err := LoadState(dir)
	if err != nil {
		return warnings, err
	}
	if old, ok := st.Exercises[exercise]; ok && old.PassedAt != nil {
		p.PassedAt = old.PassedAt
	} else if ok && old.Status == report.Passed {
		at := old.CheckedAt
		p.PassedAt = &at
	}
	if p.Status == report.Passed && p.PassedAt == nil {
		at := p.CheckedAt
		p.PassedAt = &at
	}
	st.Exercises[exercise] = p
	delete(st.unreadable, exercise)
	out := map[string]any{}
	for name, e := range st.unreadable {
		out[name] = e
	}
	for name, e := range st.Exercises {
		out[name] = e
	}
	data, err := json.MarshalIndent(map[string]any{"exercises": out}, "", "  ")
	if err != nil {
		return warnings, err
	}
	return warnings, writeAtomic(dir, stateFile, append(data, '\n'))
}

// writeAtomic replaces dir/name with data through a temporary file and a rename.
func writeAtomic(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	merr := tmp.Chmod(0o644) // CreateTemp makes it private; it is not a secret
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

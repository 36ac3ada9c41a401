package course

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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

// Status is an exercise's progress as remembered from the last `lab check`.
type Status string

const (
	NotStarted Status = "not_started"
	Failing    Status = "failing"
	Passed     Status = "passed"
)

// String returns the status as a student reads it.
func (s Status) String() string {
	switch s {
	case "", NotStarted:
		return "not started"
	}
	return string(s)
}

// Progress is what lab remembers about one exercise.
type Progress struct {
	Status    Status    `json:"status"`
	CheckedAt time.Time `json:"checked_at"`
	Summary   string    `json:"summary,omitempty"`
}

// State is the content of state.json.
type State struct {
	Exercises map[string]Progress `json:"exercises"`
}

const stateFile = "state.json"

// LoadState reads the state in dir. A missing file is an empty state.
func LoadState(dir string) (State, error) {
	st := State{Exercises: map[string]Progress{}}
	data, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return State{Exercises: map[string]Progress{}}, fmt.Errorf("reading %s: %w", filepath.Join(dir, stateFile), err)
	}
	if st.Exercises == nil {
		st.Exercises = map[string]Progress{}
	}
	return st, nil
}

// Record stores p for exercise in the state under dir. The file is replaced
// atomically, so a concurrent `lab list` never reads half of it.
func Record(dir, exercise string, p Progress) error {
	st, err := LoadState(dir)
	if err != nil {
		st = State{Exercises: map[string]Progress{}} // a corrupt file is replaced
	}
	st.Exercises[exercise] = p
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, stateFile+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(data, '\n'))
	merr := tmp.Chmod(0o644) // CreateTemp makes it private; it is not a secret
	cerr := tmp.Close()
	if err := errors.Join(werr, merr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, stateFile)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

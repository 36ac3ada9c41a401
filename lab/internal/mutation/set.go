package mutation

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"quoteflowlab.dev/kit/course"
	"quoteflowlab.dev/lab/internal/mutagen"
)

// A Set is one of the two sets of checks a lesson generates (package
// mutagen) from a file beside its checks and records in another (Run):
// Mutants from scope.txt into generated.txt, Wheats from allowed.txt into
// wheats.txt.
type Set int

const (
	Mutants Set = iota
	Wheats
)

// Sets is both, mutants first.
var Sets = []Set{Mutants, Wheats}

// String is the name of one of the set: "mutant" or "wheat".
func (s Set) String() string { return [...]string{"mutant", "wheat"}[s] }

// From is the file the set is generated from: scope.txt or allowed.txt.
func (s Set) From(l course.Lesson) string {
	return l.Checks() + [...]string{"/scope.txt", "/allowed.txt"}[s]
}

// File is the lesson's committed run of the set: generated.txt or wheats.txt.
func (s Set) File(l course.Lesson) string {
	return l.Checks() + [...]string{"/generated.txt", "/wheats.txt"}[s]
}

// Command is the command that remakes File.
func (s Set) Command(l course.Lesson) string {
	return "go run ./lab verify " + [...]string{"--killset ", "--wheats "}[s] + l.Exercise()
}

// RunName names the set's run in messages: "kill-set run" or "wheat run".
func (s Set) RunName() string { return [...]string{"kill-set run", "wheat run"}[s] }

// Declared reports whether the lesson has the set's From file.
func (s Set) Declared(root string, l course.Lesson) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(s.From(l))))
	return err == nil
}

// source reads From: the files it names (what a run covers), and the
// generator of the set from them as they are now.
func (s Set) source(root string, l course.Lesson) (mutagen.Scope, func() ([]mutagen.Mutant, error), error) {
	if s == Wheats {
		a, err := mutagen.ReadAllowed(root, s.From(l))
		return a.Scope(), func() ([]mutagen.Mutant, error) { return mutagen.WheatsFromAllowed(root, a) }, err
	}
	sc, err := mutagen.ReadScope(root, s.From(l))
	return sc, func() ([]mutagen.Mutant, error) { return mutagen.FromScope(root, sc) }, err
}

// Covers is the hash of what a run of the set covers as the tree is now
// (mutagen.Hash of From, the files it names and the reference answer).
func (s Set) Covers(root string, l course.Lesson) (string, error) {
	sc, _, err := s.source(root, l)
	if err != nil {
		return "", err
	}
	return mutagen.Hash(root, s.From(l), sc, l.Reference())
}

// Generate makes the set from the checkpoint as it is now. A lesson with
// no allowed.txt has no wheats.
func (s Set) Generate(root string, l course.Lesson) ([]mutagen.Mutant, error) {
	if s == Wheats && !s.Declared(root, l) {
		return nil, nil
	}
	_, gen, err := s.source(root, l)
	if err != nil {
		return nil, err
	}
	return gen()
}

// Read reads the lesson's File; (nil, nil) when it has none.
func (s Set) Read(root string, l course.Lesson) (*mutagen.Results, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.File(l))))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r, err := mutagen.ParseResults(string(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.File(l), err)
	}
	r.Exercise, r.Wheats = l.Exercise(), s == Wheats
	return r, nil
}

// recorded returns the entries of File with the status want, each with its
// mutant made from the checkpoint as it is now; (nil, nil, nil) when the
// lesson has no File. A recorded name the generator no longer makes as
// recorded is an error: File is stale (the course's test says so first).
func (s Set) recorded(root string, l course.Lesson, want string) ([]mutagen.Entry, []mutagen.Mutant, error) {
	res, err := s.Read(root, l)
	if err != nil || res == nil {
		return nil, nil, err
	}
	ms, err := s.Generate(root, l)
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]mutagen.Mutant{}
	for _, m := range ms {
		byName[m.Name] = m
	}
	var es []mutagen.Entry
	var out []mutagen.Mutant
	for _, e := range res.Entries {
		if e.Status != want {
			continue
		}
		m, ok := byName[e.Name]
		if !ok || m.Edit() != e.Edit {
			return nil, nil, fmt.Errorf("%s: %s is no longer generated as recorded (the checkpoint changed since the %s): run `%s`", s.File(l), e.Name, s.RunName(), s.Command(l))
		}
		es, out = append(es, e), append(out, m)
	}
	return es, out, nil
}

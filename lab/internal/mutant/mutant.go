// Package mutant loads the course's mutants: copies of one checkpoint file
// with one deliberate bug, each kept with its story in
// testscripts/mutants/<exercise>/<name>.txtar, and turns them into the
// overlay files `go build -overlay` reads, so no checkpoint is ever copied
// or modified.
//
// A definition holds a header, the bug as replace/with pairs of whole lines,
// and the complete replacement file, named by the checkpoint file it
// replaces. base is the SHA-256 of the checkpoint file the replacement was
// made from; when that file changes, Remake applies the pairs again to the
// new version (go run ./lab/internal/mutant/remake), so a mutant never
// silently undoes a later fix to its checkpoint:
//
//	story: a rejected request still bumps the active-request counter.
//	required: true
//	base: 6f1c...
//	-- replace --
//			return nil, ErrBusy
//	-- with --
//			s.active.Add(1) // MUTANT: ...
//			return nil, ErrBusy
//	-- checkpoints/13/quoteflow/admission.go --
//	package quoteflow
//	...
package mutant

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"
)

// Dir is the slash path, relative to the repository root, of the mutant
// definitions.
const Dir = "testscripts/mutants"

// A Mutant is one deliberately broken checkpoint file.
type Mutant struct {
	Exercise string // "E13"
	Name     string // file name of the definition without .txtar
	Story    string // one sentence for a student: what the bug lets through
	Required bool   // required mutants decide the verdict; the others are a bonus
	Target   string // slash path, relative to the root, of the replaced file
	Base     string // hex SHA-256 of the target the mutant was made from
	Edits    []Edit // the bug, as edits of the target
	Content  []byte // the complete replacement file: the target with Edits applied
	File     string // path of the definition
}

// An Edit replaces the one occurrence of Old (whole lines) with New.
type Edit struct {
	Old, New string
}

// Load returns the mutants of exercise under root, required ones first, then
// by name. An exercise without mutants gives an empty list.
func Load(root, exercise string) ([]Mutant, error) {
	dir := filepath.Join(root, filepath.FromSlash(Dir), exercise)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ms []Mutant
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".txtar")
		if !ok || e.IsDir() {
			continue
		}
		file := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		m, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("mutant %s: %w", file, err)
		}
		m.Exercise, m.Name, m.File = exercise, name, file
		ms = append(ms, m)
	}
	slices.SortStableFunc(ms, func(a, b Mutant) int {
		if a.Required != b.Required {
			if a.Required {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return ms, nil
}

// LoadAll returns the mutants of every exercise under root, by exercise.
func LoadAll(root string) ([]Mutant, error) {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(Dir)))
	if err != nil {
		return nil, err
	}
	var all []Mutant
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		ms, err := Load(root, e.Name())
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	return all, nil
}

// Parse reads one definition (see the package comment).
func Parse(data []byte) (Mutant, error) {
	var m Mutant
	ar := txtar.Parse(data)
	var pending *Edit
	for _, f := range ar.Files {
		switch f.Name {
		case "replace":
			if pending != nil {
				return m, errors.New("a replace section without its with section")
			}
			pending = &Edit{Old: string(f.Data)}
		case "with":
			if pending == nil {
				return m, errors.New("a with section without a replace section before it")
			}
			pending.New = string(f.Data)
			m.Edits = append(m.Edits, *pending)
			pending = nil
		default:
			if m.Target != "" {
				return m, fmt.Errorf("two replaced files, %s and %s; a mutant replaces one", m.Target, f.Name)
			}
			m.Target, m.Content = f.Name, f.Data
		}
	}
	if pending != nil {
		return m, errors.New("a replace section without its with section")
	}
	if m.Target == "" {
		return m, errors.New("no replaced file")
	}
	if path.Clean(m.Target) != m.Target || !strings.HasPrefix(m.Target, "checkpoints/") {
		return m, fmt.Errorf("replaced file %q must be a slash path under checkpoints/", m.Target)
	}
	if err := m.parseHeader(ar.Comment); err != nil {
		return m, err
	}
	return m, nil
}

func (m *Mutant) parseHeader(comment []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(comment))
	seen := map[string]bool{}
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("header line %q is not `key: value`", line)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		seen[key] = true
		switch key {
		case "story":
			m.Story = val
		case "required":
			b, err := strconv.ParseBool(val)
			if err != nil {
				return fmt.Errorf("required: %w", err)
			}
			m.Required = b
		case "base":
			m.Base = val
		default:
			return fmt.Errorf("unknown header %q (want story, required, base)", key)
		}
	}
	for _, k := range []string{"story", "required"} {
		if !seen[k] {
			return fmt.Errorf("missing header %q", k)
		}
	}
	return nil
}

// Apply returns target with m's edits applied. Each edit's Old must occur
// exactly once, so an edit never lands in the wrong place.
func (m Mutant) Apply(target []byte) ([]byte, error) {
	if len(m.Edits) == 0 {
		return nil, errors.New("no replace/with sections: the bug cannot be reapplied")
	}
	out := string(target)
	for i, e := range m.Edits {
		switch n := strings.Count(out, e.Old); n {
		case 1:
			out = strings.Replace(out, e.Old, e.New, 1)
		case 0:
			return nil, fmt.Errorf("edit %d: the lines to replace are not in %s any more:\n%s", i+1, m.Target, e.Old)
		default:
			return nil, fmt.Errorf("edit %d: the lines to replace occur %d times in %s; give more context:\n%s", i+1, n, m.Target, e.Old)
		}
	}
	return []byte(out), nil
}

// Format renders m as a definition (the inverse of Parse).
func Format(m Mutant) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "story: %s\nrequired: %t\nbase: %s\n", m.Story, m.Required, m.Base)
	ar := &txtar.Archive{Comment: b.Bytes()}
	for _, e := range m.Edits {
		ar.Files = append(ar.Files, txtar.File{Name: "replace", Data: []byte(e.Old)}, txtar.File{Name: "with", Data: []byte(e.New)})
	}
	ar.Files = append(ar.Files, txtar.File{Name: m.Target, Data: m.Content})
	return txtar.Format(ar)
}

// Hash returns the hex SHA-256 of data, as used in a definition's base.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ErrStale means the checkpoint file changed after the mutant was made.
var ErrStale = errors.New("was made from an older version of")

// CheckCurrent reports whether m still matches the checkpoint file it
// replaces: the target must exist and hash to m.Base, the replacement must
// be exactly the target with m's edits applied, and it must differ from the
// target.
func (m Mutant) CheckCurrent(root string) error {
	cur, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.Target)))
	if err != nil {
		return fmt.Errorf("mutant %s/%s: %w", m.Exercise, m.Name, err)
	}
	if Hash(cur) != m.Base {
		return fmt.Errorf("mutant %s/%s %w %s; run `go run ./lab/internal/mutant/remake` to remake it", m.Exercise, m.Name, ErrStale, m.Target)
	}
	want, err := m.Apply(cur)
	if err != nil {
		return fmt.Errorf("mutant %s/%s: %w", m.Exercise, m.Name, err)
	}
	if !bytes.Equal(want, m.Content) {
		return fmt.Errorf("mutant %s/%s: its replacement file is not %s with its edits applied; run `go run ./lab/internal/mutant/remake`", m.Exercise, m.Name, m.Target)
	}
	if bytes.Equal(cur, m.Content) {
		return fmt.Errorf("mutant %s/%s: identical to %s (no bug)", m.Exercise, m.Name, m.Target)
	}
	return nil
}

// Remake rebuilds m's replacement file from the current checkpoint file and
// m's edits, and rewrites its definition. It reports whether anything changed.
func (m *Mutant) Remake(root string) (bool, error) {
	cur, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.Target)))
	if err != nil {
		return false, err
	}
	content, err := m.Apply(cur)
	if err != nil {
		return false, fmt.Errorf("mutant %s/%s: %w", m.Exercise, m.Name, err)
	}
	if m.Base == Hash(cur) && bytes.Equal(content, m.Content) {
		return false, nil
	}
	m.Base, m.Content = Hash(cur), content
	return true, os.WriteFile(m.File, Format(*m), 0o644)
}

// overlay is the JSON document `go build -overlay` reads.
type overlay struct {
	Replace map[string]string
}

// OverlayJSON returns the overlay document that swaps m into the checkpoint
// under root, reading the replacement from file.
func (m Mutant) OverlayJSON(root, file string) ([]byte, error) {
	target := filepath.Join(root, filepath.FromSlash(m.Target))
	if !filepath.IsAbs(target) || !filepath.IsAbs(file) {
		return nil, fmt.Errorf("overlay paths must be absolute: %q, %q", target, file)
	}
	return json.MarshalIndent(overlay{Replace: map[string]string{target: file}}, "", "  ")
}

// WriteOverlay writes m's replacement file and its overlay document into dir
// (created if needed) and returns the overlay's path. Files whose content is
// already right are left alone.
func (m Mutant) WriteOverlay(root, dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	repl := filepath.Join(dir, path.Base(m.Target))
	if err := writeIfChanged(repl, m.Content); err != nil {
		return "", err
	}
	doc, err := m.OverlayJSON(root, repl)
	if err != nil {
		return "", err
	}
	ov := filepath.Join(dir, "overlay.json")
	return ov, writeIfChanged(ov, doc)
}

// writeIfChanged replaces name with data unless it already holds it. The
// write goes through a temporary file and a rename, so another lab process
// reading the file meanwhile sees the old or the new content, never half.
func writeIfChanged(name string, data []byte) error {
	if old, err := os.ReadFile(name); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Package check loads a lesson's checks: builds of the course's code with
// one edit each. A mutant is a checkpoint with one bug, which an answer must
// fail on; a wheat is a checkpoint changed in a way its contract allows,
// which an answer must pass on; a broken tool is a reference tool with one
// bug, which the lesson's grader must reject.
//
// Each is one txtar file beside its lesson, lessons/NN/checks/<name>.txtar:
// a header, then the edit as replace/with pairs of whole lines. The edited
// file is made at load time from the file as it is now, and handed to
// `go build -overlay`; nothing in the tree is copied or changed:
//
//	kind: mutant
//	required: true
//	story: a supplier's 503 is never retried, so one hiccup loses a supplier.
//	file: checkpoints/14/quoteflow/retry.go
//	base: 1203d7...   (SHA-256 of the file when the edit was written)
//	-- replace --
//		for attempt := 1; attempt <= maxAttempts; attempt++ {
//	-- with --
//		for attempt := 1; attempt <= 1; attempt++ { // MUTANT: no second attempt
//
// When a replace text is no longer found exactly once in its file, the
// edit is stale: Apply says so, naming the check and its lesson, and the
// course's tests fail until the edit is mended. There is nothing to remake.
package check

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/txtar"

	"quoteflowlab.dev/kit/report"
)

// A Check is one check defined by an edit of one file.
type Check struct {
	Exercise string      // "E14"
	Name     string      // the definition's file name without .txtar
	Kind     report.Kind // report.Mutant, report.Wheat or report.Broken
	Required bool        // mutants and broken variants: required (true) or bonus; wheats are always required
	Story    string      // one sentence for a student (a mutant's bug; what a wheat changes)
	StoryZh  string      // the story in Chinese (header story.zh-CN)
	Expect   string      // broken variants: the grader property that must reject it
	File     string      // slash path, from the repository root, of the edited file
	Base     string      // hex SHA-256 of File when the edit was written
	Edits    []Edit
	Def      string // path of the definition file
	// Generated is set for a mutant made by the generator (package
	// mutagen) rather than written by hand.
	Generated *Generated
}

// Generated says where a generated mutant comes from.
type Generated struct {
	Op       string // the generator's operator: boundary, case_removed, ...
	Where    string // "quoteflow/retry.go:45 (Service.withRetry)"
	Edit     string // the edit in one line: "`a < b` → `a <= b`"
	Property string // the row of the lesson's properties.md it breaks
	// PropertyZh is Property's row of properties.zh-CN.md ("" without one).
	PropertyZh string
}

// An Edit replaces the one occurrence of Old (whole lines) with New.
type Edit struct {
	Old, New string
}

// ErrStale is returned (wrapped) by Apply when an edit's text is not found
// exactly once in the file it edits.
var ErrStale = errors.New("stale edit")

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Load returns the checks in dir (the lesson's Checks folder, a slash path
// under root) for exercise: required mutants first, then bonus mutants,
// then wheats, each group by name. A missing folder gives none.
func Load(root, dir, exercise string) ([]Check, error) {
	abs := filepath.Join(root, filepath.FromSlash(dir))
	entries, err := os.ReadDir(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var vs []Check
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".txtar")
		if !ok || e.IsDir() {
			continue
		}
		def := filepath.Join(abs, e.Name())
		if !nameRE.MatchString(name) {
			return nil, fmt.Errorf("%s: a check's name must be lower_snake_case (it is also a Go identifier)", def)
		}
		data, err := os.ReadFile(def)
		if err != nil {
			return nil, err
		}
		v, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s (%s): %w", def, exercise, err)
		}
		v.Exercise, v.Name, v.Def = exercise, name, def
		vs = append(vs, v)
	}
	slices.SortStableFunc(vs, func(a, b Check) int {
		if ra, rb := a.rank(), b.rank(); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Name, b.Name)
	})
	return vs, nil
}

func (v Check) rank() int {
	switch {
	case v.Kind == report.Wheat:
		return 2
	case v.Required:
		return 0
	}
	return 1
}

// Parse reads one definition.
func Parse(data []byte) (Check, error) {
	var v Check
	ar := txtar.Parse(data)
	if err := v.parseHeader(ar.Comment); err != nil {
		return v, err
	}
	var pending *Edit
	for _, f := range ar.Files {
		switch f.Name {
		case "replace":
			if pending != nil {
				return v, errors.New("a replace section without its with section")
			}
			pending = &Edit{Old: string(f.Data)}
		case "with":
			if pending == nil {
				return v, errors.New("a with section without a replace section before it")
			}
			pending.New = string(f.Data)
			v.Edits = append(v.Edits, *pending)
			pending = nil
		default:
			return v, fmt.Errorf("section %q: want only replace and with sections (the edited file is named by the file: header)", f.Name)
		}
	}
	if pending != nil {
		return v, errors.New("a replace section without its with section")
	}
	if len(v.Edits) == 0 {
		return v, errors.New("no replace/with sections: the edit is missing")
	}
	for i, e := range v.Edits {
		if strings.TrimSpace(e.Old) == "" {
			return v, fmt.Errorf("edit %d: an empty replace section", i+1)
		}
	}
	return v, nil
}

func (v *Check) parseHeader(comment []byte) error {
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
		if seen[key] {
			return fmt.Errorf("header %q given twice", key)
		}
		seen[key] = true
		switch key {
		case "kind":
			v.Kind = report.Kind(val)
		case "story":
			v.Story = val
		case "story.zh-CN":
			v.StoryZh = val
		case "required":
			b, err := strconv.ParseBool(val)
			if err != nil {
				return fmt.Errorf("required: %w", err)
			}
			v.Required = b
		case "file":
			v.File = val
		case "base":
			v.Base = val
		case "expect":
			v.Expect = val
		default:
			return fmt.Errorf("unknown header %q (want kind, required, story, story.zh-CN, file, base, expect)", key)
		}
	}
	want := []string{"kind", "story", "file", "base"}
	switch v.Kind {
	case report.Mutant:
		want = append(want, "required")
	case report.Broken:
		want = append(want, "required", "expect")
	case report.Wheat:
		if seen["required"] {
			return errors.New("a wheat is always required: drop its required: line")
		}
		v.Required = true
	default:
		return fmt.Errorf("kind %q: want mutant, wheat or broken", v.Kind)
	}
	if seen["expect"] && v.Kind != report.Broken {
		return errors.New("expect: is for broken tool variants only")
	}
	for _, k := range want {
		if !seen[k] {
			return fmt.Errorf("missing header %q", k)
		}
	}
	if path.Clean(v.File) != v.File || path.IsAbs(v.File) || strings.HasPrefix(v.File, "../") {
		return fmt.Errorf("file %q must be a clean slash path from the repository root", v.File)
	}
	return nil
}

// ID names the check for a person: "E14 mutant no_retry".
func (v Check) ID() string { return fmt.Sprintf("%s %s %s", v.Exercise, v.Kind, v.Name) }

// Apply returns the edited file: File as it is now under root, with each
// edit applied. An edit whose text is not found exactly once is stale
// (ErrStale), and the error names the check and where to mend it.
func (v Check) Apply(root string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(v.File)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v.ID(), err)
	}
	out := string(data)
	for i, e := range v.Edits {
		switch n := strings.Count(out, e.Old); n {
		case 1:
			out = strings.Replace(out, e.Old, e.New, 1)
		case 0:
			return nil, fmt.Errorf("%w: %s (%s): edit %d: its replace lines are no longer in %s; mend the edit to match the file:\n%s",
				ErrStale, v.ID(), v.Def, i+1, v.File, e.Old)
		default:
			return nil, fmt.Errorf("%w: %s (%s): edit %d: its replace lines occur %d times in %s; give more context:\n%s",
				ErrStale, v.ID(), v.Def, i+1, n, v.File, e.Old)
		}
	}
	return []byte(out), nil
}

// BaseChanged reports whether File has changed since the edit was written
// (its SHA-256 is no longer Base). The edit may still apply; a person
// should read it against the new file once and update base:.
func (v Check) BaseChanged(root string) (bool, error) {
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(v.File)))
	if err != nil {
		return false, err
	}
	return Hash(data) != v.Base, nil
}

// Hash is the hex SHA-256 recorded as base:.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Overlay is a `go build -overlay` file's content: real paths to the files
// that stand in for them.
type Overlay struct {
	Replace map[string]string
}

// WriteOverlay writes the edited files of vs under dir and an overlay
// file that swaps them in, and returns the overlay file's path. It writes
// a file only when its content changed, so go build sees the same inputs
// when nothing changed.
func WriteOverlay(root, dir string, vs ...Check) (string, error) {
	ov := Overlay{Replace: map[string]string{}}
	for _, v := range vs {
		data, err := v.Apply(root)
		if err != nil {
			return "", err
		}
		target, err := filepath.Abs(filepath.Join(root, filepath.FromSlash(v.File)))
		if err != nil {
			return "", err
		}
		if _, dup := ov.Replace[target]; dup {
			return "", fmt.Errorf("%s: two edits of %s in one overlay", v.ID(), v.File)
		}
		file := filepath.Join(dir, v.Name+"."+path.Base(v.File))
		if err := WriteIfChanged(file, data); err != nil {
			return "", err
		}
		ov.Replace[target] = file
	}
	return writeOverlayFile(dir, ov)
}

// WriteIfChanged writes data to name unless it already holds exactly data.
func WriteIfChanged(name string, data []byte) error {
	if old, err := os.ReadFile(name); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	return os.WriteFile(name, data, 0o644)
}

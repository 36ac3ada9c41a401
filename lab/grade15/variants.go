package grade15

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// VariantsDir holds the broken variants of the reference answer, one folder
// per variant (slash path from the repository root; see its README.md).
const VariantsDir = "testscripts/mutants/E15"

// ReferenceAnswer is the answer the variants break (slash path from the root).
const ReferenceAnswer = "lessons/16/answer_previous"

// A Variant is one deliberately broken variant of the reference answer: one
// file of it replaced by a copy with one bug, which the grader must reject
// for the property named by Expect. It is described by
// VariantsDir/<name>/mutant.txt.
type Variant struct {
	Name     string
	Replaces string // slash path of the replaced file, inside the answer directory
	With     string // the broken copy, absolute
	Expect   string // the required property its bug breaks
	Story    string // the bug in one sentence
	Base     string // SHA-256 (hex) of the reference file it was made from
}

// VariantNames lists the broken variants in root, sorted.
func VariantNames(root string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(VariantsDir), "*", "mutant.txt"))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, filepath.Base(filepath.Dir(f)))
	}
	slices.Sort(names)
	return names, nil
}

// Variants loads every broken variant in root, sorted by name.
func Variants(root string) ([]Variant, error) {
	names, err := VariantNames(root)
	if err != nil {
		return nil, err
	}
	out := make([]Variant, 0, len(names))
	for _, name := range names {
		v, err := LoadVariant(root, name)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// ErrNoVariant is returned by LoadVariant for a name with no folder.
var ErrNoVariant = errors.New("no such broken variant")

// LoadVariant reads VariantsDir/name/mutant.txt and checks that it is
// complete and that its broken copy exists.
func LoadVariant(root, name string) (Variant, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return Variant{}, fmt.Errorf("%w: %q", ErrNoVariant, name)
	}
	dir := filepath.Join(root, filepath.FromSlash(VariantsDir), name)
	path := filepath.Join(dir, "mutant.txt")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Variant{}, fmt.Errorf("%w: %q", ErrNoVariant, name)
	}
	if err != nil {
		return Variant{}, err
	}
	defer f.Close()
	v := Variant{Name: name}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), ": ")
		switch key {
		case "replaces":
			v.Replaces = value
		case "with":
			v.With = filepath.Join(dir, filepath.FromSlash(value))
		case "expect":
			v.Expect = value
		case "story":
			v.Story = value
		case "base":
			v.Base = value
		}
	}
	if err := sc.Err(); err != nil {
		return Variant{}, fmt.Errorf("%s: %w", path, err)
	}
	if v.Replaces == "" || v.With == "" || v.Expect == "" || v.Base == "" {
		return Variant{}, fmt.Errorf("%s: want replaces, with, expect and base lines", path)
	}
	if _, err := os.Stat(v.With); err != nil {
		return Variant{}, fmt.Errorf("%s: its broken copy: %w", path, err)
	}
	return v, nil
}

// ErrVariantDoesNotFit is returned by Fits when the answer's file is not the
// one the variant was made from.
var ErrVariantDoesNotFit = errors.New("the variant was not made from this file")

// Fits checks that the file v replaces in the answer directory dir is the
// very file v was made from (its base hash): otherwise the variant is stale
// (dir is the reference and changed since) or made for another answer, and
// grading it would prove nothing.
func (v Variant) Fits(dir string) error {
	target := filepath.Join(dir, filepath.FromSlash(v.Replaces))
	cur, err := os.ReadFile(target)
	if err != nil {
		return fmt.Errorf("variant %s replaces %s: %w", v.Name, v.Replaces, err)
	}
	if sum := sha256.Sum256(cur); hex.EncodeToString(sum[:]) != v.Base {
		return fmt.Errorf("%w: variant %s replaces %s, made from a version with SHA-256 %.12s…, but %s is not that version",
			ErrVariantDoesNotFit, v.Name, v.Replaces, v.Base, target)
	}
	return nil
}

// WriteOverlay writes to path a `go build -overlay` file (also honoured by
// Grade for budget_plan.json and budget_report.md) that swaps v's broken
// copy into the answer directory dir. Nothing in dir is touched.
func (v Variant) WriteOverlay(dir, path string) error {
	target, err := filepath.Abs(filepath.Join(dir, filepath.FromSlash(v.Replaces)))
	if err != nil {
		return err
	}
	with, err := filepath.Abs(v.With)
	if err != nil {
		return err
	}
	data, err := json.Marshal(map[string]map[string]string{"Replace": {target: with}})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// IsRequiredProperty reports whether name is a required property of the
// grader: what a variant's Expect must name.
func IsRequiredProperty(name string) bool {
	return slices.ContainsFunc(specs, func(s spec) bool { return s.name == name && s.required })
}

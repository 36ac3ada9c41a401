package course

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"quoteflowlab.dev/kit/report"
)

// ManifestFile is the file by which a folder lessons/NN declares a lesson
// with an exercise:
//
//	title = "Retry once — whose budget pays?"
//	task = "flaky recovers in exactly 2 attempts with one ID; invalid data is not retried"
//	method = "mutants"   # or "measured": graded by its own lessons/NN/grader
//	redis = true         # optional: a redis-server for every run of the answer
const ManifestFile = "lesson.toml"

// Load reads the course under root: one lesson for every folder lessons/NN
// that holds a lesson.toml, in the order of their numbers. A lesson.toml
// that cannot be read, has a key missing, empty or unknown, or a method lab
// does not know is an error naming the file, and so is method "measured"
// without a grader program (lessons/NN/grader) or one with another method;
// so is an exercise folder (lessons/NN/exercise) in a lesson with no
// lesson.toml.
func Load(root string) ([]Lesson, error) {
	entries, err := os.ReadDir(filepath.Join(root, "lessons"))
	if err != nil {
		return nil, fmt.Errorf("the course's lessons: %w", err)
	}
	var ls []Lesson
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if !e.IsDir() || err != nil || n < 0 {
			continue
		}
		dir := "lessons/" + e.Name()
		file := dir + "/" + ManifestFile
		l, err := readManifest(filepath.Join(root, filepath.FromSlash(file)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir), "exercise")); err == nil {
				return nil, fmt.Errorf("%s/exercise exists but %s does not: a lesson with an exercise declares itself there", dir, file)
			}
			continue
		case err != nil:
			return nil, fmt.Errorf("%s: %w", file, err)
		case strconv.Itoa(n) != e.Name():
			return nil, fmt.Errorf("%s: the folder's name must be the lesson's number as is, lessons/%d", file, n)
		}
		// lab check runs a lesson's own grader when it has one: the
		// method must say so.
		_, err = os.Stat(filepath.Join(root, filepath.FromSlash(dir), "grader"))
		switch {
		case err == nil && l.Method != report.Measured:
			return nil, fmt.Errorf("%s: %s/grader is the lesson's own grader: its method is %q, not %q", file, dir, report.Measured, l.Method)
		case err != nil && l.Method == report.Measured:
			return nil, fmt.Errorf("%s: method %q needs the lesson's own grader program, %s/grader", file, l.Method, dir)
		}
		l.Number = n
		ls = append(ls, l)
	}
	slices.SortFunc(ls, func(a, b Lesson) int { return a.Number - b.Number })
	return ls, nil
}

// readManifest decodes one lesson.toml.
func readManifest(file string) (Lesson, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return Lesson{}, err
	}
	var m struct {
		Title  string `toml:"title"`
		Task   string `toml:"task"`
		Method string `toml:"method"`
		Redis  bool   `toml:"redis"`
	}
	md, err := toml.Decode(string(data), &m)
	if err != nil {
		return Lesson{}, err
	}
	if keys := md.Undecoded(); len(keys) > 0 {
		return Lesson{}, fmt.Errorf("unknown key %q (want title, task, method, redis)", keys[0].String())
	}
	for _, k := range []struct{ name, value string }{{"title", m.Title}, {"task", m.Task}, {"method", m.Method}} {
		if strings.TrimSpace(k.value) == "" {
			return Lesson{}, fmt.Errorf("missing or empty %q", k.name)
		}
	}
	method := report.Method(m.Method)
	if method != report.Mutants && method != report.Measured {
		return Lesson{}, fmt.Errorf("method %q: want %q or %q", m.Method, report.Mutants, report.Measured)
	}
	return Lesson{Title: m.Title, Task: m.Task, Method: method, Redis: m.Redis}, nil
}

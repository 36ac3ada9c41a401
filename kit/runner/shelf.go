package runner

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"quoteflowlab.dev/kit/fileid"
)

// A Shelf builds as Build and BuildInto do, but does not start the go
// command for binaries it built before from the same inputs: a `go build`
// that finds everything up to date still costs the go command's start-up,
// loading the module and hashing every source file of every package the
// binary imports (0.3-0.5 s of CPU, where a check's own work is about as
// much), and lab check builds before every check.
//
// The inputs are everything go build could read: the go command (its path,
// size and modification time, its GOROOT's VERSION and go.env), the
// environment's GO*, CGO_* and compiler variables and the go env file, the
// flags and packages, the overlay with the content of every file it names,
// and the content of every file of the module the build runs in (but its
// .git, .lab and Skip folders), nested modules included: a superset of what
// go hashes for the build's action ID, so a change go would see makes a
// different key. A module whose go.mod replaces a module by a folder
// outside it, a symbolic link to a folder in it, -modfile in GOFLAGS, a
// module larger than maxTreeFiles files or maxTreeBytes bytes, or a go
// command without a VERSION file beside it (a wrapper script) is not
// shelved: go decides, every time. What this does not see: an edit to
// GOROOT's sources that leaves the go command and VERSION as they were,
// and a new C compiler for a cgo build, which go would see.
//
// After a build that succeeded, a stamp is written beside each binary: an
// HMAC under Key of the inputs' hash and the binary's content (SHA-256). A
// build is skipped only when every binary's stamp is that of the present
// inputs and of the binary as it is now, byte for byte: a binary replaced
// or patched does not pass, and without Key no process can write a stamp
// that does. Key is a secret the caller keeps from the answers it runs.
// After the build the stamp is written only when nothing changed while go
// built: each of the module's files has the status (fileid: device,
// inode, size, mode, modification and change time) it had when it was
// hashed, so a file saved during the build leaves no stamp even when saved
// back as it was; where a status says nothing (not Linux, a symbolic link)
// everything is hashed again and compared.
//
// For a nil Shelf or an empty Key every build runs the go command.
type Shelf struct {
	Key  []byte   // the stamps' secret; empty: never skip
	Skip []string // absolute folders in the module that builds never read (the lab's state)
}

// Bounds of the module a shelf hashes.
const (
	maxTreeFiles = 5000
	maxTreeBytes = 64 << 20
)

// stampSuffix names a binary's stamp: bin + stampSuffix.
const stampSuffix = ".stamp"

// Build is Build, skipped when bin's stamp says its inputs are unchanged.
func (s *Shelf) Build(ctx context.Context, dir, overlay, bin, pkg string) Result {
	return s.build(dir, overlay, []string{pkg}, []string{bin}, func() Result {
		return Build(ctx, dir, overlay, bin, pkg)
	})
}

// BuildInto is BuildInto, skipped when every binary's stamp says its
// inputs are unchanged.
func (s *Shelf) BuildInto(ctx context.Context, dir, overlay, out string, pkgs ...string) Result {
	bins := make([]string, len(pkgs))
	for i, p := range pkgs {
		bins[i] = filepath.Join(out, Exe(filepath.Base(p)))
	}
	return s.build(dir, overlay, pkgs, bins, func() Result {
		return BuildInto(ctx, dir, overlay, out, pkgs...)
	})
}

func (s *Shelf) build(dir, overlay string, pkgs, bins []string, run func() Result) Result {
	if s == nil || len(s.Key) == 0 {
		return run()
	}
	start := time.Now()
	before, ok := readInputs(dir, overlay, pkgs, s.Skip, true)
	if ok && s.stamped(before.sum, bins) {
		return Result{Elapsed: time.Since(start), UpToDate: true}
	}
	res := run()
	if !ok || !res.OK() {
		return res
	}
	// Did anything change while go built? Where every file's status is
	// known, its status says (no file is read again); else the content.
	if before.status != nil {
		if after, ok := readInputs(dir, overlay, pkgs, s.Skip, false); ok && bytes.Equal(before.status, after.status) {
			s.stamp(before.sum, bins)
		}
	} else if after, ok := readInputs(dir, overlay, pkgs, s.Skip, true); ok && bytes.Equal(before.sum, after.sum) {
		s.stamp(before.sum, bins)
	}
	return res
}

// mac is a binary's stamp: the inputs and the binary's content.
func (s *Shelf) mac(inputs []byte, bin string) ([]byte, bool) {
	f, err := os.Open(bin)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, false
	}
	content := sha256.New()
	if _, err := io.Copy(content, f); err != nil {
		return nil, false
	}
	m := hmac.New(sha256.New, s.Key)
	fmt.Fprintf(m, "lab build stamp 1\x00%x\x00%s\x00%x", inputs, filepath.Base(bin), content.Sum(nil))
	return m.Sum(nil), true
}

func (s *Shelf) stamped(inputs []byte, bins []string) bool {
	for _, bin := range bins {
		want, ok := s.mac(inputs, bin)
		if !ok {
			return false
		}
		got, err := os.ReadFile(bin + stampSuffix)
		if err != nil {
			return false
		}
		raw, err := hex.DecodeString(strings.TrimSpace(string(got)))
		if err != nil || !hmac.Equal(raw, want) {
			return false
		}
	}
	return true
}

func (s *Shelf) stamp(inputs []byte, bins []string) {
	for _, bin := range bins {
		m, ok := s.mac(inputs, bin)
		if !ok {
			os.Remove(bin + stampSuffix)
			continue
		}
		_ = os.WriteFile(bin+stampSuffix, []byte(hex.EncodeToString(m)+"\n"), 0o600)
	}
}

// buildFlags are every build's flags (see Build).
var buildFlags = []string{"-trimpath", "-gcflags=-l", "-ldflags=-s -w"}

// buildEnv is what every build adds to the lab's environment.
var buildEnv = []string{"GOWORK=off"}

// inputs are what a build could read, hashed.
type inputs struct {
	sum []byte // the content of every file
	// status is the same with the status of each of the module's files
	// (fileid) for its content: the status changes whenever the content
	// does. nil where a file's status says nothing (not Linux, a link).
	status []byte
}

// readInputs hashes what a build of pkgs in dir (with overlay) could read;
// ok is false when it cannot be sure it saw all of it. Without contents,
// the module's files are not read, and only status is set (ok is false
// when it cannot be).
func readInputs(dir, overlay string, pkgs, skip []string, contents bool) (in inputs, ok bool) {
	h, st := sha256.New(), sha256.New()
	both := io.MultiWriter(h, st)
	fmt.Fprintf(both, "lab build inputs 1\nflags %q\npkgs %q\n", buildFlags, pkgs)
	if !hashGo(both) {
		return in, false
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return in, false
	}
	mod := moduleRoot(dir)
	if mod == "" {
		return in, false
	}
	rel, err := filepath.Rel(mod, dir)
	if err != nil {
		return in, false
	}
	fmt.Fprintf(both, "dir %s\n", filepath.ToSlash(rel))
	if overlay != "" && !hashOverlay(both, mod, overlay) {
		return in, false
	}
	ok, known := hashModule(h, st, mod, skip, contents)
	if !ok || !contents && !known {
		return in, false
	}
	if contents {
		in.sum = h.Sum(nil)
	}
	if known {
		in.status = st.Sum(nil)
	}
	return in, true
}

// buildInputs is the hash of everything a build could read.
func buildInputs(dir, overlay string, pkgs, skip []string) ([]byte, bool) {
	in, ok := readInputs(dir, overlay, pkgs, skip, true)
	return in.sum, ok
}

// hashGo hashes the go command, its GOROOT's VERSION and go.env, the
// environment go reads, and the go env file.
func hashGo(h io.Writer) bool {
	goCmd, err := exec.LookPath(GoCommand())
	if err != nil {
		return false
	}
	if goCmd, err = filepath.EvalSymlinks(goCmd); err != nil {
		return false
	}
	info, err := os.Stat(goCmd)
	if err != nil {
		return false
	}
	fmt.Fprintf(h, "go %s %d %d\n", goCmd, info.Size(), info.ModTime().UnixNano())
	env := append(os.Environ(), buildEnv...)
	var vars []string
	goroot := filepath.Dir(filepath.Dir(goCmd))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if readByGo(name) {
			vars = append(vars, kv)
		}
		switch name {
		case "GOROOT":
			if value != "" {
				goroot = value
			}
		case "GOFLAGS":
			if strings.Contains(value, "-modfile") {
				return false
			}
		}
	}
	slices.Sort(vars)
	// The last setting of a name wins, as in exec.Cmd's environment.
	fmt.Fprintf(h, "env %q\n", vars)
	version, err := os.ReadFile(filepath.Join(goroot, "VERSION"))
	if err != nil {
		return false // not a Go distribution's go command: a wrapper
	}
	fmt.Fprintf(h, "VERSION %q\n", version)
	goEnv, _ := os.ReadFile(filepath.Join(goroot, "go.env"))
	fmt.Fprintf(h, "go.env %q\n", goEnv)
	userEnv := os.Getenv("GOENV")
	if userEnv == "" {
		if cfg, err := os.UserConfigDir(); err == nil {
			userEnv = filepath.Join(cfg, "go", "env")
		}
	}
	if userEnv != "" && userEnv != "off" {
		data, _ := os.ReadFile(userEnv)
		fmt.Fprintf(h, "goenv %q\n", data)
	}
	return true
}

// readByGo says whether go build reads the environment variable name (and
// it may change what is built); names that only say where go keeps files
// or how it reports are left out, so that runs with their own temporary
// folders share stamps.
func readByGo(name string) bool {
	switch name {
	case "GOTMPDIR", "GOCOVERDIR", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV":
		return false
	case "CC", "CXX", "FC", "AR", "PKG_CONFIG", "GCCGO":
		return true
	}
	return strings.HasPrefix(name, "GO") || strings.HasPrefix(name, "CGO_")
}

// moduleRoot is the folder of the go.mod that governs dir, "" if none.
func moduleRoot(dir string) string {
	for d := dir; ; {
		if fi, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && fi.Mode().IsRegular() {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// hashOverlay hashes an overlay's replacements: each path (from the module
// when inside it) with the content that replaces it.
func hashOverlay(h io.Writer, mod, overlay string) bool {
	data, err := os.ReadFile(overlay)
	if err != nil {
		return false
	}
	var o struct{ Replace map[string]string }
	if err := json.Unmarshal(data, &o); err != nil {
		return false
	}
	from := make([]string, 0, len(o.Replace))
	for k := range o.Replace {
		from = append(from, k)
	}
	slices.Sort(from)
	for _, k := range from {
		name := k
		if r, err := filepath.Rel(mod, k); err == nil && filepath.IsLocal(r) {
			name = filepath.ToSlash(r)
		}
		to := o.Replace[k]
		if to == "" {
			fmt.Fprintf(h, "overlay %q deleted\n", name)
			continue
		}
		content, err := os.ReadFile(to)
		if err != nil {
			return false
		}
		fmt.Fprintf(h, "overlay %q %d\n", name, len(content))
		h.Write(content)
	}
	return true
}

// hashModule hashes every file of the module at mod: its path and, with
// contents, its content into h; its path and status into st. known says
// every file's status was known.
func hashModule(h, st io.Writer, mod string, skip []string, contents bool) (ok, known bool) {
	if !replacesInside(mod) {
		return false, false
	}
	files, size := 0, int64(0)
	ok, known = true, true
	err := filepath.WalkDir(mod, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		link := false
		switch {
		case d.IsDir():
			if path != mod && (d.Name() == ".git" || d.Name() == ".lab" || slices.Contains(skip, path)) {
				return filepath.SkipDir
			}
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			if fi, err := os.Stat(path); err != nil || fi.IsDir() {
				ok = false // a link to a folder: go may read what this walk does not
				return filepath.SkipAll
			}
			link = true // its status is the link's, not its target's
		case !d.Type().IsRegular():
			return nil
		}
		rel, _ := filepath.Rel(mod, path)
		info, err := d.Info() // before the content: a write after it changes the status
		if err != nil {
			return err
		}
		id := fileid.Of(info).String()
		if id == "" || link {
			known = false
		}
		fmt.Fprintf(st, "file %q %s\n", filepath.ToSlash(rel), id)
		files++
		if files > maxTreeFiles {
			ok = false
			return filepath.SkipAll
		}
		if !contents {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "file %q\n", filepath.ToSlash(rel))
		n, err := io.Copy(h, io.LimitReader(f, maxTreeBytes-size+1))
		if err != nil {
			return err
		}
		size += n
		if size > maxTreeBytes {
			ok = false
			return filepath.SkipAll
		}
		fmt.Fprintf(h, "\n%d\n", n)
		return nil
	})
	return ok && err == nil, known
}

// replacesInside says whether every replace directive of mod's go.mod that
// names a folder names one inside mod (which hashModule reads).
func replacesInside(mod string) bool {
	data, err := os.ReadFile(filepath.Join(mod, "go.mod"))
	if err != nil {
		return false
	}
	for line := range strings.Lines(string(data)) {
		line, _, _ = strings.Cut(line, "//")
		_, target, found := strings.Cut(line, "=>")
		if !found {
			continue
		}
		fields := strings.Fields(target)
		if len(fields) == 0 {
			return false
		}
		t := strings.Trim(fields[0], `"`+"`")
		if !strings.HasPrefix(t, "./") && !strings.HasPrefix(t, "../") && !filepath.IsAbs(t) && t != "." && t != ".." {
			continue // a module path and version
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(mod, t)
		}
		if r, err := filepath.Rel(mod, t); err != nil || !filepath.IsLocal(r) {
			return false
		}
	}
	return true
}

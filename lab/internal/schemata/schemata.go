// Package schemata compiles many edits of one package into one build
// ("mutant schemata"): each function an edit changes is kept in every
// version — the original and one per edit, each renamed — and the original
// name becomes a dispatcher (generic ones too) that picks a version by an
// environment variable read once at start. One build serves the correct
// checkpoint and every mutant and wheat: a re-check after an edit of the
// answer costs one link. An edit outside a function body, to a signature
// or to init cannot be switched at run time: Generate returns it, with the
// reason, for a build of its own.
//
// The variable's name, each version's value and the versions' names derive
// from a secret key, so an answer cannot tell from its environment or its
// binary which build it runs on: the correct checkpoint's value has the
// same shape, and a build of its own gets one no dispatcher knows (Decoy).
// The caller keeps the key away from the answer and removes the generated
// files once the build is done.
package schemata

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/lab/internal/mutagen"
)

// Schema is one build that holds the original code and every edit in it.
type Schema struct {
	Overlay string            // the `go build -overlay` file
	Files   map[string]string // what it replaces: real paths → generated files
	Env     string            // the environment variable that selects a version
	Tokens  map[string]string // variant name → the value that selects it
	Members []string          // the variants compiled in, in the order given
	key     []byte
}

// Reference returns the KEY=VALUE setting that selects the unedited code.
func (s *Schema) Reference() string { return s.Env + "=" + s.token("\x00reference") }

// Decoy returns a KEY=VALUE setting of the same shape that selects nothing,
// for a run of a build of its own: its environment looks like every other.
func (s *Schema) Decoy(name string) string { return s.Env + "=" + s.token("\x00decoy\x00"+name) }

// suffix is the neutral name of variant name's version of a function.
func (s *Schema) suffix(name string) string { return "v" + s.token("\x00func\x00" + name)[:10] }

// Select returns the KEY=VALUE setting that selects variant name.
func (s *Schema) Select(name string) string { return s.Env + "=" + s.Tokens[name] }

func (s *Schema) token(name string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(name))
	return hex.EncodeToString(m.Sum(nil))[:20]
}

// A Separate is an edit that cannot be compiled into the schema, and why.
type Separate struct {
	Variant check.Check
	Reason  string
}

// Generate writes under dir the files of one build that holds the
// original code of every file vs edit and each edit that qualifies, and
// returns it with the edits that need a build of their own. key keeps the
// selector secret; it must be the same from build to build for the build
// cache to help. Every vs must edit a Go file; an edit that does not apply
// (stale) is an error.
func Generate(root, dir string, vs []check.Check, key []byte) (*Schema, []Separate, error) {
	s := &Schema{Tokens: map[string]string{}, key: key}
	s.Env = "QUOTEFLOW_LAB_" + strings.ToUpper(s.token("\x00env")[:10])
	byFile := map[string][]check.Check{}
	var files []string
	var separate []Separate
	for _, v := range vs {
		if path.Ext(v.File) != ".go" || strings.HasSuffix(v.File, "_test.go") {
			separate = append(separate, Separate{v, "it edits a file that is not Go source"})
			continue
		}
		if _, seen := byFile[v.File]; !seen {
			files = append(files, v.File)
		}
		byFile[v.File] = append(byFile[v.File], v)
	}
	ov := check.Overlay{Replace: map[string]string{}}
	pkgDirs := map[string]string{} // package dir → package name
	for _, file := range files {
		gen, in, out, pkg, err := generateFile(root, file, byFile[file], s)
		if err != nil {
			return nil, nil, err
		}
		separate = append(separate, out...)
		if len(in) == 0 {
			continue
		}
		target, err := filepath.Abs(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, nil, err
		}
		name := filepath.Join(dir, strings.ReplaceAll(file, "/", "_"))
		if err := check.WriteIfChanged(name, gen); err != nil {
			return nil, nil, err
		}
		ov.Replace[target] = name
		pkgDirs[filepath.Dir(target)] = pkg
		s.Members = append(s.Members, in...)
	}
	// The values lab check gives its runs: the reference's, each member's,
	// and the decoy of every variant (a build of its own). Any other value,
	// or none, stops the program at start: otherwise an answer that runs
	// its own binary again without the variable (or with a made-up value)
	// gets the correct code, an oracle to compare each mutant with.
	quoted := []string{strconv.Quote(s.token("\x00reference"))}
	for _, m := range s.Members {
		s.Tokens[m] = s.token(m)
		quoted = append(quoted, strconv.Quote(s.Tokens[m]))
	}
	for _, v := range vs {
		quoted = append(quoted, strconv.Quote(s.token("\x00decoy\x00"+v.Name)))
	}
	slices.Sort(quoted) // the tokens' order: they are keyed
	for pdir, pkg := range pkgDirs {
		src := fmt.Sprintf(`// Code generated by lab check (mutant schemata). DO NOT EDIT.

package %s

import (
	"fmt"
	"os"
)

// labSchemaVersion selects which version of each edited function runs.
var labSchemaVersion = labSchemaSelected(os.Getenv(%q))

// labSchemaSelected stops a run that lab check did not start: this build
// serves lab check's runs only.
func labSchemaSelected(v string) string {
	switch v {
	case %s:
		return v
	}
	fmt.Fprintln(os.Stderr, "this program was built by lab check for its own runs and runs only there (it was started again without lab check's setting, or with one lab check never gave); an answer runs its checks in its own process, or starts itself again with the environment it was given")
	os.Exit(3)
	return ""
}
`, pkg, s.Env, strings.Join(quoted, ", "))
		sum := sha256.Sum256([]byte(pdir))
		name := filepath.Join(dir, "selector_"+pkg+"_"+hex.EncodeToString(sum[:4])+".go")
		if err := check.WriteIfChanged(name, []byte(src)); err != nil {
			return nil, nil, err
		}
		ov.Replace[filepath.Join(pdir, "zz_lab_schemata.go")] = name
	}
	slices.SortStableFunc(s.Members, func(a, b string) int { return indexOf(vs, a) - indexOf(vs, b) })
	ovFile, err := check.WriteOverlayFile(dir, ov)
	if err != nil {
		return nil, nil, err
	}
	s.Overlay, s.Files = ovFile, ov.Replace
	return s, separate, nil
}

func indexOf(vs []check.Check, name string) int {
	return slices.IndexFunc(vs, func(v check.Check) bool { return v.Name == name })
}

// parsed is one version of a file.
type parsed struct {
	src   []byte
	fset  *token.FileSet
	file  *ast.File
	funcs map[string]*ast.FuncDecl // by mutagen.FuncKey
	other []string                 // printed non-import declarations, in order
}

func parse(name string, src []byte) (*parsed, error) {
	p := &parsed{src: src, fset: token.NewFileSet(), funcs: map[string]*ast.FuncDecl{}}
	f, err := parser.ParseFile(p.fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	p.file = f
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			p.funcs[mutagen.FuncKey(d)] = d
		case *ast.GenDecl:
			if d.Tok != token.IMPORT {
				p.other = append(p.other, p.print(d))
			}
		}
	}
	return p, nil
}

// print renders a node without its comments.
func (p *parsed) print(n any) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, p.fset, n)
	return b.String()
}

func (p *parsed) offset(pos token.Pos) int { return p.fset.Position(pos).Offset }

// changed compares an edited version with the original and returns the
// functions whose bodies differ and the imports the edit adds, or why the
// edit cannot be switched at run time.
func changed(orig, ed *parsed) (funcs []string, imports []*ast.ImportSpec, why string) {
	if !slices.Equal(orig.other, ed.other) {
		return nil, nil, "it changes a declaration outside a function body"
	}
	if len(orig.funcs) != len(ed.funcs) {
		return nil, nil, "it adds or removes a function"
	}
	for key, of := range orig.funcs {
		ef, ok := ed.funcs[key]
		if !ok {
			return nil, nil, "it adds or removes a function"
		}
		if orig.print(of) == ed.print(ef) {
			continue
		}
		switch {
		case orig.print(of.Type) != ed.print(ef.Type) || orig.print(of.Recv) != ed.print(ef.Recv):
			return nil, nil, "it changes the signature of " + key
		case of.Recv == nil && of.Name.Name == "init":
			return nil, nil, "it changes an init function"
		}
		funcs = append(funcs, key)
	}
	slices.Sort(funcs)
	have := map[string]bool{}
	for _, is := range orig.file.Imports {
		have[orig.print(is)] = true
	}
	for _, is := range ed.file.Imports {
		if !have[ed.print(is)] {
			imports = append(imports, is)
		}
	}
	if len(funcs) == 0 {
		return nil, nil, "it changes no function body (only comments or imports?)"
	}
	return funcs, imports, ""
}

// generateFile writes the schema version of one file: the original with
// each changed function renamed to NAME__lab_orig, every edited version
// appended as NAME__lab_v<keyed hash of the variant>, and a dispatcher under the original
// name. It returns the variants compiled in and those left out.
func generateFile(root, file string, vs []check.Check, s *Schema) (gen []byte, in []string, out []Separate, pkg string, err error) {
	origSrc, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return nil, nil, nil, "", err
	}
	orig, err := parse(file, origSrc)
	if err != nil {
		return nil, nil, nil, "", fmt.Errorf("%s: %w", file, err)
	}
	type member struct {
		v       check.Check
		ed      *parsed
		funcs   []string
		imports []*ast.ImportSpec
	}
	var members []member
	for _, v := range vs {
		edSrc, err := v.Apply(root)
		if err != nil {
			return nil, nil, nil, "", err
		}
		ed, err := parse(file, edSrc)
		if err != nil {
			out = append(out, Separate{v, "the edited file does not parse: " + err.Error()})
			continue
		}
		funcs, imports, why := changed(orig, ed)
		if why != "" {
			out = append(out, Separate{v, why})
			continue
		}
		members = append(members, member{v, ed, funcs, imports})
	}
	if len(members) == 0 {
		return nil, nil, out, "", nil
	}

	dispatched := map[string][]member{} // func key → the members that change it
	var keys []string
	for _, m := range members {
		in = append(in, m.v.Name)
		for _, k := range m.funcs {
			if _, seen := dispatched[k]; !seen {
				keys = append(keys, k)
			}
			dispatched[k] = append(dispatched[k], m)
		}
	}
	slices.Sort(keys)

	// The original, with the edits' extra imports after its own and each
	// dispatched function renamed in place: insertions, by offset.
	type insertion struct {
		at   int
		text string
	}
	ins := []insertion{{importsEnd(orig), extraImports(members, func(m member) ([]*ast.ImportSpec, *parsed) { return m.imports, m.ed })}}
	for _, k := range keys {
		fd := orig.funcs[k]
		ins = append(ins, insertion{orig.offset(fd.Name.End()), "__lab_orig"})
	}
	slices.SortStableFunc(ins, func(a, b insertion) int { return a.at - b.at })
	var b bytes.Buffer
	last := 0
	for _, in := range ins {
		b.Write(origSrc[last:in.at])
		b.WriteString(in.text)
		last = in.at
	}
	b.Write(origSrc[last:])

	b.WriteString("\n// Everything below is generated by lab check (mutant schemata).\n")
	for _, m := range members {
		for _, k := range m.funcs {
			fd := m.ed.funcs[k]
			start, nameAt, end := m.ed.offset(fd.Pos()), m.ed.offset(fd.Name.Pos()), m.ed.offset(fd.End())
			fmt.Fprintf(&b, "\n%s%s__lab_%s%s\n", m.ed.src[start:nameAt], fd.Name.Name, s.suffix(m.v.Name), m.ed.src[nameAt+len(fd.Name.Name):end])
		}
	}
	for _, k := range keys {
		cases := map[string]string{s.token("\x00reference"): "orig"} // token → the version it calls
		for _, m := range dispatched[k] {
			cases[s.token(m.v.Name)] = s.suffix(m.v.Name)
		}
		b.WriteString(dispatcher(orig, orig.funcs[k], cases))
	}
	return b.Bytes(), in, out, orig.file.Name.Name, nil
}

// extraImports renders, as one import declaration, the imports the
// members' edits add, or "" when they add none.
func extraImports[M any](ms []M, imps func(M) ([]*ast.ImportSpec, *parsed)) string {
	seen := map[string]bool{}
	var specs []string
	for _, m := range ms {
		list, p := imps(m)
		for _, is := range list {
			if line := p.print(is); !seen[line] {
				seen[line] = true
				specs = append(specs, line)
			}
		}
	}
	if len(specs) == 0 {
		return ""
	}
	slices.Sort(specs)
	return "\n\nimport (\n\t" + strings.Join(specs, "\n\t") + "\n)\n"
}

// importsEnd is the offset just after the file's last import declaration,
// or after its package clause.
func importsEnd(p *parsed) int {
	end := p.offset(p.file.Name.End())
	for _, d := range p.file.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.IMPORT {
			end = p.offset(g.End())
		}
	}
	return end
}

// dispatcher renders the function that keeps fd's name and calls the
// version its variable selects.
func dispatcher(p *parsed, fd *ast.FuncDecl, cases map[string]string) string {
	var b strings.Builder
	recvCall := ""
	b.WriteString("\nfunc ")
	if fd.Recv != nil && len(fd.Recv.List) > 0 {
		fmt.Fprintf(&b, "(lab__r %s) ", p.print(fd.Recv.List[0].Type))
		recvCall = "lab__r."
	}
	var params, args []string
	i := 0
	for _, f := range fd.Type.Params.List {
		n := max(len(f.Names), 1)
		for range n {
			name := fmt.Sprintf("lab__p%d", i)
			i++
			params = append(params, name+" "+p.print(f.Type))
			if _, variadic := f.Type.(*ast.Ellipsis); variadic {
				name += "..."
			}
			args = append(args, name)
		}
	}
	var results []string
	if fd.Type.Results != nil {
		for _, f := range fd.Type.Results.List {
			for range max(len(f.Names), 1) {
				results = append(results, p.print(f.Type))
			}
		}
	}
	// A generic function's dispatcher has its type parameters and passes
	// them on explicitly (a method of a generic type gets them from its
	// receiver, printed as is).
	typeArgs := ""
	if tp := fd.Type.TypeParams; tp != nil && len(tp.List) > 0 {
		var decl, names []string
		for _, f := range tp.List {
			var fn []string
			for _, n := range f.Names {
				fn = append(fn, n.Name)
			}
			decl = append(decl, strings.Join(fn, ", ")+" "+p.print(f.Type))
			names = append(names, fn...)
		}
		fmt.Fprintf(&b, "%s[%s](%s)", fd.Name.Name, strings.Join(decl, ", "), strings.Join(params, ", "))
		typeArgs = "[" + strings.Join(names, ", ") + "]"
	} else {
		fmt.Fprintf(&b, "%s(%s)", fd.Name.Name, strings.Join(params, ", "))
	}
	switch len(results) {
	case 0:
	case 1:
		b.WriteString(" " + results[0])
	default:
		b.WriteString(" (" + strings.Join(results, ", ") + ")")
	}
	b.WriteString(" {\n\tswitch labSchemaVersion {\n")
	tokens := slices.Sorted(maps.Keys(cases)) // random order: the tokens are keyed
	call := func(suffix string) string {
		return fmt.Sprintf("%s%s__lab_%s%s(%s)", recvCall, fd.Name.Name, suffix, typeArgs, strings.Join(args, ", "))
	}
	for _, t := range tokens {
		fmt.Fprintf(&b, "\tcase %q:\n", t)
		if len(results) == 0 {
			fmt.Fprintf(&b, "\t\t%s\n\t\treturn\n", call(cases[t]))
		} else {
			fmt.Fprintf(&b, "\t\treturn %s\n", call(cases[t]))
		}
	}
	b.WriteString("\t}\n")
	if len(results) == 0 {
		fmt.Fprintf(&b, "\t%s\n}\n", call("orig"))
	} else {
		fmt.Fprintf(&b, "\treturn %s\n}\n", call("orig"))
	}
	return b.String()
}

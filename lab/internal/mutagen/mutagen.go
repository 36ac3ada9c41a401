// Package mutagen generates the first-order mutants of Go functions: every
// small edit a loose test could let through, made mechanically instead of by
// hand. It knows no lesson: it is given a file and the functions in scope,
// and returns each mutant as a check.Check of kind mutant whose edit is
// whole lines inside one function body, so that every mutant compiles into
// one mutant schema (package schemata) beside the hand-written ones. The
// operators are the Op* constants below.
//
// Names are deterministic: gen_<function>_<operator>_<k>, k counting the
// operator's sites in that function in source order, so an edit elsewhere
// leaves a mutant's name alone. Generation is syntax only and cheap;
// Compiles type-checks candidates and drops those that do not compile.
package mutagen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/report"
)

// Version changes whenever the generator makes other mutants or names
// them otherwise: a kill-set run recorded under another version is stale.
const Version = "1"

// Operators.
const (
	OpBoundary      = "boundary"       // < ↔ <=, > ↔ >=
	OpEqFlip        = "eq_flip"        // == ↔ !=
	OpNegate        = "negate"         // if/for condition c → !(c)
	OpDropLeft      = "drop_left"      // a && b → b (a || b → b)
	OpDropRight     = "drop_right"     // a && b → a
	OpCaseRemoved   = "case_removed"   // one case clause of a switch removed
	OpCaseValue     = "case_value"     // one value of a case list removed
	OpElement       = "element"        // one element of a literal set/map of constants removed
	OpField         = "field"          // one constant field of a struct literal removed (a code, a flag)
	OpConstInc      = "const_inc"      // n → n+1
	OpConstDec      = "const_dec"      // n → n-1
	OpConstDouble   = "const_double"   // n → 2n
	OpConstHalf     = "const_half"     // n → n/2
	OpConstZero     = "const_zero"     // n → 0
	OpCallRemoved   = "call_removed"   // a call statement (or deferred call) removed
	OpAssignRemoved = "assign_removed" // an assignment (=, op=, ++, --) removed
	OpSwapBranches  = "swap_branches"  // if c { A } else { B } → if c { B } else { A }
	OpEarlyReturn   = "early_return"   // return at the top of a function with no results
)

// A Mutant is one generated edit.
type Mutant struct {
	check.Check
	Func   string // the function it edits: "Service.withRetry"
	Op     string // its operator
	Line   int    // the first line it changes (1-based)
	Before string // the changed line(s) as they are, trimmed, joined with " ⏎ "
	After  string // and as the mutant has them ("" when removed)
}

// Where is "quoteflow/retry.go:45 (Service.withRetry)", relative to dir
// when File is under it.
func (m Mutant) Where(dir string) string {
	f := strings.TrimPrefix(m.File, strings.TrimSuffix(dir, "/")+"/")
	return fmt.Sprintf("%s:%d (%s)", f, m.Line, m.Func)
}

// Edit is the change in one line for a person: `before` → `after`.
func (m Mutant) Edit() string {
	if m.After == "" {
		return "`" + m.Before + "` removed"
	}
	return "`" + m.Before + "` → `" + m.After + "`"
}

// Generate returns the mutants of the functions funcs (keys as "Name" or
// "Recv.Name"; "*" for every function of the file) of src, the file at
// slash path file (from the repository root). Their names are not yet
// unique across files: FromScope prefixes the package where two collide.
func Generate(file string, src []byte, funcs []string) ([]Mutant, error) {
	gs, err := gens(file, src, funcs, "scope")
	if err != nil {
		return nil, err
	}
	var out []Mutant
	seen := map[string]bool{} // edited file content → already made
	for _, g := range gs {
		g.walk()
		for _, m := range g.out {
			edited, err := m.Apply(string(src))
			if err != nil || seen[edited] || edited == string(src) {
				continue
			}
			seen[edited] = true
			out = append(out, m.Mutant)
		}
	}
	return out, nil
}

// gens are the generators of the functions of src (the file at slash path
// file) that funcs names ("*": every one); a name with no function is an
// error, which says that from names it.
func gens(file string, src []byte, funcs []string, from string) ([]*gen, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	pkgs := imported(f)
	found := map[string]bool{}
	var gs []*gen
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		key := FuncKey(fd)
		if !slices.Contains(funcs, "*") && !slices.Contains(funcs, key) {
			continue
		}
		found[key] = true
		gs = append(gs, &gen{fset: fset, src: src, file: file, fd: fd, key: key, count: map[string]int{}, skip: map[token.Pos]bool{}, pkgs: pkgs})
	}
	for _, k := range funcs {
		if k != "*" && !found[k] {
			return nil, fmt.Errorf("%s: no function %s (%s names functions as Name or Recv.Name)", file, k, from)
		}
	}
	return gs, nil
}

// FuncKey names a function or method in its package: "Name" or "Recv.Name".
func FuncKey(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch g := t.(type) { // a generic type's: T[P] or T[P, Q]
	case *ast.IndexExpr:
		t = g.X
	case *ast.IndexListExpr:
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + d.Name.Name
	}
	return "_." + d.Name.Name
}

// snake turns "Service.withRetry" into "service_with_retry".
func snake(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case r == '.' || r == '_':
			b.WriteByte('_')
			prevLower = false
		case unicode.IsUpper(r):
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			prevLower = true
		}
	}
	return strings.Trim(b.String(), "_")
}

// gen makes the mutants of one function.
type gen struct {
	fset  *token.FileSet
	src   []byte
	file  string
	fd    *ast.FuncDecl
	key   string
	count map[string]int
	skip  map[token.Pos]bool // literals not to mutate (skipArgs)
	post  map[token.Pos]bool // the post statements of for loops
	pkgs  map[string]bool    // the names the file's imports bind
	out   []candidate
}

// candidate is a mutant with its replacements on the whole file, before
// they are turned into a whole-line edit.
type candidate struct {
	Mutant
	reps []rep
}

// rep replaces src[from:to] with text.
type rep struct {
	from, to int
	text     string
}

func (g *gen) off(p token.Pos) int { return g.fset.Position(p).Offset }

func (g *gen) text(n ast.Node) string { return string(g.src[g.off(n.Pos()):g.off(n.End())]) }

// site numbers the next site of op (each operator counts its own).
func (g *gen) site(op string) int {
	g.count[op]++
	return g.count[op]
}

func (g *gen) add(op string, k int, reps ...rep) {
	name := fmt.Sprintf("gen_%s_%s_%d", snake(g.key), op, k)
	g.out = append(g.out, candidate{Mutant: Mutant{Func: g.key, Op: op, Check: check.Check{Name: name, Kind: report.Mutant, File: g.file}}, reps: reps})
	c := &g.out[len(g.out)-1]
	if err := c.finish(g); err != nil {
		g.out = g.out[:len(g.out)-1]
	}
}

func (g *gen) walk() {
	fd := g.fd
	if fd.Type.Results == nil || len(fd.Type.Results.List) == 0 {
		if len(fd.Body.List) > 0 {
			first := fd.Body.List[0]
			at := g.lineStart(g.off(first.Pos()))
			indent := string(g.src[at:g.off(first.Pos())])
			g.add(OpEarlyReturn, g.site(OpEarlyReturn), rep{at, at, indent + "return\n"})
		}
	}
	g.post = map[token.Pos]bool{}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if f, ok := n.(*ast.ForStmt); ok && f.Post != nil {
			g.post[f.Post.Pos()] = true // removing i++ makes a loop that never ends
		}
		return true
	})
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BinaryExpr:
			g.binary(n)
		case *ast.IfStmt:
			g.ifStmt(n)
		case *ast.ForStmt:
			if n.Cond != nil && !isEquality(n.Cond) {
				g.add(OpNegate, g.site(OpNegate), rep{g.off(n.Cond.Pos()), g.off(n.Cond.End()), "!(" + g.text(n.Cond) + ")"})
			}
		case *ast.SwitchStmt:
			g.switchStmt(n)
		case *ast.CompositeLit:
			g.composite(n)
		case *ast.BasicLit:
			g.literal(n)
		case *ast.ExprStmt:
			if call, ok := n.X.(*ast.CallExpr); ok && !quiet(call) {
				g.remove(OpCallRemoved, n)
			}
		case *ast.DeferStmt:
			if !quiet(n.Call) {
				g.remove(OpCallRemoved, n)
			}
		case *ast.AssignStmt:
			if n.Tok != token.DEFINE && !allBlank(n.Lhs) && !g.post[n.Pos()] {
				g.remove(OpAssignRemoved, n)
			}
		case *ast.IncDecStmt:
			if !g.post[n.Pos()] {
				g.remove(OpAssignRemoved, n)
			}
		case *ast.CallExpr:
			g.skipArgs(n)
		}
		return true
	})
}

// skipArgs marks the literals not to mutate: arguments of strconv, fmt,
// strings and bytes (bases, bit sizes, counts of a split), and the sizes of
// a slice or map made; an answer observes none of them.
func (g *gen) skipArgs(call *ast.CallExpr) {
	if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
		if id, ok := sel.X.(*ast.Ident); ok && (id.Name == "strconv" || id.Name == "fmt" || id.Name == "strings" || id.Name == "bytes") {
			for _, a := range call.Args {
				if l, ok := a.(*ast.BasicLit); ok {
					g.skip[l.Pos()] = true
				}
			}
		}
	}
	if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "make" && len(call.Args) > 1 {
		if _, isChan := call.Args[0].(*ast.ChanType); !isChan {
			for _, a := range call.Args[1:] {
				if l, ok := a.(*ast.BasicLit); ok {
					g.skip[l.Pos()] = true
				}
			}
		}
	}
}

// quiet calls only log, print or re-raise a panic: removing one changes
// nothing an answer can observe through an exercise's interfaces (a
// re-raised panic is a program error, which no exercise provokes).
func quiet(call *ast.CallExpr) bool {
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		return fn.Name == "panic" || strings.Contains(strings.ToLower(fn.Name), "panic")
	case *ast.SelectorExpr:
		if id, ok := fn.X.(*ast.Ident); ok {
			switch id.Name {
			case "log", "fmt", "slog":
				return true
			}
		}
		switch fn.Sel.Name {
		case "Printf", "Println", "Print", "Logf", "Log", "Debug", "Info", "Warn", "Error", "DebugContext", "InfoContext", "WarnContext", "ErrorContext":
			return true
		}
	}
	return false
}

// imported is the set of names a file's imports bind.
func imported(f *ast.File) map[string]bool {
	m := map[string]bool{}
	for _, is := range f.Imports {
		p, _ := strconv.Unquote(is.Path.Value)
		name := path.Base(p)
		if strings.HasPrefix(name, "v") && len(name) > 1 && strings.Trim(name[1:], "0123456789") == "" {
			name = path.Base(path.Dir(p)) // example.com/redis/v9
		}
		if is.Name != nil {
			name = is.Name.Name
		}
		m[name] = true
	}
	return m
}

func allBlank(es []ast.Expr) bool {
	for _, e := range es {
		if id, ok := e.(*ast.Ident); !ok || id.Name != "_" {
			return false
		}
	}
	return true
}

func isNil(e ast.Expr) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "nil"
}

// isEquality: an == or != comparison (its negation is eq_flip's mutant).
func isEquality(e ast.Expr) bool {
	b, ok := ast.Unparen(e).(*ast.BinaryExpr)
	return ok && (b.Op == token.EQL || b.Op == token.NEQ)
}

func (g *gen) binary(b *ast.BinaryExpr) {
	opAt := g.off(b.OpPos)
	opEnd := opAt + len(b.Op.String())
	swap := map[token.Token]string{token.LSS: "<=", token.LEQ: "<", token.GTR: ">=", token.GEQ: ">", token.EQL: "!=", token.NEQ: "=="}
	switch b.Op {
	case token.LSS, token.LEQ, token.GTR, token.GEQ:
		g.add(OpBoundary, g.site(OpBoundary), rep{opAt, opEnd, swap[b.Op]})
	case token.EQL, token.NEQ:
		if isNil(b.X) || isNil(b.Y) {
			return // err != nil flipped breaks every run: nothing to learn
		}
		g.add(OpEqFlip, g.site(OpEqFlip), rep{opAt, opEnd, swap[b.Op]})
	case token.LAND, token.LOR:
		k := g.site("drop")
		g.add(OpDropRight, k, rep{g.off(b.X.End()), g.off(b.End()), ""})
		g.add(OpDropLeft, k, rep{g.off(b.Pos()), g.off(b.Y.Pos()), ""})
	}
}

func (g *gen) ifStmt(s *ast.IfStmt) {
	if !isEquality(s.Cond) {
		g.add(OpNegate, g.site(OpNegate), rep{g.off(s.Cond.Pos()), g.off(s.Cond.End()), "!(" + g.text(s.Cond) + ")"})
	}
	if els, ok := s.Else.(*ast.BlockStmt); ok {
		a := string(g.src[g.off(s.Body.Lbrace)+1 : g.off(s.Body.Rbrace)])
		b := string(g.src[g.off(els.Lbrace)+1 : g.off(els.Rbrace)])
		g.add(OpSwapBranches, g.site(OpSwapBranches),
			rep{g.off(s.Body.Lbrace) + 1, g.off(s.Body.Rbrace), b},
			rep{g.off(els.Lbrace) + 1, g.off(els.Rbrace), a})
	}
}

func (g *gen) switchStmt(s *ast.SwitchStmt) {
	clauses := s.Body.List
	for _, c := range clauses {
		cc := c.(*ast.CaseClause)
		if cc.List == nil {
			continue // default
		}
		from, to := g.wholeLines(g.off(cc.Pos()), g.off(cc.End()))
		g.add(OpCaseRemoved, g.site(OpCaseRemoved), rep{from, to, ""})
	}
	for _, c := range clauses {
		cc := c.(*ast.CaseClause)
		if len(cc.List) < 2 {
			continue
		}
		for i := range cc.List {
			g.add(OpCaseValue, g.site(OpCaseValue), g.dropFromList(cc.List, i))
		}
	}
}

// dropFromList removes element i of a comma-separated list, with its comma.
func (g *gen) dropFromList(list []ast.Expr, i int) rep {
	if i < len(list)-1 {
		return rep{g.off(list[i].Pos()), g.off(list[i+1].Pos()), ""}
	}
	return rep{g.off(list[i-1].End()), g.off(list[i].End()), ""}
}

// constant: a literal, a named constant (an exported name of this package
// or any name of an imported one: CodeTimeout, http.StatusOK, io.EOF), or
// a code made from one (HTTPCode(503)). Without types, a lower-case name of
// this package is taken for a variable.
func (g *gen) constant(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.BasicLit:
		return true
	case *ast.Ident:
		return e.Name == "true" || e.Name == "false" || ast.IsExported(e.Name)
	case *ast.SelectorExpr:
		id, ok := e.X.(*ast.Ident)
		return ok && g.pkgs[id.Name] && ast.IsExported(e.Sel.Name)
	case *ast.CallExpr: // a conversion or a code built from a constant: HTTPCode(503)
		return len(e.Args) == 1 && g.constant(e.Args[0])
	}
	return false
}

// composite: a literal set, list or map whose elements (keys) are
// constants (codes, statuses, errors) loses each element on its own
// (OpElement); a keyed struct literal loses each field whose value is a
// constant, a code or a flag of a result (OpField).
func (g *gen) composite(c *ast.CompositeLit) {
	switch c.Type.(type) {
	case *ast.MapType, *ast.ArrayType:
		if len(c.Elts) < 2 {
			return
		}
		for _, e := range c.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				e = kv.Key
			}
			if !g.constant(e) {
				return
			}
		}
		for i := range c.Elts {
			g.add(OpElement, g.site(OpElement), g.dropFromList(c.Elts, i))
		}
	case *ast.Ident, *ast.SelectorExpr, *ast.IndexExpr:
		for i, e := range c.Elts {
			kv, ok := e.(*ast.KeyValueExpr)
			if !ok {
				return // not a keyed struct literal
			}
			if !g.constant(kv.Value) {
				continue
			}
			if len(c.Elts) == 1 {
				g.add(OpField, g.site(OpField), rep{g.off(kv.Pos()), g.off(kv.End()), ""})
				continue
			}
			g.add(OpField, g.site(OpField), g.dropFromList(c.Elts, i))
		}
	}
}

func (g *gen) literal(l *ast.BasicLit) {
	if g.skip[l.Pos()] {
		return
	}
	at, end := g.off(l.Pos()), g.off(l.End())
	switch l.Kind {
	case token.INT:
		v, err := strconv.ParseInt(strings.ReplaceAll(l.Value, "_", ""), 0, 64)
		if err != nil {
			return
		}
		k := g.site("const")
		for _, c := range []struct {
			op string
			v  int64
		}{{OpConstInc, v + 1}, {OpConstDec, v - 1}, {OpConstDouble, v * 2}, {OpConstHalf, v / 2}, {OpConstZero, 0}} {
			if c.v != v && c.v >= 0 {
				g.add(c.op, k, rep{at, end, strconv.FormatInt(c.v, 10)})
			}
		}
	case token.FLOAT:
		v, err := strconv.ParseFloat(strings.ReplaceAll(l.Value, "_", ""), 64)
		if err != nil {
			return
		}
		k := g.site("const")
		for _, c := range []struct {
			op string
			v  float64
		}{{OpConstDouble, v * 2}, {OpConstHalf, v / 2}, {OpConstZero, 0}} {
			if c.v != v {
				g.add(c.op, k, rep{at, end, strconv.FormatFloat(c.v, 'g', -1, 64)})
			}
		}
	}
}

// remove deletes a statement (its whole lines when it has them to itself).
func (g *gen) remove(op string, s ast.Stmt) {
	from, to := g.wholeLines(g.off(s.Pos()), g.off(s.End()))
	g.add(op, g.site(op), rep{from, to, ""})
}

// wholeLines widens [from, to) to whole lines when nothing but blanks (and
// a trailing comment) shares them.
func (g *gen) wholeLines(from, to int) (int, int) {
	ls := g.lineStart(from)
	if len(bytes.TrimSpace(g.src[ls:from])) != 0 {
		return from, to
	}
	le := g.lineEnd(to)
	rest := bytes.TrimSpace(g.src[to:le])
	if len(rest) != 0 && !bytes.HasPrefix(rest, []byte("//")) {
		return from, to
	}
	if le < len(g.src) {
		le++ // the newline
	}
	return ls, le
}

func (g *gen) lineStart(at int) int { return bytes.LastIndexByte(g.src[:at], '\n') + 1 }

func (g *gen) lineEnd(at int) int {
	if i := bytes.IndexByte(g.src[at:], '\n'); i >= 0 {
		return at + i
	}
	return len(g.src)
}

// finish turns the candidate's replacements into a whole-line edit whose
// old text occurs once in the file, widened within the function.
func (c *candidate) finish(g *gen) error {
	slices.SortFunc(c.reps, func(a, b rep) int { return a.from - b.from })
	from, to := c.reps[0].from, c.reps[len(c.reps)-1].to
	lo, hi := g.lineStart(from), g.lineEnd(max(to-1, from))
	if hi < len(g.src) {
		hi++
	}
	c.Line = g.fset.Position(g.fset.File(g.fd.Pos()).Pos(lo)).Line
	bodyLo := g.lineStart(g.off(g.fd.Body.Lbrace)) // the func line itself may widen
	bodyHi := g.lineEnd(g.off(g.fd.Body.Rbrace))
	apply := func(lo, hi int) string {
		var b strings.Builder
		last := lo
		for _, r := range c.reps {
			b.Write(g.src[last:r.from])
			b.WriteString(r.text)
			last = r.to
		}
		b.Write(g.src[last:hi])
		return b.String()
	}
	before := string(g.src[lo:hi])
	c.Before, c.After = oneLine(before), oneLine(apply(lo, hi))
	for up := true; bytes.Count(g.src, g.src[lo:hi]) != 1; up = !up {
		switch {
		case up && lo > bodyLo:
			lo = g.lineStart(lo - 1)
		case !up && hi < bodyHi:
			hi = min(g.lineEnd(hi)+1, len(g.src))
		case lo <= bodyLo && hi >= bodyHi:
			return fmt.Errorf("no unique context")
		}
	}
	c.Edits = []check.Edit{{Old: string(g.src[lo:hi]), New: apply(lo, hi)}}
	if c.Edits[0].Old == c.Edits[0].New {
		return fmt.Errorf("no change")
	}
	c.Base = check.Hash(g.src)
	return nil
}

func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	s = strings.Join(parts, " ⏎ ")
	if r := []rune(s); len(r) > 120 {
		s = string(r[:117]) + "..."
	}
	return s
}

// Apply returns src with m's edits (src the file as it is now).
func (m Mutant) Apply(src string) (string, error) {
	for _, e := range m.Edits {
		if strings.Count(src, e.Old) != 1 {
			return "", fmt.Errorf("%s: its edit is not found once in %s", m.Name, m.File)
		}
		src = strings.Replace(src, e.Old, e.New, 1)
	}
	return src, nil
}

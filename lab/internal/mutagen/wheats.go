package mutagen

import (
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"quoteflowlab.dev/kit/report"
)

// Wheats are generated like mutants, from what a lesson's contract allows
// (its allowed.txt): every place in the named functions where the change
// can be made gives a wheat, which the reference answer must pass every
// run (else it is reviewed: the contract promises what it changes, or the
// reference pins more than the contract). The changes:
//
//   - later D: the function itself and every goroutine it starts begin D
//     later (waiting on ctx too where one is in scope), and every timer it
//     sets fires D later: the contract promises "not before", never "at once";
//   - reversed: every `for … range` over a slice in the function visits the
//     elements last to first: the contract promises no order.
//
// D is at least MinWheatDelay: a wheat 3 ms late lets a test that pins
// timing to a few milliseconds pass, and a wheat must break such a test.
const (
	WheatLater    = "later"
	WheatReversed = "reversed"
)

// MinWheatDelay is the smallest delay a later wheat may add.
const MinWheatDelay = 10 * time.Millisecond

// An Allowed is what a lesson's contract allows to change: its text form,
// one rule per line,
//
//	# comment
//	later 30ms: checkpoints/12/quoteflow/service.go: Service.fanOut
//	reversed: checkpoints/12/quoteflow/service.go: Service.fanOut
type Allowed struct {
	Rules []Rule
}

// A Rule is one line of an Allowed.
type Rule struct {
	Op    string        // WheatLater or WheatReversed
	Delay time.Duration // WheatLater: how much later
	File  string        // slash path from the repository root
	Funcs []string      // "Name" or "Recv.Name"
}

// ParseAllowed reads an allowed.txt's text.
func ParseAllowed(text string) (Allowed, error) {
	var a Allowed
	err := eachLine(text, func(n int, line string) error {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || len(strings.Fields(parts[2])) == 0 {
			return fmt.Errorf("line %d: want `later 30ms: path/to/file.go: Func Recv.Method ...` or `reversed: path/to/file.go: Func ...`", n)
		}
		head, file := strings.Fields(parts[0]), strings.TrimSpace(parts[1])
		r := Rule{File: file, Funcs: strings.Fields(parts[2])}
		switch {
		case len(head) == 2 && head[0] == WheatLater:
			d, err := time.ParseDuration(head[1])
			if err != nil || d < MinWheatDelay {
				return fmt.Errorf("line %d: %q: a later wheat's delay must be a duration of at least %s (one of 3 ms lets a test that pins timing too tightly pass)", n, head[1], MinWheatDelay)
			}
			r.Op, r.Delay = WheatLater, d
		case len(head) == 1 && head[0] == WheatReversed:
			r.Op = WheatReversed
		default:
			return fmt.Errorf("line %d: %q: want `later <duration>` or `reversed`", n, parts[0])
		}
		if err := sourcePath(n, file); err != nil {
			return err
		}
		if slices.Contains(r.Funcs, "*") {
			return fmt.Errorf("line %d: name each function: a contract allows a change in a place, not everywhere", n)
		}
		a.Rules = append(a.Rules, r)
		return nil
	})
	if err == nil && len(a.Rules) == 0 {
		err = fmt.Errorf("no rule")
	}
	return a, err
}

// ReadAllowed reads the allowed.txt at slash path name under root.
func ReadAllowed(root, name string) (Allowed, error) { return readParsed(root, name, ParseAllowed) }

// Scope is the files an Allowed names, for Hash.
func (a Allowed) Scope() Scope {
	var s Scope
	for _, r := range a.Rules {
		if !slices.ContainsFunc(s.Files, func(f ScopeFile) bool { return f.File == r.File }) {
			s.Files = append(s.Files, ScopeFile{File: r.File, Funcs: r.Funcs})
		}
	}
	return s
}

// WheatsFromAllowed generates every wheat of a, as the files are now under
// root. Names are gen_<function>_<op>_<k>, unique across the rules.
func WheatsFromAllowed(root string, a Allowed) ([]Mutant, error) {
	var all []Mutant
	names := map[string]bool{}
	for _, r := range a.Rules {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(r.File)))
		if err != nil {
			return nil, err
		}
		ws, err := GenerateWheats(r, src)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			if names[w.Name] {
				w.Name = "gen_" + snake(path.Base(path.Dir(w.File))) + "_" + strings.TrimPrefix(w.Name, "gen_")
			}
			names[w.Name] = true
			all = append(all, w)
		}
	}
	return all, nil
}

// GenerateWheats returns the wheats rule r makes of src (the file r.File).
func GenerateWheats(r Rule, src []byte) ([]Mutant, error) {
	gs, err := gens(r.File, src, r.Funcs, "allowed.txt")
	if err != nil {
		return nil, err
	}
	var out []Mutant
	for _, g := range gs {
		switch r.Op {
		case WheatLater:
			if g.pkgs["time"] {
				g.later(r.Delay)
			}
		case WheatReversed:
			g.reversed()
		}
		for _, c := range g.out {
			m := c.Mutant
			m.Kind = report.Wheat
			m.Required = true
			if _, err := m.Apply(string(src)); err == nil {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// durationText writes d as Go: 30 * time.Millisecond.
func durationText(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return fmt.Sprintf("%d * time.Millisecond", d/time.Millisecond)
	}
	return fmt.Sprintf("time.Duration(%d)", int64(d))
}

// later makes a wheat of each goroutine start and each timer in the
// function.
func (g *gen) later(d time.Duration) {
	dt := durationText(d)
	param, ctx := g.hasCtx()
	wait := func(ctx bool) string {
		if ctx {
			return "select { case <-time.After(" + dt + "): case <-ctx.Done(): }"
		}
		return "time.Sleep(" + dt + ")"
	}
	if body := g.fd.Body.List; len(body) > 0 {
		at := g.lineStart(g.off(body[0].Pos()))
		if indent := string(g.src[at:g.off(body[0].Pos())]); len(strings.TrimSpace(indent)) == 0 {
			g.add(WheatLater, g.site(WheatLater), rep{at, at, indent + wait(param) + " // WHEAT: " + d.String() + " later\n"})
		}
	}
	ast.Inspect(g.fd.Body, func(n ast.Node) bool {
		var lit *ast.FuncLit
		switch n := n.(type) {
		case *ast.GoStmt:
			lit, _ = n.Call.Fun.(*ast.FuncLit)
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Go" && len(n.Args) == 1 {
				lit, _ = n.Args[0].(*ast.FuncLit)
			}
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && len(n.Args) >= 1 {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" && g.pkgs["time"] {
					switch sel.Sel.Name {
					case "NewTimer", "After", "AfterFunc":
						a := n.Args[0]
						g.add(WheatLater, g.site(WheatLater), rep{g.off(a.Pos()), g.off(a.End()), "(" + g.text(a) + ") + " + dt + " /* WHEAT: " + d.String() + " later */"})
					}
				}
			}
		}
		if lit == nil || len(lit.Body.List) == 0 {
			return true
		}
		first := lit.Body.List[0]
		at := g.lineStart(g.off(first.Pos()))
		if len(strings.TrimSpace(string(g.src[at:g.off(first.Pos())]))) != 0 {
			return true // a one-line body: no line of its own to put the wait on
		}
		indent := string(g.src[at:g.off(first.Pos())])
		g.add(WheatLater, g.site(WheatLater), rep{at, at, indent + wait(ctx) + " // WHEAT: this goroutine starts " + d.String() + " later\n"})
		return true
	})
}

// hasCtx: whether the function has a parameter named ctx, and whether it
// has one or defines one.
func (g *gen) hasCtx() (param, any bool) {
	found := false
	for _, p := range g.fd.Type.Params.List {
		for _, n := range p.Names {
			found = found || n.Name == "ctx"
		}
	}
	param = found
	ast.Inspect(g.fd.Body, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok && a.Tok == token.DEFINE {
			for _, l := range a.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == "ctx" {
					found = true
				}
			}
		}
		return !found
	})
	return param, found
}

// reversed makes a wheat of each range loop over a named slice: its
// elements visited last to first, each iteration's variables as before.
// A loop over a map, a channel, an integer or a string does not compile
// so changed (or would change what the loop sees) and is dropped by
// Compiles.
func (g *gen) reversed() {
	ast.Inspect(g.fd.Body, func(n ast.Node) bool {
		r, ok := n.(*ast.RangeStmt)
		if !ok || r.Tok != token.DEFINE && r.Key != nil || len(r.Body.List) == 0 {
			return true
		}
		x := g.text(r.X)
		switch r.X.(type) {
		case *ast.Ident, *ast.SelectorExpr:
		default:
			return true // evaluated once by range, twice here: only a name
		}
		name := func(e ast.Expr) string {
			if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
				return id.Name
			}
			return ""
		}
		k, v := name(r.Key), name(r.Value)
		idx := "len(" + x + ") - 1 - wheatK"
		var decl []string
		if k != "" {
			decl = append(decl, k+" := "+idx)
			idx = k
		}
		if v != "" {
			decl = append(decl, v+" := "+x+"["+idx+"]")
		}
		if k != "" && v == "" {
			decl = append(decl, "_ = "+k)
		}
		head := "for wheatK := range " + x + " { // WHEAT: last to first"
		body := ""
		if len(decl) > 0 {
			first := r.Body.List[0]
			at := g.lineStart(g.off(first.Pos()))
			indent := string(g.src[at:g.off(first.Pos())])
			if len(strings.TrimSpace(indent)) != 0 {
				return true
			}
			body = indent + strings.Join(decl, "\n"+indent) + "\n"
			g.add(WheatReversed, g.site(WheatReversed),
				rep{g.off(r.For), g.off(r.Body.Lbrace) + 1, head},
				rep{at, at, body})
			return true
		}
		g.add(WheatReversed, g.site(WheatReversed), rep{g.off(r.For), g.off(r.Body.Lbrace) + 1, head})
		return true
	})
}

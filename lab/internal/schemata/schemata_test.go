package schemata

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/check"
	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
	"quoteflowlab.dev/kit/testenv"
)

const libSrc = `package lib

import "fmt"

// Limit is a declaration outside any function.
const Limit = 2

type Counter struct{ n int }

// Add is a method with a named result.
func (c *Counter) Add(k int) (total int) {
	c.n += k
	return c.n
}

// Join is variadic.
func Join(sep string, parts ...string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += sep
		}
		out += p
	}
	return out
}

// Say has no results.
func Say(w *[]string, s string) { *w = append(*w, fmt.Sprint(s)) }

// First is generic, with two type parameters.
func First[T any, K comparable](xs []T, _ K) T { return xs[0] }

// Box is a generic type; Get is its method.
type Box[T any] struct{ V T }

func (b Box[T]) Get() T { return b.V }
`

const mainSrc = `package main

import (
	"fmt"

	"example.dev/m/lib"
)

func main() {
	var c lib.Counter
	c.Add(1)
	var said []string
	lib.Say(&said, "hi")
	fmt.Println(c.Add(2), lib.Join("-", "a", "b"), said, lib.Limit, lib.First([]string{"x", "y"}, 0), lib.Box[int]{V: 7}.Get())
}
`

func edit(name, old, new string) check.Check {
	return check.Check{Exercise: "E0", Name: name, Kind: report.Mutant, File: "lib/lib.go", Edits: []check.Edit{{Old: old, New: new}}}
}

// One build holds the original and every edit that stays inside function
// bodies, and runs each when selected; the rest are left for builds of
// their own, with their reason.
func TestOneBuildRunsEachVersion(t *testing.T) {
	root := t.TempDir()
	write(t, root, "go.mod", "module example.dev/m\n\ngo 1.26\n")
	write(t, root, "lib/lib.go", libSrc)
	write(t, root, "cmd/main.go", mainSrc)
	vs := []check.Check{
		edit("adds_twice", "\tc.n += k\n", "\tc.n += 2 * k // MUTANT\n"),
		edit("join_backwards", "\t\tout += p\n", "\t\tout = p + out // MUTANT\n"),
		edit("says_loudly", "func Say(w *[]string, s string) { *w = append(*w, fmt.Sprint(s)) }\n",
			"func Say(w *[]string, s string) { *w = append(*w, strings.ToUpper(s)) }\n"),
		edit("also_adds_twice", "\tc.n += k\n\treturn c.n\n", "\tc.n += k\n\treturn c.n + k // MUTANT\n"),
		edit("limit_changed", "const Limit = 2\n", "const Limit = 3 // MUTANT: outside a function\n"),
		edit("first_is_last", "{ return xs[0] }", "{ return xs[len(xs)-1] } // MUTANT: a generic function"),
		edit("box_empty", "func (b Box[T]) Get() T { return b.V }", "func (b Box[T]) Get() T { var zero T; return zero } // MUTANT: a generic type's method"),
	}
	// says_loudly needs an import the original lacks.
	vs[2].Edits = append(vs[2].Edits, check.Edit{Old: "import \"fmt\"\n", New: "import (\n\t\"fmt\"\n\t\"strings\"\n)\n"})

	s, separate, err := Generate(root, filepath.Join(t.TempDir(), "gen"), vs, []byte("test key"))
	if err != nil {
		t.Fatal(err)
	}
	if len(separate) != 1 || separate[0].Variant.Name != "limit_changed" || !strings.Contains(separate[0].Reason, "outside a function") {
		t.Fatalf("separate = %+v; want only limit_changed, for a change outside a function", separate)
	}
	bin := filepath.Join(t.TempDir(), runner.Exe("m"))
	if res := runner.Build(context.Background(), root, s.Overlay, bin, "./cmd"); !res.OK() {
		t.Fatalf("the schema does not build:\n%s", res.Output)
	}
	for _, tc := range []struct{ env, want string }{
		{s.Reference(), "3 a-b [hi] 2 x 7"},
		{s.Select("adds_twice"), "6 a-b [hi] 2 x 7"},
		{s.Select("join_backwards"), "3 ba- [hi] 2 x 7"},
		{s.Select("says_loudly"), "3 a-b [HI] 2 x 7"},
		{s.Select("also_adds_twice"), "5 a-b [hi] 2 x 7"},
		{s.Select("first_is_last"), "3 a-b [hi] 2 y 7"},
		{s.Select("box_empty"), "3 a-b [hi] 2 x 0"},
		{s.Decoy("limit_changed"), "3 a-b [hi] 2 x 7"},
	} {
		res := runner.Run(context.Background(), runner.Cmd{Name: bin, Env: []string{tc.env}})
		if got := strings.TrimSpace(res.Output); got != tc.want {
			t.Errorf("with %q: got %q, want %q", tc.env, got, tc.want)
		}
	}
	// Started without lab check's setting, or with one it never gave, the
	// build refuses to run: it would be the correct code, an oracle for an
	// answer that runs itself again to compare.
	for _, env := range []string{"", s.Env + "=" + strings.Repeat("0", len(s.Tokens["adds_twice"]))} {
		res := runner.Run(context.Background(), runner.Cmd{Name: bin, Env: []string{env}})
		if res.ExitCode != 3 || !strings.Contains(res.Output, "built by lab check for its own runs") {
			t.Errorf("with %q: exit %d, %q; want exit 3 and the reason", env, res.ExitCode, strings.TrimSpace(res.Output))
		}
	}
	if strings.Contains(s.Env, "MUTANT") || strings.Contains(s.Reference(), "reference") {
		t.Errorf("the selector gives its purpose away: %s", s.Reference())
	}
}

func TestAStaleEditIsAnError(t *testing.T) {
	root := t.TempDir()
	write(t, root, "lib/lib.go", libSrc)
	_, _, err := Generate(root, t.TempDir(), []check.Check{edit("gone", "no such line\n", "x\n")}, nil)
	if err == nil || !strings.Contains(err.Error(), "E0 mutant gone") {
		t.Fatalf("err = %v; want a stale edit naming the check", err)
	}
}

func write(t *testing.T, root, name, body string) {
	testenv.Write(t, filepath.Join(root, filepath.FromSlash(name)), body)
}

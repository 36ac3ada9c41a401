package msg_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"quoteflowlab.dev/kit/msg"
	"quoteflowlab.dev/kit/report"
)

// The language comes from --lang, else the first of LC_ALL, LC_MESSAGES,
// LANG that is set (zh… is Chinese), else English.
func TestTheLanguageComesFromTheEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want msg.Lang
	}{
		{map[string]string{}, msg.English},
		{map[string]string{"LANG": "zh_CN.UTF-8"}, msg.Chinese},
		{map[string]string{"LANG": "zh_TW.UTF-8"}, msg.Chinese},
		{map[string]string{"LANG": "en_US.UTF-8"}, msg.English},
		{map[string]string{"LANG": "C.UTF-8"}, msg.English},
		{map[string]string{"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, msg.Chinese},
		{map[string]string{"LC_ALL": "C", "LC_MESSAGES": "zh_CN.UTF-8", "LANG": "zh_CN.UTF-8"}, msg.English},
		{map[string]string{"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, msg.Chinese},
	} {
		if got := msg.FromEnv(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.env, got, tc.want)
		}
	}
	for in, want := range map[string]msg.Lang{"zh": msg.Chinese, "zh-CN": msg.Chinese, "zh_CN": msg.Chinese, "ZH": msg.Chinese, "en": msg.English, "en-GB": msg.English} {
		if got, err := msg.Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := msg.Parse("fr"); err == nil {
		t.Error("Parse(fr): no error")
	}
}

func TestAMessageIsSaidInTheCurrentLanguage(t *testing.T) {
	defer msg.Set(msg.Current())
	msg.Set(msg.English)
	if got := msg.T("list.passed", 3, 8); got != "\n3/8 exercises passed\n" {
		t.Errorf("English: %q", got)
	}
	msg.Set(msg.Chinese)
	if got := msg.T("list.passed", 3, 8); got != "\n已通过 3/8 道练习\n" {
		t.Errorf("Chinese: %q", got)
	}
}

// Every msg.T, msg.In and msg.Error of lab's code names an ID of the
// catalog: a typo would print the ID itself.
func TestEveryIDTheCodeUsesIsInTheCatalog(t *testing.T) {
	known := map[string]bool{}
	ids, err := msg.IDs(msg.English)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		known[id] = true
	}
	used := 0
	err = filepath.WalkDir(filepath.Join("..", ".."), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "msg" {
				return true
			}
			arg := call.Args[0]
			if sel.Sel.Name == "In" && len(call.Args) > 1 {
				arg = call.Args[1]
			}
			switch sel.Sel.Name {
			case "T", "In", "Error":
			default:
				return true
			}
			lit, ok := arg.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true // built from parts: "status." + p.Status; covered by its own test
			}
			id, _ := strconv.Unquote(lit.Value)
			used++
			if !known[id] {
				t.Errorf("%s: msg.%s(%q): no such message in catalog/en.toml", path, sel.Sel.Name, id)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if used < 100 {
		t.Errorf("found only %d uses of the catalog in lab's code: is the walk looking in the right place?", used)
	}
}

// IDs built from a value: a report's statuses and verdicts, a check's kinds.
func TestEveryBuiltIDIsInTheCatalog(t *testing.T) {
	var ids []string
	for _, s := range []string{report.Caught, report.Missed, report.TimedOut, report.NotViable, report.NotRun, report.Pass, report.Fail,
		report.OK, report.Skipped, report.ToDo, report.BuildFailed, report.Busy} {
		ids = append(ids, "status."+s, "status."+s+".loud")
	}
	for _, v := range []report.Verdict{report.Passed, report.Failed, report.NotStarted, report.Inconclusive, report.Flaky} {
		ids = append(ids, "verdict."+string(v))
	}
	for _, k := range []report.Kind{report.Mutant, report.Wheat} {
		ids = append(ids, "mut.not_viable."+string(k), "mut.kind_name."+string(k))
	}
	for _, id := range ids {
		if !msg.Has(msg.English, id) {
			t.Errorf("no message %s in catalog/en.toml", id)
		}
	}
}

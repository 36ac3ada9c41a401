package demo

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"testing"
)

// A lesson's demo program answers the protocol: -list names its demos
// (NAME, a tab, its summary), NAME runs one in an Env of its own, and the
// Result file, when asked for, says how it went; an unknown name is a
// usage error.
func TestMainSpeaksTheProtocol(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	var scratch string
	demos := []Demo{
		{Name: "ok", Summary: "prints a table", Run: func(ctx context.Context, e *Env, w io.Writer) error {
			scratch = e.Dir
			tb := Table{Columns: []string{"checkpoint"}}
			tb.Add("answered", 200)
			tb.Print(w)
			return nil
		}},
		{Name: "fails", Summary: "fails", Run: func(context.Context, *Env, io.Writer) error { return errors.New("no provider") }},
	}
	var out, errb bytes.Buffer
	if code := run(99, demos, []string{"-list"}, &out, &errb); code != 0 || out.String() != "ok\tprints a table\nfails\tfails\n" {
		t.Errorf("-list: exit %d, %q", code, out.String())
	}
	out.Reset()
	result := filepath.Join(t.TempDir(), "result.json")
	t.Setenv(ResultEnv, result)
	if code := run(99, demos, []string{"ok"}, &out, &errb); code != 0 || out.String() != "            checkpoint\nanswered           200\n" {
		t.Errorf("ok: exit %d, %q, %s", code, out.String(), errb.String())
	}
	if r, err := ReadResult(result); err != nil || r.Error != "" {
		t.Errorf("ok's result: %+v, %v", r, err)
	}
	if left, _ := filepath.Glob(scratch); scratch == "" || len(left) != 0 {
		t.Errorf("the demo's scratch folder %q is left: %v", scratch, left)
	}
	if code := run(99, demos, []string{"fails"}, &out, &errb); code != 1 {
		t.Errorf("fails: exit %d, want 1", code)
	}
	if r, err := ReadResult(result); err != nil || r.Error != "no provider" {
		t.Errorf("fails' result: %+v, %v; want its error", r, err)
	}
	for _, args := range [][]string{{"nope"}, {}, {"ok", "fails"}} {
		if code := run(99, demos, args, &out, &errb); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

package cli

import (
	"path/filepath"
	"testing"

	"quoteflowlab.dev/kit/testenv"
)

// The hash a demo is recorded under changes with what its figures depend
// on (code of the lab, the toolkit, the provider, a checkpoint; the lesson's page and
// programs) and not with what cannot change a figure (tests, Markdown
// elsewhere, the lesson's mutants); the record reads back what it wrote.
func TestDocsHashFollowsWhatTheFiguresDependOn(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) { testenv.Write(t, filepath.Join(root, filepath.FromSlash(name)), text) }
	for _, f := range []string{"go.mod", "go.sum", "lab/main.go", "kit/demo/env.go", "kit/demo/env_test.go", "provider/p.go", "checkpoints/18/hedge/hedge.go",
		"checkpoints/18/hedge/hedge_test.go", "checkpoints/18/README.md", "lessons/18/README.md", "lessons/18/failsafe/main.go",
		"lessons/18/demo/demos.go", "lessons/18/checks/m.txtar", "lessons/17/README.md"} {
		write(f, "v1")
	}
	const page = "lessons/18/README.md"
	hash := func() string {
		t.Helper()
		h, err := docsHash(root, page)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := hash()
	write(".gitignore", "*.test\nquoteflow-data/\n")
	before = hash()
	for _, f := range []string{"kit/demo/env_test.go", "checkpoints/18/hedge/hedge_test.go", "checkpoints/18/README.md", "lessons/18/checks/m.txtar", "lessons/17/README.md",
		"checkpoints/18/hedge.test", "checkpoints/18/quoteflow-data/baskets.db", "checkpoints/18/hedge/.hedge.go.swp", "lessons/18/exercise/main.go"} {
		write(f, "v2")
		if h := hash(); h != before {
			t.Errorf("%s changed the hash: it changes no figure", f)
		}
	}
	for _, f := range []string{"lab/main.go", "kit/demo/env.go", "lessons/18/demo/demos.go", "provider/p.go", "checkpoints/18/hedge/hedge.go", "lessons/18/README.md", "lessons/18/README.zh-CN.md", "lessons/18/failsafe/main.go", "go.sum"} {
		write(f, "v2-"+f)
		h := hash()
		if h == before {
			t.Errorf("%s changed, yet the hash did not", f)
		}
		before = h
	}
	rec := map[string]string{"docs: " + page + ": lab demo 18 hedge": before}
	if err := writeDocsRecord(root, rec); err != nil {
		t.Fatal(err)
	}
	got, err := readDocsRecord(root)
	if err != nil || len(got) != 1 || got["docs: "+page+": lab demo 18 hedge"] != before {
		t.Fatalf("read back %v, %v; want %v", got, err, rec)
	}
}

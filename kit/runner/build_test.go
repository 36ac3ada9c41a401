package runner

import (
	"context"
	"debug/buildinfo"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// setting is the value of one build setting ("" when absent).
func setting(bi *debug.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// A build the lab starts is built with -trimpath exactly when the lab was:
// the flag is part of every package's key in the Go build cache, so a lab
// (or a test binary of go test ./...) building the other way would compile
// the standard library and every module a second time.
func TestBuildIsTrimmedAsThisProgramWas(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	self, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("this test binary has no build info")
	}
	want := setting(self, "-trimpath") == "true"
	if Trimpath() != want {
		t.Fatalf("Trimpath() = %v, but this binary's build info says -trimpath=%q", Trimpath(), setting(self, "-trimpath"))
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module trimcheck\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, Exe("trimcheck"))
	if res := Build(context.Background(), dir, "", bin, "."); !res.OK() {
		t.Fatalf("go build: exit %d %v\n%s", res.ExitCode, res.Err, res.Output)
	}
	built, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if got := setting(built, "-trimpath") == "true"; got != want {
		t.Errorf("the build's -trimpath = %v, this program's = %v: they must match", got, want)
	}
}

package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"quoteflowlab.dev/kit/report"
	"quoteflowlab.dev/kit/runner"
)

// loadOverlay reads opts.Overlay's Replace map, if any.
func (g *grader) loadOverlay() error {
	g.overlay = map[string]string{}
	if g.opts.Overlay == "" {
		return nil
	}
	data, err := os.ReadFile(g.opts.Overlay)
	if err != nil {
		return err
	}
	var o struct{ Replace map[string]string }
	if err := json.Unmarshal(data, &o); err != nil {
		return fmt.Errorf("%s: %w", g.opts.Overlay, err)
	}
	for from, to := range o.Replace {
		if abs, err := filepath.Abs(from); err == nil {
			from = abs
		}
		g.overlay[filepath.Clean(from)] = to
	}
	return nil
}

// readAnswerFile reads name from the answer directory, or its replacement
// when the overlay replaces it.
func (g *grader) readAnswerFile(name string) ([]byte, error) {
	path := filepath.Join(g.dir, name)
	if to, ok := g.overlay[path]; ok {
		if to == "" {
			return nil, fmt.Errorf("%s is deleted by the overlay", name)
		}
		return os.ReadFile(to)
	}
	return os.ReadFile(path)
}

// build compiles every tool in parallel into g.binDir. A tool that does
// not build is recorded in g.buildErrs; only an error that stops all
// grading (no temp dir) is returned.
func (g *grader) build(ctx context.Context) error {
	var err error
	if g.binDir = g.opts.BinDir; g.binDir == "" {
		g.binDir, err = os.MkdirTemp("", "grade15-")
	} else {
		err = os.MkdirAll(g.binDir, 0o755)
	}
	if err != nil {
		return err
	}
	g.bins, g.buildErrs = map[string]string{}, map[string]string{}
	if g.opts.Only == "" && g.buildAll(ctx) {
		for _, tool := range Tools {
			g.set("build_"+tool, true, "")
		}
		g.progress("built %d of %d tools", len(g.bins), len(Tools))
		return nil
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, tool := range Tools {
		if g.opts.Only != "" && tool != toolOf(g.opts.Only) {
			continue // --only: no other tool runs
		}
		wg.Go(func() {
			bin, err := g.buildOne(ctx, tool)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				g.buildErrs[tool] = err.Error()
				return
			}
			g.bins[tool] = bin
		})
	}
	wg.Wait()
	for _, tool := range Tools {
		if msg, bad := g.buildErrs[tool]; bad {
			g.set("build_"+tool, false, "%s", msg)
		} else {
			g.set("build_"+tool, true, "")
		}
	}
	g.progress("built %d of %d tools", len(g.bins), len(Tools))
	return nil
}

// buildAll builds the five tools with one `go build` run in the answer's
// folder (./call ./deadline ...), and says whether every one built. When
// one does not (or the folders are not packages of one module), build
// builds each on its own, to say which failed and why; go build then finds
// the ones this built up to date.
func (g *grader) buildAll(ctx context.Context) bool {
	var pkgs []string
	for _, tool := range Tools {
		if fi, err := os.Stat(filepath.Join(g.dir, tool)); err != nil || !fi.IsDir() {
			return false
		}
		pkgs = append(pkgs, "."+string(filepath.Separator)+tool)
	}
	overlay := ""
	if g.opts.Overlay != "" {
		abs, err := filepath.Abs(g.opts.Overlay)
		if err != nil {
			return false
		}
		overlay = abs
	}
	if res := runner.BuildInto(ctx, g.dir, overlay, g.binDir, pkgs...); !res.OK() {
		return false
	}
	for _, tool := range Tools {
		bin := filepath.Join(g.binDir, runner.Exe(tool))
		if _, err := os.Stat(bin); err != nil {
			return false
		}
		g.bins[tool] = bin
	}
	return true
}

// buildOne runs `go build` in the tool's folder.
func (g *grader) buildOne(ctx context.Context, tool string) (string, error) {
	src := filepath.Join(g.dir, tool)
	if fi, err := os.Stat(src); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("no folder %s", src)
	}
	overlay := ""
	if g.opts.Overlay != "" {
		abs, err := filepath.Abs(g.opts.Overlay)
		if err != nil {
			return "", err
		}
		overlay = abs
	}
	bin := filepath.Join(g.binDir, runner.Exe(tool))
	if res := runner.Build(ctx, src, overlay, bin, "."); !res.OK() {
		return "", fmt.Errorf("go build failed: %s", report.Shorten(report.OneLine(res.Output+" "+errText(res.Err)), 300))
	}
	return bin, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

package grade15

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

type probeRow struct {
	Kind      string  `json:"kind"`
	Target    string  `json:"target"`
	ElapsedMS float64 `json:"elapsed_ms"`
	Error     *string `json:"error"`
}

var probeKeys = []string{"kind", "target", "elapsed_ms", "error"}

// probeRows decodes probe's output: an array of rows, or an object holding
// them under "rows".
func probeRows(raw []byte) ([]json.RawMessage, error) {
	var rows []json.RawMessage
	if json.Unmarshal(raw, &rows) == nil {
		return rows, nil
	}
	var wrapped struct{ Rows []json.RawMessage }
	if err := json.Unmarshal(raw, &wrapped); err != nil || wrapped.Rows == nil {
		return nil, fmt.Errorf("want a JSON array of three rows (or {\"rows\": [...]}), got %s", shorten(string(raw)))
	}
	return wrapped.Rows, nil
}

func (g *grader) checkProbe(ctx context.Context) {
	all := []string{"probe_rows", "probe_targets", "probe_timings"}
	if g.lab.blackhole == "" {
		for _, n := range all {
			g.set(n, true, "skipped: this system has no blackhole (Linux only)")
		}
		return
	}
	r := g.exec(ctx, "probe", "--base", g.lab.base, "--blackhole", g.lab.blackhole)
	if r.problem != "" {
		g.failAllOf(r.problem, all...)
		return
	}
	raws, err := probeRows(firstValue(r.stdout))
	byKind := map[string]probeRow{}
	for i := 0; err == nil && i < len(raws); i++ {
		var row probeRow
		if err = missingKeys(raws[i], probeKeys...); err == nil {
			err = json.Unmarshal(raws[i], &row)
		}
		if err == nil && (row.Error == nil || *row.Error == "") {
			err = fmt.Errorf("row %q has no error text", row.Kind)
		}
		byKind[row.Kind] = row
	}
	if err == nil && len(raws) != 3 {
		err = fmt.Errorf("%d rows, want 3", len(raws))
	}
	for _, k := range []string{"refused", "connect_timeout", "read_timeout"} {
		if _, ok := byKind[k]; err == nil && !ok {
			err = fmt.Errorf("no row of kind %q", k)
		}
	}
	if err != nil {
		g.failAllOf("probe: "+err.Error(), all...)
		return
	}
	g.set("probe_rows", true, "")

	ref, ct, rt := byKind["refused"], byKind["connect_timeout"], byKind["read_timeout"]
	targets := strings.Contains(ct.Target, g.lab.blackhole) && strings.Contains(rt.Target, g.lab.addr) &&
		strings.Contains(ref.Target, "127.") && !strings.Contains(ref.Target, g.lab.addr) && !strings.Contains(ref.Target, g.lab.blackhole)
	g.set("probe_targets", targets, "refused → %s, connect_timeout → %s, read_timeout → %s (partner %s, blackhole %s)",
		ref.Target, ct.Target, rt.Target, g.lab.addr, g.lab.blackhole)

	total := ref.ElapsedMS + ct.ElapsedMS + rt.ElapsedMS
	timings := ref.ElapsedMS < 500 && 2*ref.ElapsedMS < ct.ElapsedMS && 2*ref.ElapsedMS < rt.ElapsedMS &&
		ct.ElapsedMS >= 50 && rt.ElapsedMS >= 50 && total <= r.wallMS()+early
	g.set("probe_timings", timings, "refused %.1f ms, connect_timeout %.1f ms, read_timeout %.1f ms; the probe ran %.0f ms",
		ref.ElapsedMS, ct.ElapsedMS, rt.ElapsedMS, r.wallMS())
}

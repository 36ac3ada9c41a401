package budget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"

	"quoteflowlab.dev/kit/report"
)

type probeRow struct {
	Kind      string  `json:"kind"`
	Target    string  `json:"target"`
	ElapsedMS float64 `json:"elapsed_ms"`
	Error     *string `json:"error"`
}

var (
	probeKeys  = []string{"kind", "target", "elapsed_ms", "error"}
	probeKinds = []string{"refused", "connect_timeout", "read_timeout"}
	probeProps = []string{"probe_rows", "probe_targets", "probe_timings", "probe_contacted", "probe_saved", "probe_model"}
)

// probeRows decodes probe's output: an array of rows, or an object holding
// them under "rows".
func probeRows(raw []byte) ([]json.RawMessage, error) {
	var rows []json.RawMessage
	if json.Unmarshal(raw, &rows) == nil {
		return rows, nil
	}
	var wrapped struct{ Rows []json.RawMessage }
	if err := json.Unmarshal(raw, &wrapped); err != nil || wrapped.Rows == nil {
		return nil, fmt.Errorf("want a JSON array of three rows (or {\"rows\": [...]}), got %s", report.Shorten(report.OneLine(string(raw)), 300))
	}
	return wrapped.Rows, nil
}

// parseProbe decodes a probe's output into its three rows by kind.
func parseProbe(raw []byte) (map[string]probeRow, error) {
	raws, err := probeRows(raw)
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
	for _, k := range probeKinds {
		if _, ok := byKind[k]; err == nil && !ok {
			err = fmt.Errorf("no row of kind %q", k)
		}
	}
	return byKind, err
}

// checkProbe runs probe against a provider lab of its own, so that what the
// lab saw (partner requests, SYNs dropped at the blackhole) is the probe's
// alone, and compares the answer's saved probe.json with the live run.
func (g *grader) checkProbe(ctx context.Context) {
	if g.lab.blackhole == "" {
		for _, n := range probeProps {
			g.set(n, true, "skipped: this system has no blackhole (Linux only)")
		}
		return
	}
	l, err := startLab(true)
	if err != nil {
		g.failAllOf("starting a provider lab for probe: "+err.Error(), probeProps...)
		return
	}
	defer l.stop()
	r := g.exec(ctx, "probe", "--base", l.base, "--blackhole", l.blackhole)
	if r.problem != "" {
		g.failAllOf(r.problem, probeProps...)
		return
	}
	byKind, err := parseProbe(firstValue(r.stdout))
	if err != nil {
		g.failAllOf("probe: "+err.Error(), probeProps...)
		return
	}
	g.set("probe_rows", true, "")

	ref, ct, rt := byKind["refused"], byKind["connect_timeout"], byKind["read_timeout"]
	targets := strings.Contains(ct.Target, l.blackhole) && strings.Contains(rt.Target, l.addr) &&
		strings.Contains(ref.Target, "127.") && !strings.Contains(ref.Target, l.addr) && !strings.Contains(ref.Target, l.blackhole)
	g.set("probe_targets", targets, "refused → %s, connect_timeout → %s, read_timeout → %s (partner %s, blackhole %s)",
		ref.Target, ct.Target, rt.Target, l.addr, l.blackhole)

	var v verdict
	total := ref.ElapsedMS + ct.ElapsedMS + rt.ElapsedMS
	v.within(ref.ElapsedMS, 500, loadAllowance, "the refused connection took %.1f ms", ref.ElapsedMS)
	v.need(2*ref.ElapsedMS < ct.ElapsedMS && 2*ref.ElapsedMS < rt.ElapsedMS, "the refused connection was not much faster than the timeouts")
	v.need(ct.ElapsedMS >= 50 && rt.ElapsedMS >= 50, "a timeout took under 50 ms, less than any limit worth the name")
	v.need(total <= r.wallMS()+rounding, "the rows add up to %.1f ms, more than the %.0f ms the probe ran", total, r.wallMS())
	v.within(r.wallMS(), 2*(total+300), allowFor(r), "the rows add up to %.1f ms of a %.0f ms run", total, r.wallMS())
	g.judge("probe_timings", v, "refused %.1f ms, connect_timeout %.1f ms, read_timeout %.1f ms; the probe ran %.0f ms",
		ref.ElapsedMS, ct.ElapsedMS, rt.ElapsedMS, r.wallMS())

	g.checkContacted(l, ref)
	g.checkSaved(byKind)

	var mv verdict
	m := newModel(&mv, "probe")
	modelProbe(m, []probeRow{ref, ct, rt}, l.addr, l.blackhole, r)
	g.modelJudge("probe_model", "probe", mv, []string{"probe"}, checkFields("probe", m), g.seed, "", "")
}

// checkContacted checks from the provider's side that the probe made its
// calls: the partner received a request and the blackhole dropped a SYN.
// A closed port keeps no record of a connection refused, so the refused row
// is judged from its phase and timing (probe_timings) and by dialling its
// target now: it must refuse.
func (g *grader) checkContacted(l *lab, ref probeRow) {
	st := l.stats()
	var v verdict
	partner := st.PartnerPaths.Call + st.PartnerPaths.Budget
	v.need(partner >= 1, "the partner received no request: the read_timeout row was not measured against it")
	drops := "not reported by this kernel"
	if st.Blackhole != nil && st.Blackhole.SYNDrops != nil {
		drops = fmt.Sprint(*st.Blackhole.SYNDrops)
		v.need(*st.Blackhole.SYNDrops >= 1, "the blackhole dropped no SYN: the connect_timeout row was not measured against it")
	}
	refusal := refuses(ref.Target)
	v.need(refusal == nil, "the refused row's target %s does not refuse a connection now (%v)", ref.Target, refusal)
	g.judge("probe_contacted", v, "the partner received %d request(s) (/call %d, /budget %d); the blackhole dropped %s SYN(s); the refused target %s: %s",
		partner, st.PartnerPaths.Call, st.PartnerPaths.Budget, drops, ref.Target, errText(refusal))
}

// refuses dials target (a URL or host:port) and reports nil when the
// connection is refused.
func refuses(target string) error {
	addr := hostPort(target)
	if addr == "" {
		return fmt.Errorf("no host:port in %q", target)
	}
	if h, _, _ := net.SplitHostPort(addr); !isLoopback(h) {
		return fmt.Errorf("%s is not a loopback address", addr)
	}
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return errors.New("something listens there")
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil
	}
	return err
}

// hostPort extracts host:port from a URL or returns target when it is one.
func hostPort(target string) string {
	if u, err := url.Parse(target); err == nil && u.Host != "" {
		if u.Port() == "" {
			return net.JoinHostPort(u.Hostname(), "80")
		}
		return u.Host
	}
	if _, _, err := net.SplitHostPort(target); err == nil {
		return target
	}
	return ""
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkSaved checks the answer's probe.json, the run its report quotes,
// against the probe the grader just ran: the same three kinds against
// loopback targets, a refused connection that was fast, and timeouts like
// the live ones. Load only makes a timeout late, never early, so a saved
// timeout may be slower than the live one (up to twice it plus 500 ms) but
// not much faster (at least three quarters of it less 50 ms).
func (g *grader) checkSaved(live map[string]probeRow) {
	var v verdict
	data, err := g.readAnswerFile(ProbeFile)
	if err != nil {
		v.need(false, "there is no %s (save your probe's output there)", ProbeFile)
		g.judge("probe_saved", v, "%s: %v", ProbeFile, err)
		return
	}
	saved, err := parseProbe(firstValue(data))
	if err != nil {
		v.need(false, "%s is not a probe's output", ProbeFile)
		g.judge("probe_saved", v, "%s: %v", ProbeFile, err)
		return
	}
	var seen []string
	for _, kind := range probeKinds {
		s, l := saved[kind], live[kind]
		seen = append(seen, fmt.Sprintf("%s %.1f ms (live %.1f)", kind, s.ElapsedMS, l.ElapsedMS))
		host, _, _ := net.SplitHostPort(hostPort(s.Target))
		v.need(isLoopback(host), "its %s row's target %q is not a loopback address", kind, s.Target)
		if kind == "refused" {
			v.need(s.ElapsedMS >= 0 && s.ElapsedMS <= 100, "its refused row took %.1f ms: a refused connection is answered at once", s.ElapsedMS)
			continue
		}
		v.within(l.ElapsedMS, (s.ElapsedMS+50)/0.75, loadAllowance, "its %s took %.1f ms, far less than the %.1f ms the same probe takes now", kind, s.ElapsedMS, l.ElapsedMS)
		v.need(s.ElapsedMS <= 2*l.ElapsedMS+500, "its %s took %.1f ms, far more than the %.1f ms the same probe takes now", kind, s.ElapsedMS, l.ElapsedMS)
	}
	g.judge("probe_saved", v, "%s: %s", ProbeFile, strings.Join(seen, ", "))
}

// modelProbe compares every field of probe's rows with the model: each
// kind once, each target where the contract puts it, an error text for
// each failure, and times within its limits and its run.
func modelProbe(m *model, rows []probeRow, partner, blackhole string, r run) {
	wall := r.wallMS()
	count := map[string]int{}
	total := 0.0
	for _, row := range rows {
		count[row.Kind]++
		total += row.ElapsedMS
	}
	m.need("rows", len(rows) == 3, "has %d rows, want 3", len(rows))
	for _, k := range probeKinds {
		m.need("rows[].kind", count[k] == 1, "%q appears %d times, want once", k, count[k])
	}
	for _, row := range rows {
		host := hostPort(row.Target)
		switch row.Kind {
		case "refused":
			h, _, _ := net.SplitHostPort(host)
			m.need("rows[].target", isLoopback(h) && host != partner && host != blackhole, "of refused is %q, want a closed loopback port", row.Target)
			m.within("rows[].elapsed_ms", row.ElapsedMS, 500, "of refused is %.1f ms", row.ElapsedMS)
		case "connect_timeout":
			m.need("rows[].target", host == blackhole, "of connect_timeout is %q, want the blackhole %s", row.Target, blackhole)
			m.need("rows[].elapsed_ms", row.ElapsedMS >= 50, "of connect_timeout is %.1f ms, under any limit worth the name", row.ElapsedMS)
		case "read_timeout":
			m.need("rows[].target", host == partner, "of read_timeout is %q, want the partner %s", row.Target, partner)
			m.need("rows[].elapsed_ms", row.ElapsedMS >= 50, "of read_timeout is %.1f ms, under any limit worth the name", row.ElapsedMS)
		default:
			m.need("rows[].kind", false, "%q is not a kind of the contract", row.Kind)
		}
		m.need("rows[].error", deref(row.Error) != "", "of %s is empty, want the failure's text", row.Kind)
		m.need("rows[].elapsed_ms", row.ElapsedMS >= 0 && row.ElapsedMS <= wall+rounding, "of %s is %.1f, more than the %.0f ms the probe lived", row.Kind, row.ElapsedMS, wall)
	}
	m.need("rows[].elapsed_ms", total <= wall+rounding, "add up to %.1f, more than the %.0f ms the probe lived", total, wall)
}

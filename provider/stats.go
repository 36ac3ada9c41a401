package provider

import (
	"net"
	"net/http"
	"strconv"
	"time"
)

// A workHandler answers a supplier or partner request, counting in st (the
// state it arrived in). It returns the status it wrote (0: none) and, when
// it hijacked the connection to reset it, that connection: counted closes it
// only after the request has left the counters, so a client that sees the
// reset also sees it in /stats.
type workHandler func(st *state, w http.ResponseWriter, r *http.Request) (status int, cut net.Conn)

// counted wraps a work handler so /stats sees it: total and active go up on
// entry, active goes down when it returns, and its status is tallied.
func (p *Provider) counted(h workHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		status, cut := p.count(h, w, r)
		if status == 0 && cut == nil {
			// Interrupted (client gone, or cut at shutdown) before answering:
			// drop the connection, or net/http would send an empty 200.
			cut, _, _ = http.NewResponseController(w).Hijack()
		}
		if cut != nil {
			cut.Close() // after a reset's SetLinger(0), the client gets an RST
		}
	}
}

// count runs h between the counter updates.
func (p *Provider) count(h workHandler, w http.ResponseWriter, r *http.Request) (int, net.Conn) {
	active := p.flights.add(r, &p.active)
	defer p.flights.remove(r, &p.active)
	st := p.state.Load() // after raising active: see Reset
	st.total.Add(1)
	if active > st.maxActive.Load() {
		active = p.flights.live(-1) // a new peak: not the calls whose client has gone
	}
	raiseMax(&st.maxActive, active)
	status, cut := h(st, w, r)
	if status > 0 && status < len(st.perStatus) {
		st.perStatus[status].Add(1)
	}
	if status == http.StatusTooManyRequests { // only boreal's limiters answer 429
		if limitedByCost(r) {
			st.costLimited.Add(1)
		} else {
			st.rateLimited.Add(1)
		}
	}
	if cut != nil {
		st.resets.Add(1)
	}
	return status, cut
}

// limitedByCost reports whether a supplier request that was answered 429
// asked for scenario costlimited (a rare path: the query is read again).
func limitedByCost(r *http.Request) bool {
	var q [3]string // quoteParams
	_, err := readQuery(r.URL.RawQuery, quoteParams, q[:])
	return err == nil && q[1] == "costlimited"
}

// Stats is the body of GET /stats.
type Stats struct {
	Total        int64            `json:"total"`
	Active       int64            `json:"active"`
	MaxActive    int64            `json:"max_active"`
	PerSupplier  PerSupplier      `json:"per_supplier"`
	Partner      int64            `json:"partner"`
	PartnerPaths PartnerPaths     `json:"partner_paths"`
	PerStatus    map[string]int64 `json:"per_status"`
	Abandoned    int64            `json:"abandoned"`
	Resets       int64            `json:"resets"`
	ClientGone   int64            `json:"client_gone"`
	RateLimited  int64            `json:"rate_limited"`
	EarlyRetries int64            `json:"early_retries"`
	CostLimited  int64            `json:"cost_limited"`
	CostAdmitted int64            `json:"cost_admitted"`
	// Hedged counts supplier requests that arrived while another request
	// of their X-Request-ID was running at that supplier; LostCancelled
	// those of such a pair whose client hung up after a sibling answered.
	Hedged        int64 `json:"hedged"`
	LostCancelled int64 `json:"lost_cancelled"`
	// Stragglers counts tail's requests drawn slow.
	Stragglers  int64           `json:"stragglers"`
	Blackhole   *BlackholeStats `json:"blackhole"`
	TrackedKeys TrackedKeys     `json:"tracked_keys"`
	// Scenarios holds the numbers of the scenarios that have any.
	Scenarios ScenarioParams `json:"scenarios"`
}

// ScenarioParams are the fixed numbers of the scenarios that have them.
type ScenarioParams struct {
	CostLimited CostParams       `json:"costlimited"`
	Tail        TailParams       `json:"tail"`
	Brownout    BrownoutSchedule `json:"brownout"`
	Capacity    CapacitySchedule `json:"capacity"`
}

// CapacitySchedule is capacity's schedule and where it stands. It begins at
// the first capacity request after a reset (any supplier): each supplier
// serves C calls at once from each step's FromMs on, the whole repeating
// every PeriodMs (times in ms after --latency-scale); a call's base latency
// is a seeded draw in BaseMs, stretched by n/C when its supplier holds n > C
// calls with it; beyond ShedBeyond × C held, a call is answered 503 at once.
// ElapsedMs (within the period), Step and C are where it stands now (null
// before it began); InFlight is each supplier's capacity calls now, Queued
// the requests that arrived beyond C (slower), Shed those answered 503.
type CapacitySchedule struct {
	Seed         uint64         `json:"seed"`
	Steps        []CapacityStep `json:"steps"`
	PeriodMs     int64          `json:"period_ms"`
	BaseMs       [2]int64       `json:"base_ms"`
	ShedBeyond   int            `json:"shed_beyond"`
	LatencyScale float64        `json:"latency_scale"`
	ElapsedMs    *int64         `json:"elapsed_ms"`
	Step         *int           `json:"step"`
	C            *int           `json:"c"`
	InFlight     PerSupplier    `json:"in_flight"`
	Queued       int64          `json:"queued"`
	Shed         int64          `json:"shed"`
}

// A CapacityStep is one step of capacity's schedule: C calls at once from FromMs on.
type CapacityStep struct {
	FromMs int64 `json:"from_ms"`
	C      int   `json:"c"`
}

// BrownoutSchedule is brownout's schedule. It begins at boreal's first
// brownout request after a reset: healthy until StartMs, down (Shape) until
// EndMs, healed after; the times are in ms after --latency-scale.
// ElapsedMs is the time since it began and Phase where that falls (both
// null before it began). Failed counts boreal's requests inside the window.
type BrownoutSchedule struct {
	Seed         uint64        `json:"seed"`
	Shape        BrownoutShape `json:"shape"`
	StartMs      int64         `json:"start_ms"`
	EndMs        int64         `json:"end_ms"`
	HangMs       int64         `json:"hang_ms"`
	LatencyScale float64       `json:"latency_scale"`
	ElapsedMs    *int64        `json:"elapsed_ms"`
	Phase        *string       `json:"phase"`
	Failed       int64         `json:"failed"`
}

// TailParams are tail's numbers: the seed of its draws, the share of
// stragglers (in percent) and the latency ranges of fast requests and of
// stragglers, in ms before --latency-scale (LatencyScale is the scale).
type TailParams struct {
	Seed          uint64   `json:"seed"`
	StragglerPct  float64  `json:"straggler_pct"`
	FastMs        [2]int64 `json:"fast_ms"`
	StragglerMs   [2]int64 `json:"straggler_ms"`
	LatencyScale  float64  `json:"latency_scale"`
	EverySupplier bool     `json:"every_supplier"`
}

// CostParams are costlimited's numbers: at most MaxCost units of cost (a
// request's qty) admitted in any WindowMs.
type CostParams struct {
	MaxCost  int64 `json:"max_cost"`
	WindowMs int64 `json:"window_ms"`
	MaxQty   int64 `json:"max_qty"`
}

// PerSupplier counts supplier requests (or one request ID's attempts) by supplier.
type PerSupplier struct {
	Atlas  int64 `json:"atlas"`
	Boreal int64 `json:"boreal"`
	Cedar  int64 `json:"cedar"`
}

// PartnerPaths counts partner requests by path. /health is counted only
// here: it is not work, so it is not in total or partner.
type PartnerPaths struct {
	Health int64 `json:"/health"`
	Call   int64 `json:"/call"`
	Budget int64 `json:"/budget"`
}

// BlackholeStats is what the lab can see of connection attempts on the
// blackhole. SYNDrops counts SYN segments the kernel dropped at its full
// accept queue since the last reset (Linux's per-socket drop counter, read
// with SO_MEMINFO): a connect attempt sends one at once and one more per
// retransmission (the first about 1 s later), so a connect with a timeout
// under 1 s counts exactly 1. Nil when the kernel does not report it.
type BlackholeStats struct {
	Addr     string `json:"addr"`
	SYNDrops *int64 `json:"syn_drops"`
}

// TrackedKeys reports how many keys each bounded per-key table remembers,
// and the bounds.
type TrackedKeys struct {
	Scenario    int64 `json:"scenario"` // flaky and reset request IDs
	Partner     int64 `json:"partner"`  // partner keys (/call and /budget)
	Requests    int64 `json:"requests"` // request IDs with attempts
	Max         int64 `json:"max_per_table"`
	MaxKeyBytes int64 `json:"max_key_bytes"`
	MaxLog      int64 `json:"max_log_per_key"`
}

// Snapshot returns the current statistics (what GET /stats serves): one
// consistent view of one state, read in the reverse of the order requests
// write it (see counters), so per_status never sums above total.
func (p *Provider) Snapshot() Stats {
	// The gauge as a client sees it: not the handlers whose client has
	// hung up and that have not noticed yet (see flights).
	active := p.flights.live(-1)
	st := p.state.Load()
	out := Stats{PerStatus: map[string]int64{}}
	out.Resets = st.resets.Load()
	out.CostLimited = st.costLimited.Load()
	out.RateLimited = st.rateLimited.Load()
	for code := range st.perStatus {
		if n := st.perStatus[code].Load(); n > 0 {
			out.PerStatus[strconv.Itoa(code)] = n
		}
	}
	out.LostCancelled = st.lostCancelled.Load()
	out.ClientGone = st.clientGone.Load()
	out.Abandoned = st.abandoned.Load()
	out.CostAdmitted = st.costAdmitted.Load()
	out.Stragglers = st.stragglers.Load()
	out.Scenarios.Brownout = p.brownoutSchedule(st)
	out.Scenarios.Capacity = p.capacitySchedule(st)
	out.EarlyRetries = st.earlyRetries.Load()
	out.Hedged = st.hedged.Load()
	out.PartnerPaths = PartnerPaths{
		Health: st.partnerPaths[pathHealth].Load(), Call: st.partnerPaths[pathCall].Load(), Budget: st.partnerPaths[pathBudget].Load(),
	}
	out.Partner = st.partnerReqs.Load()
	out.PerSupplier = PerSupplier{
		Atlas: st.perSupplier[0].Load(), Boreal: st.perSupplier[1].Load(), Cedar: st.perSupplier[2].Load(),
	}
	out.Total = st.total.Load()
	out.Active = active
	out.MaxActive = max(st.maxActive.Load(), active) // a request between its two updates
	if bh := p.blackhole; bh != nil {
		out.Blackhole = &BlackholeStats{Addr: bh.Addr()}
		if n, err := bh.synDrops(); err == nil {
			d := int64(n - st.blackholeBase) // uint32 arithmetic: survives the counter wrapping
			out.Blackhole.SYNDrops = &d
		}
	}
	out.TrackedKeys = TrackedKeys{
		Scenario: int64(st.seen.len()), Partner: int64(st.partners.len()), Requests: int64(st.ids.len()),
		Max: int64(p.maxKeys), MaxKeyBytes: MaxKeyBytes, MaxLog: MaxLogPerKey,
	}
	out.Scenarios.CostLimited = CostParams{MaxCost: costMax, WindowMs: costWindow.Milliseconds(), MaxQty: MaxQty}
	out.Scenarios.Tail = TailParams{
		Seed: p.seed, StragglerPct: tailStragglerPPM / 1e4, LatencyScale: p.scale, EverySupplier: true,
		FastMs:      [2]int64{tailFastMin.Milliseconds(), tailFastMax.Milliseconds()},
		StragglerMs: [2]int64{tailSlowMin.Milliseconds(), tailSlowMax.Milliseconds()},
	}
	return out
}

// RequestStats is the body of GET /stats/requests?id=.
type RequestStats struct {
	ID       string      `json:"id"`
	Attempts PerSupplier `json:"attempts"` // every attempt, per supplier
	Log      AttemptLog  `json:"log"`      // the first MaxLogPerKey attempts, per supplier
	// LogDropped counts the attempts after the first MaxLogPerKey: counted
	// in Attempts, not logged.
	LogDropped int64 `json:"log_dropped"`
}

// AttemptLog lists one request ID's attempts per supplier, in arrival order.
type AttemptLog struct {
	Atlas  []Attempt `json:"atlas"`
	Boreal []Attempt `json:"boreal"`
	Cedar  []Attempt `json:"cedar"`
}

// An Attempt is one supplier request of a request ID.
type Attempt struct {
	ArrivalMs  float64 `json:"arrival_ms"`  // since the ID's first request (any supplier)
	Status     int     `json:"status"`      // 0: none written (client gone, reset, still running)
	End        string  `json:"end"`         // running, done, client_gone, abandoned or reset
	DurationMs float64 `json:"duration_ms"` // arrival to end (so far, while running)
	// RetryAfterMs is the Retry-After-Ms a 429 gave (omitted otherwise).
	RetryAfterMs int64 `json:"retry_after_ms,omitempty"`
	// BudgetMs is the X-Budget-Ms the attempt carried (omitted without one;
	// recorded when the attempt ends).
	BudgetMs *int64 `json:"budget_ms,omitempty"`
	// Hedged: it arrived while another attempt of the ID ran at this
	// supplier; LostCancelled: its client hung up after such a sibling
	// answered (both omitted when false).
	Hedged        bool `json:"hedged,omitempty"`
	LostCancelled bool `json:"lost_cancelled,omitempty"`
}

// requestStats serves GET /stats/requests?id=: attempts per supplier for
// one X-Request-ID, and the log of each.
func (p *Provider) requestStats(w http.ResponseWriter, r *http.Request) {
	var v [1]string
	present, err := readQuery(r.URL.RawQuery, []string{"id"}, v[:])
	if err == nil && (present == 0 || v[0] == "") {
		err = badParamf("query parameter id (an X-Request-ID) is required")
	}
	if err == nil {
		err = keyParam("id", v[0])
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_parameter", err.Error())
		return
	}
	out := RequestStats{ID: v[0], Log: AttemptLog{Atlas: []Attempt{}, Boreal: []Attempt{}, Cedar: []Attempt{}}}
	now := time.Now()
	p.state.Load().ids.view(v[0], func(rec *idRecord) {
		out.Attempts = PerSupplier{Atlas: rec.attempts[0], Boreal: rec.attempts[1], Cedar: rec.attempts[2]}
		out.LogDropped = rec.log.dropped
		for _, e := range rec.log.entries {
			a := Attempt{Status: int(e.status), End: e.end.String(), RetryAfterMs: e.retryAfterMs, Hedged: e.hedged, LostCancelled: e.lost}
			a.ArrivalMs, a.DurationMs = rec.log.entryTimes(e, now)
			if e.budgetMs >= 0 && e.end != endRunning {
				b := e.budgetMs
				a.BudgetMs = &b
			}
			lists := [...]*[]Attempt{&out.Log.Atlas, &out.Log.Boreal, &out.Log.Cedar}
			*lists[e.where] = append(*lists[e.where], a)
		}
	})
	writeJSON(w, http.StatusOK, out)
}

// statsHandler serves GET /stats.
func (p *Provider) statsHandler(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, p.Snapshot())
}

// reset serves POST /reset.
func (p *Provider) reset(w http.ResponseWriter, r *http.Request) {
	p.Reset()
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// brownoutSchedule reads brownout's schedule as of now.
func (p *Provider) brownoutSchedule(st *state) BrownoutSchedule {
	start, end := p.scaled(brownoutStart), p.scaled(brownoutEnd)
	b := BrownoutSchedule{
		Seed: p.seed, Shape: p.brownoutShape, LatencyScale: p.scale,
		StartMs: start.Milliseconds(), EndMs: end.Milliseconds(), HangMs: p.scaled(brownoutHang).Milliseconds(),
		Failed: st.brownoutFailed.Load(),
	}
	st.outageMu.Lock()
	began := st.brownoutBegan
	st.outageMu.Unlock()
	if !began.IsZero() {
		at := time.Since(began)
		ms, phase := at.Milliseconds(), brownoutPhase(at, start, end)
		b.ElapsedMs, b.Phase = &ms, &phase
	}
	return b
}

// capacitySchedule reads capacity's schedule as of now.
func (p *Provider) capacitySchedule(st *state) CapacitySchedule {
	c := CapacitySchedule{
		Seed: p.seed, PeriodMs: p.scaled(capacityPeriod).Milliseconds(), ShedBeyond: capacityShed, LatencyScale: p.scale,
		BaseMs: [2]int64{p.scaled(capacityBaseMin).Milliseconds(), p.scaled(capacityBaseMax).Milliseconds()},
		Shed:   st.capacityShed.Load(), Queued: st.capacityQueued.Load(),
		InFlight: PerSupplier{Atlas: st.capacityInFlight[0].Load(), Boreal: st.capacityInFlight[1].Load(),
			Cedar: st.capacityInFlight[2].Load()},
	}
	for _, s := range capacitySteps {
		c.Steps = append(c.Steps, CapacityStep{FromMs: p.scaled(s.from).Milliseconds(), C: s.c})
	}
	st.outageMu.Lock()
	began := st.capacityBegan
	st.outageMu.Unlock()
	if !began.IsZero() {
		capC, step, in := p.capacityAt(time.Since(began))
		ms := in.Milliseconds()
		c.ElapsedMs, c.Step, c.C = &ms, &step, &capC
	}
	return c
}

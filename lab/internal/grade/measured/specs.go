package measured

// A spec names one property: what it demands and, when the demand alone
// does not say it, what a failure means.
type spec struct {
	name     string
	demand   string // what the property demands, shown for every property
	failure  string // what a failure means, added after ", but " when it fails; may be ""
	required bool
}

// sentence is the spec as one sentence for a failed property: the demand and
// what went wrong.
func (s spec) sentence() string {
	if s.failure == "" {
		return s.demand
	}
	return s.demand + ", but " + s.failure
}

// specs is every property, in report order: grouped by tool (its build
// first), then the plan and the report. Names are stable: tests and the lab
// check command may refer to them.
var specs = []spec{
	{"build_call", "call/ must build with go build", "", true},
	{"call_json", `call must print one JSON object {"ok","status","phase","elapsed_ms","error"}`, "", true},
	{"call_done", "a 200 must come back as ok true, status 200, phase done", "", true},
	{"call_http_error", "a received 503 is phase done with ok false and status 503: the partner did answer", "", true},
	{"call_read_limit", "the read limit must cut a slow answer after --read (0.5 s here) in phase read, within 470–1200 ms by the grader's clock", "", true},
	{"call_body_limit", "the read limit must cover the body: headers sent at once and a body trickled over 2 s (/call?drip_ms=2000) must be cut after --read 0.5 in phase read, within 470–1200 ms", "", true},
	{"call_connect_phase", "a connect that gets no answer (the blackhole) must end in phase connect", "", true},
	{"call_connect_limit", "the connect limit must be its own short timeout (--connect 0.3 here: the run ends within 270–1000 ms)", "reaching the blackhole waited longer, as if one timeout served both phases", true},
	{"call_refused", "a refused connection must end at once in phase connect: the partner was never reached", "", true},
	{"call_elapsed_honest", "call's elapsed_ms must be the call's time by the grader's clock: at most its process's wall time (+2 ms of rounding), at least the partner's delay or the limit that cut the call (−30 ms), and at least half the wall time less 300 ms", "", true},

	{"call_model", "every field of every call run (each parameter on both sides of its boundary, received 404, 429 and 503, the defaults, and cases drawn from every class of target and limits) must be what the contract makes of that run: ok, status, phase, error and elapsed_ms, by the grader's clock", "", true},

	{"build_deadline", "deadline/ must build with go build", "", true},
	{"deadline_json", `deadline must print {"budget_ms","calls":[{url,ok,phase,elapsed_ms,read_timeout_ms}],"skipped","total_ms","exceeded"} with one call per --url`, "", true},
	{"deadline_read_limit", "the read limit must be the budget left when the call starts, by the partner's clock: the budget less the time since the first call arrived, +15/−500 ms", "a later call got more than was left, as if every call got the full budget", true},
	{"deadline_budget_cut", "a slow call must be cut when the budget runs out (phase read, exceeded true, the run ends within its budget + 700 ms)", "the run went past its budget", true},
	{"deadline_floor", "a call with less than --min-ms left must not start (phase no_budget, elapsed 0, counted in skipped)", "a call was started with no budget left", true},
	{"deadline_connect_budget", "pointed at the blackhole with --connect 6 and a budget of 800 ms, the connect phase must end with the budget (phase connect, the run within 770–1500 ms) and the next call must not start (no_budget)", "", true},
	{"deadline_times_honest", "deadline's times must agree with the grader's clock and the partner's: total_ms at most the process's wall time (+2 ms) and at least half of it less 300 ms, the calls' elapsed_ms adding up to no more than total_ms, and no answered call shorter than the partner's delay", "", true},

	{"deadline_model", "every field of every deadline run (all calls answered, none, the blackhole under budgets above and below the connect limit, a received 404, no optional flags, and cases drawn from every --min-ms relation (none, below, at and above --budget-ms) and every partner behaviour) must be what the contract makes of that run: budget_ms, each call's url, ok, phase, elapsed_ms and read_timeout_ms, skipped, total_ms and exceeded (false as well as true)", "", true},

	{"build_retry", "retry/ must build with go build", "", true},
	{"retry_json", `retry must print {"ok","attempts","elapsed_ms","waits_ms":[...],"stopped_reason"}`, "", true},
	{"retry_recovers", "a call that fails once must be retried and succeed: ok true, 2 attempts, one wait, stopped_reason ok", "", true},
	{"retry_attempts", "retries must stop at --attempts (--base-ms left to its default, 100): ok false, that many attempts, one wait fewer, stopped_reason attempts", "", true},
	{"retry_wait_caps", "the wait before attempt k+1 must be drawn from [0, base·2^(k-1)], a cap that doubles with each attempt; a measured wait may exceed its cap by 25 ms of timer lateness (more only by as long as the tool's threads waited for a CPU)", "a wait was larger than its cap", true},
	{"retry_waits_charged", "waits must be paid from the budget: stop with stopped_reason budget before a wait would leave no room for a call (the run within its budget + 700 ms)", "the run went past its budget", true},
	{"retry_waits_real", "waits_ms must be the waits really slept: by the partner's clock, each attempt arrives at least the call's delay plus the reported wait (−2 ms) after the one before", "the run was shorter than its calls plus its reported waits", true},
	{"retry_jitter", "waits must be full jitter, uniform in [0, cap], a new draw for each wait: of the 60 waits of 20 clients failing together (caps 200, 400, 800 ms), each quarter of the cap must hold at least 3, at most half of the clients may wait the same share of every cap, and their first waits must differ (a correct tool fails this with probability under 3e-5)", "", true},
	{"retry_wait_drawn", "whether a call still fits after a wait must be decided from the wait drawn, not from its cap: of 10 clients failing at once with --attempts 2 and a cap over the budget less --min-ms, those whose draw leaves room (about 3 in 4) must wait and make their second attempt (a correct tool fails this with probability under 1e-6)", "", true},
	{"retry_floor", "an attempt must not start with less than --min-ms left: 100 ms calls, a 1000 ms budget and --min-ms 700 allow at most 4 attempts at the partner, then stopped_reason budget", "", true},
	{"retry_read_left", "each attempt's read limit must be the budget left, not the whole budget: a 700 ms call failing once under 1000 ms must have its second attempt cut (ok false, stopped_reason budget, within 1700 ms)", "", true},
	{"retry_elapsed_honest", "retry's elapsed_ms must agree with the grader's clock and the partner's: at most its process's wall time (+2 ms), at least from the first attempt's arrival to the answer before the last attempt, and at least half the wall time less 300 ms", "", true},

	{"retry_model", "every field of every retry run (recovering, out of attempts, stopped by the budget, by the floor, no optional flags, the blackhole under budgets above and below the connect limit, and cases drawn from every partner behaviour, --min-ms relation and size of cap) must be what the contract makes of that run: ok, attempts (as many as the partner received), waits_ms (one fewer, each within its cap, paid from the budget, fitting between the partner's arrivals), stopped_reason and elapsed_ms", "", true},

	{"build_fanout", "fanout/ must build with go build", "", true},
	{"fanout_json", `fanout must print {"calls":[{"sent_budget_ms","received","elapsed_ms"}],...} with --n calls`, "", true},
	{"fanout_header", "every call must send the budget left as X-Budget-Ms, as the partner's own log records it, equal (±1 ms) to the sent_budget_ms printed", "", true},
	{"fanout_shrinking", "the calls must go one after another, each carrying the budget left by the partner's log: the first within 150 ms of --budget-ms, each next one at least 200 ms less and within 25 ms (50 ms when the machine held the tool's threads back that long, never for a tool that kept the CPUs busy itself) of the previous less the time between their arrivals", "", true},
	{"fanout_budget_cut", "a fanout that runs out of budget (500 ms, four calls of 200 ms) must cut the call it cannot finish (never read an answer after its budget: up to 100 ms late is a timing miss, more a failure) and send none with nothing left, ending within 1200 ms", "", true},
	{"fanout_elapsed_honest", "fanout's elapsed_ms must agree with the grader's clock and the partner's: each call at most the process's wall time, together at most that (+2 ms) and at least half of it less 300 ms, and no answered call under the partner's 200 ms", "", true},

	{"fanout_model", "every field of every fanout run (a budget that fits the calls, one that runs out, and one drawn from each class of where the budget ends: under the first call's work, inside a later call, past every call; --connect left out, short and long) must be what the contract makes of that run: each call's sent_budget_ms the budget left by the grader's clock from the tool's start to the call's arrival, received what the partner echoed, elapsed_ms within the partner's work and the run", "", true},

	{"build_probe", "probe/ must build with go build", "", true},
	{"probe_rows", `probe must print three rows {"kind","target","elapsed_ms","error"} (a JSON array, or an object with them in "rows"): refused, connect_timeout, read_timeout`, "", true},
	{"probe_targets", "probe must aim refused at a closed loopback port, connect_timeout at --blackhole and read_timeout at the partner --base", "", true},
	{"probe_timings", "a refused connection must fail at once, while a connect timeout and a read timeout each wait for their limit; the rows must add up to the probe's run by the grader's clock (at most its wall time + 2 ms, at least half of it less 300 ms)", "", true},
	{"probe_contacted", "probe must really make its calls, as the provider saw them: a request at the partner, a SYN dropped at the blackhole; a closed port keeps no record, so the refused row is judged by its timing and by its target refusing a connection now", "", true},
	{"probe_saved", "probe.json must be your probe's saved output (same rows, loopback targets) and plausible against the probe the grader runs: refused within 100 ms, each timeout at least 75 % of the live one less 50 ms and at most twice it plus 500 ms", "", true},

	{"probe_model", "every field of probe's rows must be what the contract makes of them: the three kinds once each, each target where it belongs, an error text for each, elapsed_ms within the limits and the run", "", true},

	{"plan_shape", `budget_plan.json must have total_ms, reserve_ms, worst_case_ms and at least 3 calls with name, budget_ms, max_attempts`, "", true},
	{"plan_reserve", "the plan's reserve_ms must be at least 100 ms for our own work (encoding, rendering)", "", true},
	{"plan_worst_case_sum", "the plan's worst_case_ms must be the sum of the call budgets plus the reserve", "", true},
	{"plan_fits", "the plan's worst case (call budgets + reserve) must fit in total_ms", "it is larger", true},

	{"report_sections", "budget_report.md must have four sections with numbers: what eats the time now; how the segments are split; the retries' share; what we do when over budget", "", true},
	{"report_quotes_plan", "the report must quote the plan's numbers: total_ms, reserve_ms, worst_case_ms and each call's budget_ms", "", true},
	{"report_quotes_probe", "the report must quote the probe from probe.json: refused, connect timeout and read timeout each with its time in ms", "", true},
	{"report_retry_share", "the retries' share must add up: every sum it writes out is right, and each call of the plan that retries has its worst case written as attempts × per-attempt limit + the wait caps (e.g. 2 × 300 ms + 100 ms = 700 ms), within its budget_ms", "", true},
}

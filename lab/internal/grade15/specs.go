package grade15

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

// specs is every property, in report order. Names are stable: tests and
// the lab check command may refer to them.
var specs = []spec{
	{"build_call", "call/ must build with go build", "", true},
	{"build_deadline", "deadline/ must build with go build", "", true},
	{"build_retry", "retry/ must build with go build", "", true},
	{"build_fanout", "fanout/ must build with go build", "", true},
	{"build_probe", "probe/ must build with go build", "", true},

	{"call_json", `call must print one JSON object {"ok","status","phase","elapsed_ms","error"}`, "", true},
	{"call_done", "a 200 must come back as ok true, status 200, phase done", "", true},
	{"call_http_error", "a received 503 is phase done with ok false and status 503: the partner did answer", "", true},
	{"call_read_limit", "the read limit must cut a slow answer after --read (0.5 s here) in phase read", "", true},
	{"call_connect_phase", "a connect that gets no answer (the blackhole) must end in phase connect", "", true},
	{"call_connect_limit", "the connect limit must be its own short timeout (--connect 0.3 here)", "reaching the blackhole waited longer, as if one timeout served both phases", true},
	{"call_refused", "a refused connection must end at once in phase connect: the partner was never reached", "", true},

	{"deadline_json", `deadline must print {"budget_ms","calls":[{url,ok,phase,elapsed_ms,read_timeout_ms}],"skipped","total_ms","exceeded"} with one call per --url`, "", true},
	{"deadline_read_limit", "the read limit must be the budget left when the call starts", "a later call got more than was left, as if every call got the full budget", true},
	{"deadline_budget_cut", "a slow call must be cut when the budget runs out (phase read, exceeded true, the run ends within its budget)", "the run went past its budget", true},
	{"deadline_floor", "a call with less than --min-ms left must not start (phase no_budget, elapsed 0, counted in skipped)", "a call was started with no budget left", true},

	{"retry_json", `retry must print {"ok","attempts","elapsed_ms","waits_ms":[...],"stopped_reason"}`, "", true},
	{"retry_recovers", "a call that fails once must be retried and succeed: ok true, 2 attempts, one wait, stopped_reason ok", "", true},
	{"retry_attempts", "retries must stop at --attempts: ok false, that many attempts, one wait fewer, stopped_reason attempts", "", true},
	{"retry_wait_caps", "the wait before attempt k+1 must be drawn from [0, base·2^(k-1)]", "a wait was larger than its cap", true},
	{"retry_waits_charged", "waits must be paid from the budget: stop with stopped_reason budget before a wait would leave no room for a call", "the run went past its budget", true},
	{"retry_waits_real", "waits_ms must be the waits really slept", "the run was shorter than its calls plus its reported waits", true},
	{"retry_jitter", "waits should be random (full jitter) so clients that failed together do not return together", "every wait was its cap", false},

	{"fanout_json", `fanout must print {"calls":[{"sent_budget_ms","received","elapsed_ms"}],...} with --n calls`, "", true},
	{"fanout_header", "every call must send the budget left as X-Budget-Ms", "the partner did not receive it", true},
	{"fanout_shrinking", "X-Budget-Ms must be the budget left, starting near --budget-ms and shrinking by each call's time", "it did not", true},

	{"probe_rows", `probe must print three rows {"kind","target","elapsed_ms","error"}: refused, connect_timeout, read_timeout`, "", true},
	{"probe_targets", "probe must aim refused at a closed loopback port, connect_timeout at --blackhole and read_timeout at the partner --base", "", true},
	{"probe_timings", "a refused connection must fail at once, while a connect timeout and a read timeout each wait for their limit", "", true},

	{"plan_shape", `budget_plan.json must have total_ms, reserve_ms, worst_case_ms and at least 3 calls with name, budget_ms, max_attempts`, "", true},
	{"plan_reserve", "the plan's reserve_ms must be at least 100 ms for our own work (encoding, rendering)", "", true},
	{"plan_worst_case_sum", "the plan's worst_case_ms must be the sum of the call budgets plus the reserve", "", true},
	{"plan_fits", "the plan's worst case (call budgets + reserve) must fit in total_ms", "it is larger", true},

	{"report_sections", "budget_report.md must have four sections with numbers: what eats the time now; how the segments are split; the retries' share; what we do when over budget", "", true},
	{"report_quotes_plan", "the report must quote the plan's numbers: total_ms, reserve_ms, worst_case_ms and each call's budget_ms", "", true},
	{"report_quotes_probe", "the report must quote the probe: refused, connect timeout and read timeout each with a time in ms", "", true},
}

package budget

import "quoteflowlab.dev/kit/msg"

// A spec names one property. Its words are in lab's message catalog
// (kit/msg/catalog), in English and in Chinese: spec.NAME is what
// the property demands, shown for every property; spec_fail.NAME, when the
// demand alone does not say it, what a failure means, added after ", but ".
type spec struct {
	name     string
	required bool
}

// demand is what the property demands, in the language of lab's messages.
func (s spec) demand() string { return msg.T("spec." + s.name) }

// failure is what a failure means, or "" when the demand says it.
func (s spec) failure() string {
	if !msg.Has(msg.English, "spec_fail."+s.name) {
		return ""
	}
	return msg.T("spec_fail." + s.name)
}

// joinBut joins a demand and what went wrong.
func joinBut(demand, what string) string { return demand + msg.T("meas.but") + what }

// sentence is the spec as one sentence for a failed property: the demand and
// what went wrong.
func (s spec) sentence() string {
	if s.failure() == "" {
		return s.demand()
	}
	return joinBut(s.demand(), s.failure())
}

// specs is every property, in report order: grouped by tool (its build
// first), then the plan and the report. Names are stable: tests, the lab
// check command and the catalog's spec.NAME messages refer to them.
var specs = []spec{
	{"build_call", true},
	{"call_json", true},
	{"call_done", true},
	{"call_http_error", true},
	{"call_read_limit", true},
	{"call_body_limit", true},
	{"call_connect_phase", true},
	{"call_connect_limit", true},
	{"call_refused", true},
	{"call_elapsed_honest", true},

	{"call_model", true},

	{"build_deadline", true},
	{"deadline_json", true},
	{"deadline_read_limit", true},
	{"deadline_budget_cut", true},
	{"deadline_floor", true},
	{"deadline_connect_budget", true},
	{"deadline_times_honest", true},

	{"deadline_model", true},

	{"build_retry", true},
	{"retry_json", true},
	{"retry_recovers", true},
	{"retry_attempts", true},
	{"retry_wait_caps", true},
	{"retry_waits_charged", true},
	{"retry_waits_real", true},
	{"retry_jitter", true},
	{"retry_wait_drawn", true},
	{"retry_floor", true},
	{"retry_read_left", true},
	{"retry_elapsed_honest", true},

	{"retry_model", true},

	{"build_fanout", true},
	{"fanout_json", true},
	{"fanout_header", true},
	{"fanout_shrinking", true},
	{"fanout_budget_cut", true},
	{"fanout_elapsed_honest", true},

	{"fanout_model", true},

	{"build_probe", true},
	{"probe_rows", true},
	{"probe_targets", true},
	{"probe_timings", true},
	{"probe_contacted", true},
	{"probe_saved", true},

	{"probe_model", true},

	{"plan_shape", true},
	{"plan_reserve", true},
	{"plan_worst_case_sum", true},
	{"plan_fits", true},

	{"report_sections", true},
	{"report_quotes_plan", true},
	{"report_quotes_probe", true},
	{"report_retry_share", true},
}

package budget

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

type planCall struct {
	Name        string   `json:"name"`
	BudgetMS    *float64 `json:"budget_ms"`
	MaxAttempts *float64 `json:"max_attempts"`
}

type plan struct {
	TotalMS     *float64   `json:"total_ms"`
	ReserveMS   *float64   `json:"reserve_ms"`
	WorstCaseMS *float64   `json:"worst_case_ms"`
	Calls       []planCall `json:"calls"`
}

// checkPlanAndReport checks budget_plan.json and budget_report.md.
func (g *grader) checkPlanAndReport() {
	p, ok := g.checkPlan()
	g.checkReport(p, ok)
}

// checkPlan checks the plan's shape and arithmetic; it returns the plan and
// whether its shape is valid.
func (g *grader) checkPlan() (plan, bool) {
	var p plan
	data, err := g.readAnswerFile(PlanFile)
	if err == nil {
		err = json.Unmarshal(data, &p)
	}
	if err == nil {
		err = planShape(p)
	}
	if err != nil {
		g.set("plan_shape", false, "%s: %s", PlanFile, err)
		g.failAllOf("the plan is not valid (see plan_shape), so its arithmetic cannot be checked", "plan_reserve", "plan_worst_case_sum", "plan_fits")
		return p, false
	}
	g.set("plan_shape", true, "%d calls", len(p.Calls))

	total, reserve, worst := *p.TotalMS, *p.ReserveMS, *p.WorstCaseMS
	g.set("plan_reserve", reserve >= 100, "reserve_ms %v", reserve)
	calls := 0.0
	for _, c := range p.Calls {
		calls += *c.BudgetMS
	}
	g.set("plan_worst_case_sum", math.Abs(worst-(calls+reserve)) < 0.5,
		"worst_case_ms %v; call budgets %v + reserve %v = %v", worst, calls, reserve, calls+reserve)
	g.set("plan_fits", worst <= total && calls+reserve <= total,
		"worst case %v (call budgets + reserve %v) against total_ms %v", worst, calls+reserve, total)
	return p, true
}

// planShape reports what the plan lacks.
func planShape(p plan) error {
	switch {
	case p.TotalMS == nil || *p.TotalMS <= 0:
		return fmt.Errorf("total_ms must be a positive number")
	case p.ReserveMS == nil:
		return fmt.Errorf("reserve_ms is missing")
	case p.WorstCaseMS == nil:
		return fmt.Errorf("worst_case_ms is missing")
	case len(p.Calls) < 3:
		return fmt.Errorf("%d calls, want at least 3", len(p.Calls))
	}
	for i, c := range p.Calls {
		switch {
		case strings.TrimSpace(c.Name) == "":
			return fmt.Errorf("calls[%d] has no name", i)
		case c.BudgetMS == nil || *c.BudgetMS <= 0:
			return fmt.Errorf("calls[%d] (%s): budget_ms must be positive", i, c.Name)
		case c.MaxAttempts == nil || *c.MaxAttempts < 1 || *c.MaxAttempts != math.Trunc(*c.MaxAttempts):
			return fmt.Errorf("calls[%d] (%s): max_attempts must be a whole number ≥ 1", i, c.Name)
		}
	}
	return nil
}

// The report's four sections, found by a keyword in their heading.
var sections = []struct {
	name string
	re   *regexp.Regexp
}{
	{"what eats the time now", regexp.MustCompile(`(?i)\beat`)},
	{"how the segments are split", regexp.MustCompile(`(?i)split|segment`)},
	{"the retries' share", regexp.MustCompile(`(?i)retr`)},
	{"what we do when over budget", regexp.MustCompile(`(?i)over.*budget|budget.*(over|exceed|run)`)},
}

var (
	headingRE = regexp.MustCompile(`^#{2,3}\s+(.+)$`)
	digitRE   = regexp.MustCompile(`\d`)
	msRE      = regexp.MustCompile(`\d+(\.\d+)?\s*ms`)
	probeRE   = map[string]*regexp.Regexp{
		"refused":         regexp.MustCompile(`(?i)refus`),
		"connect timeout": regexp.MustCompile(`(?i)connect[ _-]?time`),
		"read timeout":    regexp.MustCompile(`(?i)read[ _-]?time`),
	}
)

// checkReport checks the report's sections and that it quotes the plan and the probe.
func (g *grader) checkReport(p plan, planOK bool) {
	all := []string{"report_sections", "report_quotes_plan", "report_quotes_probe", "report_retry_share"}
	data, err := g.readAnswerFile(ReportFile)
	if err != nil {
		g.failAllOf(ReportFile+": "+err.Error(), all...)
		return
	}
	text := string(data)
	bodies := splitSections(text)
	var missing []string
	for _, s := range sections {
		body, found := "", false
		for heading, b := range bodies {
			if s.re.MatchString(heading) {
				body, found = b, true
				break
			}
		}
		switch {
		case !found:
			missing = append(missing, fmt.Sprintf("no section %q", s.name))
		case strings.Contains(body, "TODO") || !digitRE.MatchString(body):
			missing = append(missing, fmt.Sprintf("section %q still has a TODO or no numbers", s.name))
		}
	}
	g.set("report_sections", len(missing) == 0, "%s", joinOr(missing, "four sections with numbers"))

	if !planOK {
		g.failAllOf("the plan is not valid (see plan_shape), so its numbers cannot be looked for in the report", "report_quotes_plan")
	} else {
		var absent []string
		quote := func(name string, v float64) {
			if !hasNumber(text, v) {
				absent = append(absent, fmt.Sprintf("%s %v", name, v))
			}
		}
		quote("total_ms", *p.TotalMS)
		quote("reserve_ms", *p.ReserveMS)
		quote("worst_case_ms", *p.WorstCaseMS)
		for _, c := range p.Calls {
			quote(c.Name+" budget_ms", *c.BudgetMS)
		}
		g.set("report_quotes_plan", len(absent) == 0, "%s", joinOr(absentList(absent), "the plan's numbers are quoted"))
	}

	var v verdict
	var unquoted []string
	for _, kind := range []string{"refused", "connect timeout", "read timeout"} {
		if !quotedWithMS(text, probeRE[kind]) {
			unquoted = append(unquoted, kind)
		}
	}
	v.need(len(unquoted) == 0, "no line names %s with a time in ms", strings.Join(unquoted, ", "))
	if missing := g.unquotedProbeFile(text); missing != "" {
		v.need(false, "%s", missing)
	}
	g.judge("report_quotes_probe", v, "%s", joinOr(v.buts, "refused, connect timeout and read timeout are quoted with the ms of "+ProbeFile))

	retries := ""
	for heading, b := range bodies {
		if sections[2].re.MatchString(heading) {
			retries = b
		}
	}
	if !planOK {
		g.failAllOf("the plan is not valid (see plan_shape), so the retries' share cannot be checked against it", "report_retry_share")
		return
	}
	g.checkRetryShare(p, retries)
}

// unquotedProbeFile checks that the report quotes the elapsed_ms of each
// row of the answer's saved probe run, probe.json; it says what is missing.
func (g *grader) unquotedProbeFile(text string) string {
	data, err := g.readAnswerFile(ProbeFile)
	if err != nil {
		return "there is no " + ProbeFile + " (your probe's saved output) for it to quote"
	}
	raws, err := probeRows(firstValue(data))
	if err != nil {
		return ProbeFile + ": " + err.Error()
	}
	var missing []string
	for _, raw := range raws {
		var row probeRow
		if json.Unmarshal(raw, &row) != nil {
			continue
		}
		if !hasNumber(text, row.ElapsedMS) && !hasNumber(text, math.Round(row.ElapsedMS)) {
			missing = append(missing, fmt.Sprintf("%s %v ms", row.Kind, row.ElapsedMS))
		}
	}
	if len(missing) > 0 {
		return "the numbers of " + ProbeFile + " are not in it: " + strings.Join(missing, ", ")
	}
	return ""
}

func absentList(absent []string) []string {
	if len(absent) == 0 {
		return nil
	}
	return []string{"not found in the report: " + strings.Join(absent, ", ")}
}

// splitSections maps each ## or ### heading to the text under it.
func splitSections(text string) map[string]string {
	out := map[string]string{}
	heading := ""
	for line := range strings.Lines(text) {
		if m := headingRE.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil {
			heading = m[1]
			out[heading] = ""
			continue
		}
		if heading != "" {
			out[heading] += line
		}
	}
	return out
}

// hasNumber reports whether text contains v as a number of its own (1200,
// 1 200 or 1,200 not needed: the plain digits as in the plan): 501 is not
// found in 501.8, nor 500.8 in 1500.8.
func hasNumber(text string, v float64) bool {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	re := regexp.MustCompile(`(^|[^\d.])` + regexp.QuoteMeta(s) + `($|[^\d.]|\.($|[^\d]))`)
	return re.MatchString(text)
}

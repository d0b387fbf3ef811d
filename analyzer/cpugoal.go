package analyzer

import (
	"fmt"
	"strings"
)

// relativeCPU reports whether g is a cpu goal on the change from the
// baseline ("cpu<=+5%"), which only a comparison can check.
func (g Goal) relativeCPU() bool { return g.Metric == "cpu" && g.Unit == "%" }

// cpuGoalValue parses the threshold of a cpu goal: a change in percent,
// signed or not ("+5%", "-10%", "5%"), or CPU time per request ("200us",
// "0.5ms", or a bare number of microseconds).
func cpuGoalValue(text, value string) (float64, string, error) {
	if p, ok := strings.CutSuffix(value, "%"); ok {
		sign := 1.0
		switch {
		case strings.HasPrefix(p, "+"):
			p = p[1:]
		case strings.HasPrefix(p, "-"), strings.HasPrefix(p, "−"):
			sign, p = -1, strings.TrimLeft(p, "-−")
		}
		v, err := parseNumber(p)
		if err != nil {
			return 0, "", fmt.Errorf("goal %q: bad change %q: want the change from the baseline's CPU per request, e.g. +5%%", text, value)
		}
		return sign * v, "%", nil
	}
	ms, err := parseMillis(value)
	if err != nil {
		return 0, "", fmt.Errorf("goal %q: bad CPU time %q: want CPU time per request, e.g. 200us or 0.5ms, or a change such as +5%%", text, value)
	}
	if _, bare := parseNumber(value); bare == nil {
		return ms, "µs", nil // a bare number is microseconds already
	}
	return ms * 1000, "µs", nil
}

// cpuGoalReason says why a cpu goal cannot be checked against s: the CPU
// time was not measured, or the goal is on the change from a baseline,
// which a run alone does not have; empty when it can.
func cpuGoalReason(s *Summary, g Goal) string {
	switch {
	case g.relativeCPU():
		return "a cpu goal in % is on the change from the baseline: give it to replay compare"
	case !s.CPU.Measured:
		return "CPU time not measured: " + s.CPU.Reason
	}
	return ""
}

// CheckComparison evaluates goals against a comparison: every goal against
// the candidate (Check), but for a cpu goal in % ("cpu<=+5%"), checked
// against the change of CPU per request from the baseline's (the figure
// the report shows, Comparison.CPU.Ratio; the verdict weighs its noise).
// A cpu goal fails when the CPU time was not measured, with Reason saying
// why.
func CheckComparison(c *Comparison, goals []Goal) []GoalResult {
	out := Check(c.Candidate, goals)
	for i, g := range goals {
		if !g.relativeCPU() {
			continue
		}
		r := &out[i]
		r.Passed, r.Actual, r.Reason = false, 0, ""
		if !c.CPU.Measured {
			r.Reason = "CPU time " + c.CPU.Reason
			continue
		}
		r.Actual = 100 * (c.CPU.Ratio - 1)
		r.Passed = compareOp(r.Actual, g.Op, g.Value)
	}
	return out
}

// signedPercent formats a change in percent with its sign: "+5%", "−10%".
func signedPercent(v float64) string {
	if v < 0 {
		return "−" + formatNumber(-v) + "%"
	}
	return "+" + formatNumber(v) + "%"
}

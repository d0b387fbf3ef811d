package report

import (
	"fmt"
	"math"

	"github.com/replaykit/replay/analyzer"
)

// cpuScope says what the CPU figures cover, wherever they are shown.
const cpuScope = "each build's process tree, all endpoints"

// CPUComparisonDocument compares the builds' CPU time per request (JSON
// key "cpu"): a figure per build over the whole load (the process tree
// serves every endpoint), its ratio and interval, and its verdict. When
// replay did not start both builds, Measured is false, Reason says why and
// no figure is given (never a zero).
type CPUComparisonDocument struct {
	Measured bool   `json:"measured"`
	Scope    string `json:"scope"`
	Reason   string `json:"reason,omitempty"`
	// BaselineUsPerRequest and CandidateUsPerRequest are CPU microseconds
	// per request.
	BaselineUsPerRequest  *float64 `json:"baseline_us_per_request,omitempty"`
	CandidateUsPerRequest *float64 `json:"candidate_us_per_request,omitempty"`
	Ratio                 *float64 `json:"ratio,omitempty"`
	// CILow and CIHigh bound the ratio's interval; absent without slice
	// pairs (a sequential comparison).
	CILow  *float64 `json:"ci_low,omitempty"`
	CIHigh *float64 `json:"ci_high,omitempty"`
	// MinDetectableChange is the smallest rise this run could have reported,
	// as a ratio; absent without an interval.
	MinDetectableChange *float64         `json:"min_detectable_change,omitempty"`
	SlicePairs          int              `json:"slice_pairs,omitempty"`
	Verdict             analyzer.Verdict `json:"verdict,omitempty"`
	Explanation         string           `json:"explanation,omitempty"`
}

// CPURunDocument is a build's CPU time per request in a run (JSON key
// "cpu"); without it, Measured is false and Reason says why.
type CPURunDocument struct {
	Measured bool   `json:"measured"`
	Scope    string `json:"scope"`
	Reason   string `json:"reason,omitempty"`
	// UsPerRequest is CPU microseconds per load request, CPUMs the build's
	// CPU time over the load and Requests its load requests.
	UsPerRequest *float64 `json:"us_per_request,omitempty"`
	CPUMs        *float64 `json:"cpu_ms,omitempty"`
	Requests     int64    `json:"requests,omitempty"`
}

func ptr(v float64) *float64 { return &v }

// cpuComparisonDoc is the JSON of c.CPU.
func cpuComparisonDoc(c *analyzer.Comparison) *CPUComparisonDocument {
	ch := c.CPU
	d := &CPUComparisonDocument{Measured: ch.Measured, Scope: "build", Reason: ch.Reason}
	if !ch.Measured {
		return d
	}
	d.BaselineUsPerRequest, d.CandidateUsPerRequest = ptr(round(ch.Baseline, 3)), ptr(round(ch.Candidate, 3))
	d.Ratio = ptr(round(ch.Ratio, 4))
	if ch.CIHigh > 0 {
		d.CILow, d.CIHigh = ptr(round(ch.CILow, 4)), ptr(round(ch.CIHigh, 4))
	}
	if ch.MinDetectable > 0 {
		d.MinDetectableChange = ptr(round(ch.MinDetectable, 4))
	}
	d.SlicePairs, d.Verdict, d.Explanation = ch.Pairs, ch.Verdict, ch.Explanation
	return d
}

// cpuRunDoc is the JSON of a run's CPU figures.
func cpuRunDoc(s *analyzer.Summary) *CPURunDocument {
	u := s.CPU
	d := &CPURunDocument{Measured: u.Measured, Scope: "build", Reason: u.Reason}
	if u.Measured {
		d.UsPerRequest, d.CPUMs, d.Requests = ptr(round(u.PerRequest, 3)), ptr(round(durMs(u.Total), 3)), u.Requests
	}
	return d
}

// cpuShown reports whether the human formats show the CPU comparison: when
// either build's CPU time was measured (with builds given as URLs, there is
// nothing to show but the JSON's reason).
func cpuShown(c *analyzer.Comparison) bool {
	return c.Baseline.CPU.Measured || c.Candidate.CPU.Measured
}

// cpuSentence is the CPU comparison in one line: its verdict and
// explanation, or why it was not measured, e.g. "CPU per request,
// regression (each build's process tree, all endpoints): the candidate
// spends 20% more CPU per request (…)".
func cpuSentence(c *analyzer.Comparison) string {
	if !c.CPU.Measured {
		return "CPU per request (" + cpuScope + "): " + c.CPU.Reason
	}
	return fmt.Sprintf("CPU per request, %s (%s): %s", c.CPU.Verdict, cpuScope, c.CPU.Explanation)
}

// cpuLabel names the CPU change in an outcome's list of endpoints, e.g.
// "CPU per request (+15%)".
func cpuLabel(ch analyzer.CPUChange) string {
	return "CPU per request (" + signedPercent(100*(ch.Ratio-1)) + ")"
}

// signedPercent formats a change in percent with its sign, to a tenth:
// "+20.2%", "−8%".
func signedPercent(p float64) string {
	sign := "+"
	if p < 0 {
		sign, p = "−", -p
	}
	return sign + analyzer.FormatCount(math.Round(p*10)/10) + "%"
}

// cpuGoalActual formats the actual value of a cpu goal in % (the change
// from the baseline's) with its sign; ok is false for any other goal.
func cpuGoalActual(g analyzer.GoalResult) (string, bool) {
	if g.Metric != "cpu" || g.Unit != "%" {
		return "", false
	}
	return signedPercent(g.Actual), true
}

// cpuRunNote is a run report's line on the build's CPU time; empty when it
// was not measured (a build given as a URL).
func cpuRunNote(s *analyzer.Summary) string {
	u := s.CPU
	if !u.Measured {
		return ""
	}
	return fmt.Sprintf("CPU: the build spent %s per request (%s over %s requests; its process tree, every endpoint together).",
		analyzer.FormatMicros(u.PerRequest), analyzer.FormatMs(durMs(u.Total)), count(u.Requests))
}

// cpuNext is the advice on a CPU regression; empty without one.
func cpuNext(c *analyzer.Comparison) string {
	if c.CPU.Verdict != analyzer.Regression {
		return ""
	}
	if c.Counts[analyzer.Regression] > 0 {
		return fmt.Sprintf("The candidate also spends %s CPU per request: the regressions above may account for it (each extra statement or call costs the app CPU too); if it remains once they are fixed, profile both builds under this load (e.g. Go's net/http/pprof, or perf).",
			signedPercent(100*(c.CPU.Ratio-1)))
	}
	return fmt.Sprintf("Find what the candidate spends its extra CPU on (%s per request): profile both builds under this load (e.g. Go's net/http/pprof, or perf) and compare where the time goes.",
		signedPercent(100*(c.CPU.Ratio-1)))
}

// cpuCase is the JUnit test case of the CPU comparison: failed on a
// regression, skipped when inconclusive or not measured.
func cpuCase(c *analyzer.Comparison, class string) junitCase {
	msg := cpuSentence(c)
	tc := junitCase{Name: "CPU per request (whole build)", Classname: class, Time: junitTime(0), SystemOut: msg}
	switch {
	case c.CPU.Verdict == analyzer.Regression:
		tc.Failure = &junitMessage{Message: msg, Type: "regression", Text: msg}
	case !c.CPU.Measured || c.CPU.Verdict == analyzer.Inconclusive:
		tc.Skipped = &junitMessage{Message: msg}
	}
	return tc
}

package analyzer

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Goal is a pass/fail threshold on a run, e.g. "p95<500ms" or
// "GET /orders: sql<=5". Parse one with ParseGoal.
type Goal struct {
	// Text is the goal as given, trimmed.
	Text string
	// Endpoint is the endpoint the goal is about; "" for the whole run.
	Endpoint string
	// Metric is one of: "avg", "min", "p50", "p90", "p95", "p99", "max"
	// (latency from intended start, ms); "tps" (load-phase requests per
	// second); "success" (% of requests); "failed" (% of requests when
	// Unit is "%", else a count); "errors" (like failed); "sql" (statements
	// per request); "cpu" (the build's CPU time per request, whole run:
	// µs, or with Unit "%" the change from the baseline's, see
	// CheckComparison).
	Metric string
	// Op is "<", "<=", ">" or ">=".
	Op string
	// Value is the threshold in Unit.
	Value float64
	// Unit is "ms", "µs", "%", "req/s" or "" (a count).
	Unit string
}

// String returns the goal as given.
func (g Goal) String() string { return g.Text }

// Expected describes the threshold, e.g. "< 500 ms", "> 99%", "<= 5".
func (g Goal) Expected() string {
	if g.relativeCPU() {
		return g.Op + " " + signedPercent(g.Value)
	}
	s := g.Op + " " + formatNumber(g.Value)
	switch g.Unit {
	case "":
	case "%":
		s += "%"
	default:
		s += " " + g.Unit
	}
	return s
}

// metric returns the canonical name of a goal metric and its kind: "ms",
// "req/s", "%", "count|%" or "" (statements per request).
func metric(m string) (name, kind string, ok bool) {
	switch m {
	case "avg", "min", "p50", "p90", "p95", "p99", "max":
		return m, "ms", true
	case "mean":
		return "avg", "ms", true
	case "med":
		return "p50", "ms", true
	case "tps", "rps":
		return "tps", "req/s", true
	case "success":
		return m, "%", true
	case "failed", "errors", "failures":
		if m == "failures" {
			m = "failed"
		}
		return m, "count|%", true
	case "sql":
		return m, "", true
	case "cpu":
		return m, "µs", true
	}
	return "", "", false
}

// ParseGoal parses a goal: an optional endpoint followed by ": ", a metric,
// an operator (<, <=, >, >=) and a value. Latency values are durations
// ("500ms", "1s", "250us"; a bare number is milliseconds); success takes a
// percentage ("99%"; a bare number up to 1 is a fraction); failed and
// errors take a percentage ("1%") or a count ("5"); tps takes requests per
// second ("50", "50/s"); sql takes statements per request ("5"); cpu takes
// the build's CPU time per request ("200us", "0.5ms"; a bare number is
// microseconds) or, for a comparison, its change from the baseline's
// ("+5%", "-10%"). A cpu goal names no endpoint: the build's process tree
// serves them all.
//
//	p95<500ms   p99<1s   avg<200ms   tps>50   success>99%   failed<1%
//	errors<5    sql<=5   GET /orders: p95<20ms   GET /orders: sql<=5
//	POST /graphql {allBooks}: sql<=3   cpu<=200us   cpu<=+5%
//
// The endpoint is the text before the last ":", runs of white space made
// one space; it may name an operation, as recording names them.
func ParseGoal(s string) (Goal, error) {
	text := strings.TrimSpace(s)
	g := Goal{Text: text}
	expr := text
	if i := strings.LastIndex(text, ":"); i >= 0 {
		g.Endpoint = strings.Join(strings.Fields(text[:i]), " ")
		expr = strings.TrimSpace(text[i+1:])
		if g.Endpoint == "" {
			return Goal{}, fmt.Errorf("goal %q: empty endpoint before \":\"", text)
		}
		if !strings.Contains(g.Endpoint, " ") {
			return Goal{}, fmt.Errorf("goal %q: endpoint %q is not \"METHOD /path\"", text, g.Endpoint)
		}
	}
	if expr == "" {
		return Goal{}, fmt.Errorf("goal %q: empty; want e.g. p95<500ms", text)
	}
	opAt := strings.IndexAny(expr, "<>=!")
	if opAt < 0 {
		return Goal{}, fmt.Errorf("goal %q: no operator; want one of <, <=, >, >= as in p95<500ms", text)
	}
	metricName := strings.ToLower(strings.TrimSpace(expr[:opAt]))
	rest := expr[opAt:]
	switch {
	case strings.HasPrefix(rest, "<="), strings.HasPrefix(rest, ">="):
		g.Op, rest = rest[:2], rest[2:]
	case strings.HasPrefix(rest, "<"), strings.HasPrefix(rest, ">"):
		g.Op, rest = rest[:1], rest[1:]
	default:
		return Goal{}, fmt.Errorf("goal %q: bad operator %q; want one of <, <=, >, >=", text, opPrefix(rest))
	}
	value := strings.TrimSpace(rest)
	if metricName == "" {
		return Goal{}, fmt.Errorf("goal %q: no metric before %q", text, g.Op)
	}
	name, kind, ok := metric(metricName)
	if !ok {
		return Goal{}, fmt.Errorf("goal %q: unknown metric %q; want avg, min, p50, p90, p95, p99, max, tps, success, failed, errors, sql or cpu", text, metricName)
	}
	g.Metric = name
	if name == "cpu" && g.Endpoint != "" {
		return Goal{}, fmt.Errorf("goal %q: cpu is measured per build (its process tree serves every endpoint), not per endpoint; drop %q", text, g.Endpoint+":")
	}
	if value == "" {
		return Goal{}, fmt.Errorf("goal %q: no value after %q", text, g.Op)
	}
	var err error
	if g.Value, g.Unit, err = goalValue(text, kind, value); err != nil {
		return Goal{}, err
	}
	return g, nil
}

// goalValue parses value as the threshold of the goal text for a metric of
// kind (see metric), and returns it with its unit ("" for a count).
func goalValue(text, kind, value string) (v float64, unit string, err error) {
	switch kind {
	case "ms":
		unit = "ms"
		v, err = parseMillis(value)
		if err != nil {
			return 0, "", fmt.Errorf("goal %q: bad duration %q: want e.g. 500ms, 1s or 250us", text, value)
		}
	case "req/s":
		unit = "req/s"
		v, err = parseNumber(strings.TrimSuffix(value, "/s"))
		if err != nil {
			return 0, "", fmt.Errorf("goal %q: bad rate %q: want requests per second, e.g. 50", text, value)
		}
	case "%":
		unit = "%"
		v, err = parsePercent(value, true)
		if err != nil || v > 100 {
			return 0, "", fmt.Errorf("goal %q: bad percentage %q: want e.g. 99%%", text, value)
		}
	case "µs":
		return cpuGoalValue(text, value)
	case "count|%":
		if strings.HasSuffix(value, "%") {
			unit = "%"
			v, err = parsePercent(value, false)
			if err != nil || v > 100 {
				return 0, "", fmt.Errorf("goal %q: bad percentage %q: want e.g. 1%%", text, value)
			}
		} else {
			v, err = parseNumber(value)
			if err != nil {
				return 0, "", fmt.Errorf("goal %q: bad count %q: want a number of requests, or a percentage such as 1%%", text, value)
			}
		}
	default:
		v, err = parseNumber(value)
		if err != nil {
			return 0, "", fmt.Errorf("goal %q: bad number %q: want statements per request, e.g. 5", text, value)
		}
	}
	return v, unit, nil
}

// ParseGoals parses several goals, stopping at the first bad one.
func ParseGoals(ss []string) ([]Goal, error) {
	goals := make([]Goal, 0, len(ss))
	for _, s := range ss {
		g, err := ParseGoal(s)
		if err != nil {
			return nil, err
		}
		goals = append(goals, g)
	}
	return goals, nil
}

func opPrefix(s string) string {
	n := 0
	for n < len(s) && n < 2 && strings.ContainsRune("<>=!", rune(s[n])) {
		n++
	}
	return s[:max(n, 1)]
}

func parseNumber(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || v != v {
		return 0, fmt.Errorf("bad number %q", s)
	}
	return v, nil
}

func parseMillis(s string) (float64, error) {
	if v, err := parseNumber(s); err == nil {
		return v, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q", s)
	}
	return durMs(d), nil
}

// parsePercent parses "99%" or, when fraction allows it, a bare number (a
// fraction when at most 1, else a percentage).
func parsePercent(s string, fraction bool) (float64, error) {
	if p, ok := strings.CutSuffix(s, "%"); ok {
		return parseNumber(p)
	}
	v, err := parseNumber(s)
	if err != nil {
		return 0, err
	}
	if fraction && v <= 1 {
		v *= 100
	}
	return v, nil
}

// GoalResult is the outcome of one goal.
type GoalResult struct {
	// Goal is the goal as given, e.g. "GET /orders: p95<20ms".
	Goal string
	// Endpoint is the endpoint the goal is about; "" for the whole run.
	Endpoint string
	// Metric, Op, Value and Unit are the parsed goal.
	Metric string
	Op     string
	Value  float64
	Unit   string
	// Passed reports whether the goal was met.
	Passed bool
	// Expected describes the threshold, e.g. "< 20 ms".
	Expected string
	// Actual is the measured value in the goal's unit (ms for latency, % for
	// success and failure rates, req/s for tps, statements per request for
	// sql, µs per request for cpu or its change in % from the baseline's, a
	// count for failed/errors without %); zero when it could not be
	// measured (see Reason).
	Actual float64
	// Reason says why a goal could not be measured (endpoint absent, no
	// requests, SQL not counted); empty otherwise.
	Reason string
	// NotEvaluated reports that the goal was not evaluated, its figure not
	// measured (an sql goal on SQL that was not counted): neither passed
	// nor missed, it leaves the run undecided (Undecided).
	NotEvaluated bool
}

// Status is the goal's outcome in a word: "PASS", "FAIL" or "NOT
// EVALUATED".
func (r GoalResult) Status() string {
	switch {
	case r.NotEvaluated:
		return "NOT EVALUATED"
	case r.Passed:
		return "PASS"
	}
	return "FAIL"
}

// Check evaluates goals against a summary. A goal on an endpoint the run
// does not have or a latency goal with no requests fails, with Reason
// saying why; an sql goal without counted statements is not evaluated
// (NotEvaluated), never passed.
func Check(s *Summary, goals []Goal) []GoalResult {
	out := make([]GoalResult, 0, len(goals))
	for _, g := range goals {
		out = append(out, checkGoal(s, g))
	}
	return out
}

// AllPassed reports whether every goal passed (true for none); a goal not
// evaluated did not pass.
func AllPassed(results []GoalResult) bool {
	for _, r := range results {
		if !r.Passed {
			return false
		}
	}
	return true
}

// AnyMissed reports whether a goal was evaluated and missed.
func AnyMissed(results []GoalResult) bool {
	for _, r := range results {
		if !r.Passed && !r.NotEvaluated {
			return true
		}
	}
	return false
}

// Undecided returns the goals that were not evaluated, as given.
func Undecided(results []GoalResult) []string {
	var out []string
	for _, r := range results {
		if r.NotEvaluated {
			out = append(out, r.Goal)
		}
	}
	return out
}

func checkGoal(s *Summary, g Goal) GoalResult {
	r := GoalResult{Goal: g.Text, Endpoint: g.Endpoint, Metric: g.Metric, Op: g.Op, Value: g.Value, Unit: g.Unit, Expected: g.Expected()}
	e := s.Overall
	if g.Endpoint != "" {
		e = s.Endpoint(g.Endpoint)
		if e == nil {
			r.Reason = fmt.Sprintf("endpoint %q is not in the run", g.Endpoint)
			if near := closestEndpoint(s, g.Endpoint); near != "" {
				r.Reason += fmt.Sprintf(" (closest: %q)", near)
			}
			return r
		}
	}
	if e == nil {
		r.Reason = "the run has no results"
		return r
	}
	var actual float64
	switch g.Metric {
	case "avg", "min", "p50", "p90", "p95", "p99", "max":
		if e.Latency.Count == 0 {
			r.Reason = "no load-phase requests were measured"
			if e.Requests > 0 { // latency is over answered requests
				r.Reason = fmt.Sprintf("no request was answered (all %d failed): no latency to judge", e.Requests)
			}
			return r
		}
		actual = latencyMetric(e.Latency, g.Metric)
	case "tps":
		actual = e.TPS
	case "success":
		if e.Requests == 0 {
			r.Reason = "no load-phase requests"
			return r
		}
		actual = e.SuccessRate
	case "failed", "errors":
		if g.Unit == "%" {
			if e.Requests == 0 {
				r.Reason = "no load-phase requests"
				return r
			}
			actual = e.FailureRate()
		} else {
			actual = float64(e.Failed)
		}
	case "cpu":
		if r.Reason = cpuGoalReason(s, g); r.Reason != "" {
			return r
		}
		actual = s.CPU.PerRequest
	case "sql":
		if !e.SQL.Counted() {
			r.Reason, r.NotEvaluated = "SQL statements were not counted", true
			if SQLUnwired(s.Info) {
				r.Reason += " (the build did not reach its database through the SQL counter: a wiring fault)"
			} else {
				r.Reason += " (no SQL counter in place)"
			}
			return r
		}
		actual = e.SQL.PerRequest
	}
	r.Actual = actual
	r.Passed = compareOp(actual, g.Op, g.Value)
	return r
}

func latencyMetric(l LatencyStats, m string) float64 {
	switch m {
	case "avg":
		return l.Avg
	case "min":
		return l.Min
	case "p50":
		return l.P50
	case "p90":
		return l.P90
	case "p95":
		return l.P95
	case "p99":
		return l.P99
	default:
		return l.Max
	}
}

func compareOp(a float64, op string, b float64) bool {
	switch op {
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	default:
		return a >= b
	}
}

// closestEndpoint suggests an endpoint of s whose name matches name ignoring
// case and surrounding slashes, or with the same path under another method,
// or with the same method and path under another operation.
func closestEndpoint(s *Summary, name string) string {
	norm := func(x string) string { return strings.TrimRight(strings.ToLower(x), "/") }
	for _, e := range s.Endpoints {
		if norm(e.Endpoint) == norm(name) {
			return e.Endpoint
		}
	}
	_, path, _ := strings.Cut(name, " ")
	for _, e := range s.Endpoints {
		if _, p, _ := strings.Cut(e.Endpoint, " "); p == path {
			return e.Endpoint
		}
	}
	// "POST /graphql" when the run has "POST /graphql {allBooks}", or the
	// other way round: the same path with another operation.
	base, _ := snapshots.SplitEndpoint(name)
	for _, e := range s.Endpoints {
		if b, _ := snapshots.SplitEndpoint(e.Endpoint); norm(b) == norm(base) {
			return e.Endpoint
		}
	}
	return ""
}

// formatNumber prints v without trailing zeros: 500, 99.5, 0.25.
func formatNumber(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

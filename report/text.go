package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/replaykit/replay/analyzer"
)

// RunText writes a run report for a terminal: the overall result and
// success rate; the goals with PASS/FAIL, expected and actual; then the
// endpoints, busiest first, with requests, failures, avg, p95 and p99 (ms)
// and SQL statements per request when counted.
func RunText(w io.Writer, r *RunReport) error {
	e := &errWriter{w: w}
	s := r.Summary
	e.println("Ran:    " + runRan(s, plain))
	result := strings.ToUpper(r.Outcome())
	o := s.Overall
	why := ""
	if w := joinWhy(r.Failures.Why(), responsesWhy(r.Responses)); w != "" {
		why = " · " + w
	}
	if r.Interrupted() {
		result, why = "INTERRUPTED · "+interruptedWhy, ""
	} else if short := undecidedShort(r.Undecided(), blind(r.Faults()), r.Goals); short != "" {
		result, why = "ERROR", " · "+short // the figures decide nothing
	}
	e.printf("Result: %s · success rate %s (%s of %s failed)%s\n", result, analyzer.FormatPercent(o.SuccessRate), count(o.Failed), count(o.Requests), why)
	writeFaultsText(e, r.Faults(), "run again")
	writeGoalsText(e, "Goals", r.Goals)
	writeFailuresText(e, r)
	e.println("")
	e.println("Endpoints (busiest first)")
	writeEndpointTable(e, s)
	writeResponsesText(e, checkedResponses(r.Responses), recordingLabels)
	writeUpstreamRunText(e, s)
	e.println("")
	for _, line := range runNotes(s) {
		e.println(line)
	}
	if next := runNext(r, backticks); !strings.HasPrefix(next[0], "Nothing to fix") {
		e.println("")
		for _, n := range next {
			e.println("Next: " + n)
		}
	}
	return e.err
}

func writeEndpointTable(e *errWriter, s *analyzer.Summary) {
	t := newTable([]string{"ENDPOINT", "REQUESTS", "FAILED", "AVG ms", "P95 ms", "P99 ms", "SQL/REQ"}, 1, 2, 3, 4, 5, 6)
	row := func(name string, x *analyzer.EndpointSummary) {
		t.add(name, count(x.Requests), count(x.Failed), latNum(x.Latency, x.Latency.Avg), latNum(x.Latency, x.Latency.P95), latNum(x.Latency, x.Latency.P99), perRequest(&x.SQL))
	}
	for _, x := range s.Endpoints {
		row(x.Endpoint, x)
	}
	if len(s.Endpoints) != 1 {
		row("(all)", s.Overall)
	}
	t.write(e, "  ")
}

// runNotes are the footnotes of a run report: how latency was measured,
// where SQL counts come from, mock misses.
func runNotes(s *analyzer.Summary) []string {
	o := s.Overall
	notes := []string{fmt.Sprintf("Latency runs from each request's intended start; from the actual send, p95 is %s and p99 %s.",
		analyzer.FormatMs(o.ServiceTime.P95), analyzer.FormatMs(o.ServiceTime.P99))}
	switch check := analyzer.SQLCheckNote("", s); {
	case check != "":
		notes = append(notes, check+".")
	case analyzer.SQLUnwired(s.Info):
		notes = append(notes, "SQL statements were not counted: the build did not reach its database through the SQL counter (a wiring fault).")
	case o.SQL.Source == "":
		notes = append(notes, "SQL statements were not counted.")
	case o.SQL.Source == analyzer.SQLSourceExplain:
		notes = append(notes, "SQL statements per request come from the explain phase (requests replayed one at a time: exact).")
	case o.SQL.Source == analyzer.SQLSourceLoad:
		if o.SQL.Method == analyzer.SQLMethodExact {
			notes = append(notes, "SQL statements per request come from the load phase (every statement attributed: exact).")
			break
		}
		notes = append(notes, "SQL statements per request come from the load phase (what the counter could attribute).")
	case o.SQL.Source == analyzer.SQLSourceLoadEstimate:
		notes = append(notes, "SQL statements per request come from the load phase: statements no request could be told apart by were shared out over the requests in flight by least squares (~: estimated, ± its 95% margin; ≥: a lower bound).")
	default:
		notes = append(notes, "SQL statements per request come from the explain phase where there was one (exact), else from the load phase.")
	}
	if m := s.Info.MockMisses; m > 0 && analyzer.MissesPassedThrough(s.Info) {
		notes = append(notes, fmt.Sprintf("Mock: %d upstream calls had no recorded answer and went to the real upstream (--on-miss passthrough).", m))
	} else if m > 0 {
		notes = append(notes, fmt.Sprintf("Mock: %d upstream calls had no recorded answer.", m))
	}
	if n := cpuRunNote(s); n != "" {
		notes = append(notes, n)
	}
	notes = append(notes, analyzer.TruncatedNotes(s.Info, "")...)
	return append(notes, analyzer.StateNotes(s.Info, "")...)
}

// ComparisonText writes a comparison for a terminal: the verdict, a table
// of endpoints (p95/p99 both sides, change, SQL per request, verdict) and
// each endpoint's explanation below it.
func ComparisonText(w io.Writer, r *ComparisonReport) error {
	e := &errWriter{w: w}
	c := r.Comparison
	e.println("Ran:     " + comparisonRan(c, plain))
	word := string(c.Verdict)
	if r.Interrupted() {
		word = OutcomeInterrupted
	}
	e.println("Verdict: " + strings.ToUpper(word) + " · " + trimEmoji(comparisonOutcome(r, plain)))
	writeFaultsText(e, c.Faults, "compare again")
	e.println("")
	writeComparisonTable(e, c)
	e.println("")
	for _, x := range c.Endpoints {
		e.printf("  %s: %s\n", x.Endpoint, x.Explanation)
	}
	if cpuShown(c) {
		e.println("  " + cpuSentence(c))
	}
	writeResponsesText(e, comparedResponses(c), buildLabels)
	writeUpstreamText(e, c)
	writeGoalsText(e, "Goals (candidate)", r.Goals)
	if len(c.Notes) > 0 {
		e.println("")
		for _, n := range c.Notes {
			e.println("Note: " + n)
		}
	}
	e.println("")
	for _, n := range comparisonNext(r, backticks) {
		e.println("Next: " + n)
	}
	return e.err
}

// writeComparisonTable writes the endpoints' table: the p95 and p99 the
// verdict rests on, and, when slice pairs were set aside, each side's p95
// over all its requests in a column of its own, labelled under the table.
func writeComparisonTable(e *errWriter, c *analyzer.Comparison) {
	all := keptPairsShown(c)
	head, right := []string{"ENDPOINT", "BASE p95/p99 ms", "CAND p95/p99 ms", "p95 CHANGE"}, []int{1, 2, 3}
	if all {
		head, right = append(head, allRequestsHeader), append(right, 4)
	}
	t := newTable(append(head, "SQL/REQ", "VERDICT"), right...)
	for _, x := range c.Endpoints {
		row := []string{x.Endpoint,
			latNum(x.Baseline.Latency, x.P95.Baseline) + " / " + latNum(x.Baseline.Latency, x.P99.Baseline),
			latNum(x.Candidate.Latency, x.P95.Candidate) + " / " + latNum(x.Candidate.Latency, x.P99.Candidate),
			latChange(x, x.P95, change)}
		if all {
			row = append(row, allRequestsP95(x))
		}
		t.add(append(row, perRequest(&x.Baseline.SQL)+" → "+perRequest(&x.Candidate.SQL), string(x.Verdict))...)
	}
	t.write(e, "  ")
	if all {
		e.println("  " + keptPairsLegend(c))
	}
}

// change formats a percentile change for a table: "+50.2 ms ×13.2".
func change(ch analyzer.Change) string {
	if ch.Baseline == 0 && ch.Candidate == 0 {
		return "-"
	}
	d := analyzer.FormatMs(ch.Delta)
	if ch.Delta >= 0 {
		d = "+" + d
	} else {
		d = "−" + strings.TrimPrefix(d, "-")
	}
	return d + " " + analyzer.FormatRatio(ch.Ratio)
}

// latChange is f of x's change ch, or "-" when a side answered no request:
// a side without latency has no change to show (not a fall to 0 ms).
func latChange(x *analyzer.EndpointComparison, ch analyzer.Change, f func(analyzer.Change) string) string {
	if x.Baseline.Latency.Count == 0 || x.Candidate.Latency.Count == 0 {
		return "-"
	}
	return f(ch)
}

// trimEmoji drops the leading status emoji of an outcome line.
func trimEmoji(s string) string {
	for _, p := range []string{"❌ ", "✅ ", "⚠️ "} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest
		}
	}
	return s
}

// writeGoalsText writes the goals, if any, as a table under title.
func writeGoalsText(e *errWriter, title string, goals []analyzer.GoalResult) {
	if len(goals) == 0 {
		return
	}
	e.println("")
	e.println(title)
	t := newTable([]string{"GOAL", "EXPECTED", "ACTUAL", "RESULT"}, 2)
	for _, g := range goals {
		res := g.Status()
		if g.Reason != "" {
			res += "  " + g.Reason
		}
		t.add(g.Goal, g.Expected, actual(g), res)
	}
	t.write(e, "  ")
}

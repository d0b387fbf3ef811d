package analyzer

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// explain sets e.Cause and e.Explanation from the evidence.
func explain(c *Comparison, e *EndpointComparison) {
	b, k := e.Baseline, e.Candidate
	switch {
	case b.Requests+b.ExplainRequests == 0:
		e.Cause = CauseOneSided
		e.Explanation = fmt.Sprintf("only in the candidate run (%s): nothing to compare it with", plural(int64(k.Requests+k.ExplainRequests), "request"))
		return
	case k.Requests+k.ExplainRequests == 0:
		e.Cause = CauseOneSided
		e.Explanation = fmt.Sprintf("missing from the candidate run (the baseline had %s)", plural(int64(b.Requests+b.ExplainRequests), "request"))
		return
	}
	switch e.Verdict {
	case Regression:
		e.Cause, e.Explanation = explainRegression(c, e)
	case Improvement:
		e.Cause, e.Explanation = explainImprovement(c, e)
	case Inconclusive:
		e.Cause, e.Explanation = explainInconclusive(c, e)
	default:
		e.Cause, e.Explanation = CauseNoChange, unchangedSentence(c, e)
	}
	if s := sqlErrorsClause(c, e); s != "" {
		e.Explanation += "; " + s
	}
}

func explainRegression(c *Comparison, e *EndpointComparison) (cause, text string) {
	var parts []string
	lat := latencyClause(e, Regression)
	switch {
	case e.SQLVerdict == Regression:
		if fc, ok := nPlusOne(e, c.Options.NPlusOneMin); ok {
			cause = CauseNPlusOne
			e.Fingerprint = fc.Fingerprint
			parts = append(parts, nPlusOneSentence(c, e, fc))
		} else {
			cause = CauseSQL
			parts = append(parts, sqlSentence(c, e))
		}
		if e.UpstreamVerdict == Regression {
			_, s := upstreamSentence(c, e)
			parts = append(parts, s)
		}
		if e.FailureVerdict == Regression {
			parts = append(parts, failureSentence(e))
		}
		if lat != "" {
			parts = append(parts, lat)
		} else {
			parts = append(parts, noiseClause(e))
		}
	case e.UpstreamVerdict == Regression:
		cause, parts = upstreamRegression(c, e, lat)
	case e.FailureVerdict == Regression:
		cause = CauseFailures
		parts = append(parts, failureSentence(e))
		if c.MockMisses[1] > c.MockMisses[0] {
			parts = append(parts, mockMissSentence(c.MockMisses[1], c.MockMisses[0]))
		}
		if lat != "" {
			parts = append(parts, lat)
		}
	default:
		var s string
		cause, s = latencyCause(c, e, lat)
		parts = append(parts, s)
	}
	return cause, strings.Join(parts, "; ")
}

func explainImprovement(c *Comparison, e *EndpointComparison) (cause, text string) {
	var parts []string
	if e.SQLVerdict == Improvement {
		cause = CauseSQL
		parts = append(parts, sqlSentence(c, e))
	}
	if e.UpstreamVerdict == Improvement {
		why, s := upstreamSentence(c, e)
		if cause == "" {
			cause = why
		}
		parts = append(parts, s)
	}
	if e.FailureVerdict == Improvement {
		if cause == "" {
			cause = CauseFailures
		}
		parts = append(parts, failureSentence(e))
	}
	if lat := latencyClause(e, Improvement); lat != "" {
		if cause == "" {
			cause = CauseLatency
		}
		parts = append(parts, lat)
	} else {
		parts = append(parts, noiseClause(e))
	}
	return cause, strings.Join(parts, "; ")
}

func explainInconclusive(c *Comparison, e *EndpointComparison) (cause, text string) {
	b, k := e.Baseline, e.Candidate
	var s string
	if e.P95.Verdict == "" {
		cause = CauseSamples
		s = fmt.Sprintf("too few requests to judge latency: %d in the baseline and %d in the candidate (need %d on each side)",
			b.Requests, k.Requests, c.Options.MinSamples)
		if b.Failed+k.Failed > 0 { // latency is over answered requests
			s = fmt.Sprintf("too few answered requests to judge latency: %d in the baseline and %d in the candidate (need %d on each side; failed requests have no latency)",
				b.Latency.Count, k.Latency.Count, c.Options.MinSamples)
		}
	} else {
		cause = CauseNoise
		ch, name := e.P95, "p95"
		if e.P95.Verdict != Inconclusive {
			ch, name = e.P99, "p99"
		}
		s = inconclusiveSentence(c, ch, name)
	}
	if e.SQLVerdict == Unchanged {
		s += fmt.Sprintf("; SQL statements per request unchanged (%s → %s)", FormatCount(b.SQL.PerRequest), FormatCount(k.SQL.PerRequest))
	}
	return cause, s
}

func unchangedSentence(c *Comparison, e *EndpointComparison) string {
	b, k := e.Baseline, e.Candidate
	s := fmt.Sprintf("p95 %s → %s (CI %s–%s)", FormatMs(e.P95.Baseline), FormatMs(e.P95.Candidate), FormatRatio(e.P95.CILow), FormatRatio(e.P95.CIHigh))
	if e.SQLVerdict != "" {
		s += fmt.Sprintf(", SQL %s → %s statements per request", FormatCount(b.SQL.PerRequest), FormatCount(k.SQL.PerRequest))
	}
	// A change the interval is sure of can still be too small to count.
	if beyond := e.P95.CILow > 1 || (e.P95.CIHigh > 0 && e.P95.CIHigh < 1); beyond {
		return s + fmt.Sprintf(": smaller than a change that counts (%s and %s%%)",
			FormatMs(durMs(c.Options.MinChange)), strconv.FormatFloat(100*p95Relative(c, e.P95), 'f', -1, 64))
	}
	return s + ": no change beyond noise"
}

// latencyClause describes the p95 change (or the p99 one when only the p99
// has verdict v); "" when neither has it.
func latencyClause(e *EndpointComparison, v Verdict) string {
	ch, name := e.P95, "p95"
	if ch.Verdict != v {
		ch, name = e.P99, "p99"
	}
	if ch.Verdict != v {
		return ""
	}
	return fmt.Sprintf("%s %s %s → %s (%s, CI %s–%s)", name, direction(ch.Delta),
		FormatMs(ch.Baseline), FormatMs(ch.Candidate), signedMs(ch.Delta), FormatRatio(ch.CILow), FormatRatio(ch.CIHigh))
}

// noiseClause says the latency did not change beyond noise (or could not be
// judged).
func noiseClause(e *EndpointComparison) string {
	if e.P95.Verdict == "" {
		return "too few requests to judge latency"
	}
	return fmt.Sprintf("latency within noise (p95 %s → %s)", FormatMs(e.P95.Baseline), FormatMs(e.P95.Candidate))
}

func direction(delta float64) string {
	if delta < 0 {
		return "fell"
	}
	return "rose"
}

// latencyCause explains a latency regression: by the database when its time
// per request grew by at least half the mean latency's growth, else by the
// app. The SQL counter's view of the load, when both runs have it, is the
// evidence (see loadCause); else each endpoint's DBTime.
func latencyCause(c *Comparison, e *EndpointComparison, lat string) (cause, text string) {
	if cause, text, ok := upstreamLatencyCause(e, lat); ok {
		return cause, text
	}
	if cause, text, ok := loadCause(c, e, lat); ok {
		return cause, text
	}
	b, k := e.Baseline, e.Candidate
	tb, tk := b.DBTime(), k.DBTime()
	if !tb.Counted() || !tk.Counted() {
		return CauseLatency, lat + " (SQL was not counted, so the database cannot be ruled out)"
	}
	latDelta := k.Latency.Avg - b.Latency.Avg
	dbDelta := tk.DBTimePerRequest - tb.DBTimePerRequest
	sqlDelta := k.SQL.PerRequest - b.SQL.PerRequest
	if dbDelta >= 1 && dbDelta >= 0.5*latDelta {
		var best *FingerprintChange
		for i := range e.SQL {
			f := &e.SQL[i]
			if best == nil || f.CandidateDBTimePerRequest-f.BaselineDBTimePerRequest > best.CandidateDBTimePerRequest-best.BaselineDBTimePerRequest {
				best = f
			}
		}
		if best != nil && best.BaselinePerCall > 0 && best.CandidatePerCall >= 1.5*best.BaselinePerCall &&
			best.CandidatePerRequest <= 1.25*best.BaselinePerRequest+0.5 {
			e.Fingerprint = best.Fingerprint
			return CauseSlowerSQL, fmt.Sprintf("`%s` got slower: %s → %s per call (%s database time per request); %s",
				c.StatementName(best.Fingerprint), FormatMs(best.BaselinePerCall), FormatMs(best.CandidatePerCall),
				signedMs(best.CandidateDBTimePerRequest-best.BaselineDBTimePerRequest), lat)
		}
		if sqlDelta >= 0.5 {
			return CauseSQL, sqlSentence(c, e) + "; " + lat
		}
		return CauseSlowerSQL, fmt.Sprintf("database time per request rose %s → %s; %s",
			FormatMs(tb.DBTimePerRequest), FormatMs(tk.DBTimePerRequest), lat)
	}
	if math.Abs(sqlDelta) < 0.5 && math.Abs(dbDelta) < max(1, 0.1*max(latDelta, 0)) {
		return CauseApp, lat + " with no change in SQL statements or database time: the slowdown is in the app"
	}
	return CauseApp, fmt.Sprintf("%s; SQL statements (%s → %s per request) and database time (%s per request) account for little of it: the slowdown is in the app",
		lat, FormatCount(b.SQL.PerRequest), FormatCount(k.SQL.PerRequest), signedMs(dbDelta))
}

// nPlusOne finds the fingerprint that looks like an N+1: a parameterised
// statement the candidate runs at least minRuns times per request, at least
// twice as often plus one as the baseline. It picks the largest rise.
func nPlusOne(e *EndpointComparison, minRuns float64) (FingerprintChange, bool) {
	var best FingerprintChange
	found := false
	for _, f := range e.SQL {
		if f.CandidatePerRequest >= minRuns && f.CandidatePerRequest >= 2*f.BaselinePerRequest+1 &&
			hasParameter(f.Fingerprint) && (!found || f.Delta() > best.Delta()) {
			best, found = f, true
		}
	}
	return best, found
}

// hasParameter reports whether a fingerprint has a folded literal or
// parameter ("?" or "$1"): a statement run once per row of another has one.
func hasParameter(fp string) bool {
	for i := 0; i < len(fp); i++ {
		if fp[i] == '?' || fp[i] == '$' && i+1 < len(fp) && fp[i+1] >= '0' && fp[i+1] <= '9' {
			return true
		}
	}
	return false
}

func nPlusOneSentence(c *Comparison, e *EndpointComparison, f FingerprintChange) string {
	runs := FormatCount(f.CandidatePerRequest)
	if fs := e.Candidate.SQL.Fingerprint(f.Fingerprint); fs != nil && fs.MinPerRequest != fs.MaxPerRequest {
		runs = fmt.Sprintf("%s times per request on average (%d–%d", runs, fs.MinPerRequest, fs.MaxPerRequest)
		runs += "; baseline " + FormatCount(f.BaselinePerRequest) + ")"
	} else {
		runs += " times per request (baseline " + FormatCount(f.BaselinePerRequest) + ")"
	}
	s := fmt.Sprintf("N+1: `%s` runs %s", c.StatementName(f.Fingerprint), runs)
	if d := f.CandidateDBTimePerRequest - f.BaselineDBTimePerRequest; d > 0 {
		s += fmt.Sprintf(", adding %s database time per request", FormatMs(d))
	}
	return s
}

// sqlSentence describes a change in statements per request, naming the
// fingerprints that changed most.
func sqlSentence(c *Comparison, e *EndpointComparison) string {
	b, k := e.Baseline, e.Candidate
	d := k.SQL.PerRequest - b.SQL.PerRequest
	word := "more"
	if d < 0 {
		word = "fewer"
	}
	s := fmt.Sprintf("%s %s statements per request (%s → %s)", FormatCount(math.Abs(d)), word, FormatCount(b.SQL.PerRequest), FormatCount(k.SQL.PerRequest))
	var named []string
	for _, f := range e.SQL {
		if len(named) == 3 {
			break
		}
		if f.Delta()*d > 0 && math.Abs(f.Delta()) >= 0.5 {
			named = append(named, fmt.Sprintf("`%s` %s → %s", c.StatementName(f.Fingerprint),
				FormatCount(f.BaselinePerRequest), FormatCount(f.CandidatePerRequest)))
		}
	}
	if len(named) > 0 {
		s += ": " + strings.Join(named, ", ")
	}
	if tb, tk := b.DBTime(), k.DBTime(); tb.Counted() && tk.Counted() {
		s += fmt.Sprintf(" (%s database time)", signedMs(tk.DBTimePerRequest-tb.DBTimePerRequest))
	}
	return s
}

// failureSentence describes a change in the failure rate, naming the
// candidate's main causes (FailureCauses) with counts when it rose.
func failureSentence(e *EndpointComparison) string {
	b, k := e.Baseline, e.Candidate
	s := fmt.Sprintf("failures %s from %s to %s", direction(k.FailureRate()-b.FailureRate()), FormatPercent(b.FailureRate()), FormatPercent(k.FailureRate()))
	if k.FailureRate() > b.FailureRate() && len(k.Failures) > 0 {
		causes := FailureCauses(&Summary{Overall: k}, nil)
		var kinds []string
		for _, c := range causes[:min(2, len(causes))] {
			kinds = append(kinds, c.String())
		}
		s += ": " + strings.Join(kinds, "; ")
	}
	return s
}

func mockMissSentence(cand, base int64) string {
	return fmt.Sprintf("the candidate made %d upstream calls the snapshot has no answer for (baseline %d)", cand, base)
}

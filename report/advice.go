package report

import (
	"fmt"
	"strings"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/shard"
)

// Settings keys the reports read from snapshots.RunInfo.Settings, when the
// replayer sets them. "load" wins over the others as the description of
// the load; "cmd" names a build started as a command.
const (
	SettingLoad       = "load"       // e.g. "closed model, 8 VUs, 30s"
	SettingVUs        = "vus"        // e.g. "8"
	SettingRate       = "rate"       // e.g. "200/s"
	SettingDuration   = "duration"   // e.g. "30s"
	SettingIterations = "iterations" // e.g. "2"
	SettingCmd        = "cmd"        // e.g. "APP_SLOW=1 ./orders"

	// A comparison that ran until it knew (replay compare --max-duration).
	SettingMaxDuration = "max_duration"    // e.g. "1m0s": the most load per side
	SettingLooks       = "looks"           // e.g. "3": looks taken
	SettingRan         = "ran"             // e.g. "40s": load per side when it stopped
	SettingStopped     = "stopped"         // why it stopped, one sentence
	SettingConfidence  = "look_confidence" // e.g. "0.996667": the last look's level
	SettingResamples   = "look_resamples"  // e.g. "6000": the last look's resamples
	SettingAlpha       = "alpha"           // e.g. "0.01": the false-alarm rate spent over the looks

	// A fair load (the open model at a rate found from the baseline).
	SettingCalibrated = "calibrated" // e.g. "0.5 of 424/s at 4 VUs"
)

// quoter marks up code: backticks in Markdown, nothing in text.
type quoter func(string) string

func backticks(s string) string { return "`" + strings.ReplaceAll(s, "`", "'") + "`" }
func plain(s string) string     { return s }

// loadText describes the load model from a run's settings; "" when the
// settings say nothing about it.
func loadText(settings map[string]string) string {
	if s := settings[SettingLoad]; s != "" {
		return s
	}
	var parts []string
	if v := settings[SettingVUs]; v != "" {
		parts = append(parts, v+" VUs")
	}
	if v := settings[SettingRate]; v != "" {
		if !strings.Contains(v, "/") {
			v += "/s"
		}
		parts = append(parts, v)
	}
	if v := settings[SettingIterations]; v != "" {
		parts = append(parts, v+" iterations")
	}
	if v := settings[SettingDuration]; v != "" {
		parts = append(parts, "for "+v)
	}
	return strings.Join(parts, ", ")
}

// shardText says that a run was one shard of a plan ("shard 1 of 3") or
// the merge of all its shards ("merged from shards 0-2 of 3"); "" for a
// whole plan run by one process.
func shardText(settings map[string]string) string {
	if m := settings[shard.TagMerged]; m != "" {
		return "merged from shards " + m
	}
	if k, n := settings[shard.TagIndex], settings[shard.TagCount]; k != "" && n != "" {
		return "shard " + k + " of " + n
	}
	return ""
}

// build names what a run replayed against: its command, else its target.
func build(s *analyzer.Summary, q quoter) string {
	if c := s.Info.Settings[SettingCmd]; c != "" {
		return q(c)
	}
	if s.Info.Target != "" {
		return q(s.Info.Target)
	}
	if s.Info.Name != "" {
		return s.Info.Name
	}
	return "(unnamed build)"
}

// runRan says what a run did.
func runRan(s *analyzer.Summary, q quoter) string {
	var parts []string
	if s.Info.Snapshot != "" {
		parts = append(parts, "snapshot "+q(s.Info.Snapshot)+" against "+build(s, q))
	} else {
		parts = append(parts, build(s, q))
	}
	if l := loadText(s.Info.Settings); l != "" {
		parts = append(parts, l)
	}
	if sh := shardText(s.Info.Settings); sh != "" {
		parts = append(parts, sh)
	}
	o := s.Overall
	parts = append(parts, fmt.Sprintf("%s requests in %s (%s req/s)", count(o.Requests), seconds(s.Duration), rate(o.TPS)))
	return strings.Join(parts, "; ")
}

// runOutcome says whether a run passed, in one line.
func runOutcome(r *RunReport, q quoter) string {
	o := r.Summary.Overall
	success := fmt.Sprintf("success rate %s (%s of %s requests failed)", analyzer.FormatPercent(o.SuccessRate), count(o.Failed), count(o.Requests))
	var missed []string
	for _, g := range r.Goals {
		if !g.Passed && !g.NotEvaluated {
			missed = append(missed, q(g.Goal))
		}
	}
	if short := undecidedShort(r.Undecided(), blind(r.Faults()), r.Goals); short != "" {
		return fmt.Sprintf("⚠️ Error: %s; %s", short, success)
	}
	if n := len(r.Faults()); n > 0 {
		success += fmt.Sprintf("; ⚠️ %s (below): the figures are not all the build's", plural(n, "wiring fault"))
	}
	if r.Interrupted() {
		return "⚠️ Interrupted: " + interruptedWhy + "; " + success
	}
	switch why := joinWhy(r.Failures.Why(), responsesWhy(r.Responses)); {
	case why != "" && len(missed) > 0:
		return fmt.Sprintf("❌ Failed: %s, and %d of %s missed (%s); %s", why, len(missed), plural(len(r.Goals), "goal"), strings.Join(missed, ", "), success)
	case why != "":
		return fmt.Sprintf("❌ Failed: %s; %s", why, success)
	case len(missed) > 0:
		return fmt.Sprintf("❌ Failed: %d of %s missed (%s); %s", len(missed), plural(len(r.Goals), "goal"), strings.Join(missed, ", "), success)
	case len(r.Goals) > 0:
		return fmt.Sprintf("✅ Passed: %s met; %s", plural(len(r.Goals), "goal"), success)
	}
	return "✅ Passed (no goals set); " + success
}

// runNext says what to do after a run.
func runNext(r *RunReport, q quoter) []string {
	var next []string
	if r.Interrupted() {
		next = append(next, "Run again, to the end: this run was interrupted, so its figures are partial and it has no verdict.")
	}
	if len(r.Faults()) > 0 {
		next = append(next, "Fix the wiring faults first (each says how), then run again.")
	}
	for _, g := range r.Goals {
		switch {
		case g.Passed, g.NotEvaluated && len(r.Faults()) > 0: // the fault's fix is the goal's
		case g.Reason != "":
			next = append(next, fmt.Sprintf("Fix goal %s: %s.", q(g.Goal), g.Reason))
		default:
			next = append(next, fmt.Sprintf("Bring %s within %s (now %s).", q(g.Goal), g.Expected, actual(g)))
		}
	}
	if rc := r.Responses; rc != nil && !rc.Passed() {
		next = append(next, checkNext(rc, q))
	}
	s := r.Summary
	if o := s.Overall; o.Failed > 0 {
		var worst *analyzer.EndpointSummary
		for _, e := range s.Endpoints {
			if worst == nil || e.Failed > worst.Failed {
				worst = e
			}
		}
		next = append(next, fmt.Sprintf("Look at the %s failed requests: %s.", count(o.Failed), failureList(worst)))
	}
	if m := s.Info.MockMisses; m > 0 && !analyzer.MissesPassedThrough(s.Info) {
		next = append(next, fmt.Sprintf("%d upstream calls had no recorded answer: record a fresh snapshot that covers them, or stop mocking that upstream.", m))
	}
	if !s.Overall.SQL.Counted() && !analyzer.SQLUnwired(s.Info) { // unwired: the fault says what to fix
		next = append(next, "SQL was not counted: put sqlcount in front of the database (--postgres or --mysql LISTEN=HOST:PORT) to see statements per request.")
	}
	if len(next) == 0 {
		if len(r.Goals) == 0 {
			return []string{"Nothing to fix. Add goals (--goal 'p95<500ms', --goal 'GET /orders: sql<=5') to gate on them."}
		}
		return []string{"Nothing to fix: every goal is met."}
	}
	return next
}

// failureList names an endpoint's commonest failures: "GET /orders: 503
// Service Unavailable ×40, timeout ×2".
func failureList(e *analyzer.EndpointSummary) string {
	var kinds []string
	for _, f := range e.Failures[:min(3, len(e.Failures))] {
		kinds = append(kinds, fmt.Sprintf("%s ×%d", f, f.Count))
	}
	return e.Endpoint + ": " + strings.Join(kinds, ", ")
}

// endpointsWith lists the endpoints with verdict v.
func endpointsWith(c *analyzer.Comparison, v analyzer.Verdict) []string {
	var out []string
	for _, e := range c.Endpoints {
		if e.Verdict == v {
			out = append(out, e.Endpoint)
		}
	}
	if c.CPU.Verdict == v && (v == analyzer.Regression || v == analyzer.Improvement) {
		out = append(out, cpuLabel(c.CPU))
	}
	return out
}

// list joins names: "A", "A and B", "A, B and 3 more".
func list(names []string) string {
	switch {
	case len(names) == 1:
		return names[0]
	case len(names) == 2:
		return names[0] + " and " + names[1]
	case len(names) > 3:
		return strings.Join(names[:2], ", ") + fmt.Sprintf(" and %d more", len(names)-2)
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// comparisonRan says what was compared.
func comparisonRan(c *analyzer.Comparison, q quoter) string {
	b, k := c.Baseline, c.Candidate
	var parts []string
	if b.Info.Snapshot != "" {
		parts = append(parts, "snapshot "+q(b.Info.Snapshot))
	}
	parts = append(parts, "baseline "+build(b, q)+" vs candidate "+build(k, q))
	if l := loadText(b.Info.Settings); l != "" {
		parts = append(parts, l)
	}
	if sh := shardText(b.Info.Settings); sh != "" {
		parts = append(parts, sh)
	}
	if c.Method == analyzer.MethodPairedSlices && b.Info.Settings[analyzer.SettingOrder] == "concurrent" {
		parts = append(parts, fmt.Sprintf("both builds loaded at once in %d slice pairs", c.SlicePairs))
	} else if c.Method == analyzer.MethodPairedSlices {
		parts = append(parts, fmt.Sprintf("interleaved in %d slice pairs", c.SlicePairs))
	} else {
		parts = append(parts, "runs compared as separate runs (not interleaved)")
	}
	if s := runUntilText(c); s != "" {
		parts = append(parts, s)
	}
	parts = append(parts, fmt.Sprintf("%s + %s requests in %s + %s", count(b.Overall.Requests), count(k.Overall.Requests), seconds(b.Duration), seconds(k.Duration)))
	parts = append(parts, sensitivity(c))
	return strings.Join(parts, "; ")
}

// sensitivity states the p95 minimum change and the confidence the
// comparison used: "min change 10% and 5 ms at 99% confidence".
func sensitivity(c *analyzer.Comparison) string {
	return fmt.Sprintf("min change %s%% and %s at %s confidence", analyzer.FormatCount(100*minRelative(c)),
		analyzer.FormatMs(durMs(c.Options.MinChange)), confidenceText(c))
}

// comparisonOutcome is the verdict in one line.
func comparisonOutcome(r *ComparisonReport, q quoter) string {
	c := r.Comparison
	goals := goalsWhy(r.Goals, q)
	if r.Interrupted() {
		return "⚠️ Interrupted: the comparison was " + interruptedWhy + goals
	}
	if authOnly(c.Faults) {
		return fmt.Sprintf("⚠️ Inconclusive: requests were refused for want of a credential (%s, below); no verdict until both builds get tokens", plural(len(c.Faults), "fault")) + goals
	}
	if len(c.Faults) > 0 {
		return fmt.Sprintf("⚠️ Inconclusive: the builds did not use their own SQL counter or mock (%s, below); no verdict until they do", plural(len(c.Faults), "wiring fault")) + goals
	}
	inconclusive, n := "", c.Counts[analyzer.Inconclusive]
	if n > 0 {
		inconclusive = fmt.Sprintf(" (%d inconclusive: not a gate failure without --fail-on inconclusive)", n)
	}
	sql := ""
	if !c.Baseline.Overall.SQL.Counted() && !c.Candidate.Overall.SQL.Counted() {
		sql = "; SQL not counted, so latency alone was compared (an N+1 shows only as time)"
	}
	switch {
	case c.Verdict == analyzer.Regression:
		return "❌ Regression in " + list(endpointsWith(c, analyzer.Regression)) + goals
	case n > 0 && c.Options.FailOnInconclusive:
		return "❌ Inconclusive, which fails the gate (--fail-on inconclusive): " + list(endpointsWith(c, analyzer.Inconclusive)) + goals
	case c.Verdict == analyzer.Improvement:
		if goals != "" {
			return "❌ No regression, but" + strings.TrimPrefix(goals, ";") + "; faster: " + list(endpointsWith(c, analyzer.Improvement))
		}
		return "✅ No regression; faster: " + list(endpointsWith(c, analyzer.Improvement)) + inconclusive + sql
	case c.Verdict == analyzer.Unchanged:
		if goals != "" {
			return "❌ No regression, but" + strings.TrimPrefix(goals, ";")
		}
		return "✅ No regression" + inconclusive + sql
	}
	return "⚠️ Inconclusive: no endpoint could be judged" + goals + sql
}

// goalsWhy names the goals missed and those not evaluated:
// "; goals missed: `p95<5ms`; goals not evaluated: `sql<=5`"; "" when all
// passed.
func goalsWhy(goals []analyzer.GoalResult, q quoter) string {
	var missed, unjudged []string
	for _, g := range goals {
		switch {
		case g.NotEvaluated:
			unjudged = append(unjudged, q(g.Goal))
		case !g.Passed:
			missed = append(missed, q(g.Goal))
		}
	}
	out := ""
	if len(missed) > 0 {
		out = "; goals missed: " + strings.Join(missed, ", ")
	}
	if len(unjudged) > 0 {
		out += "; goals not evaluated: " + strings.Join(unjudged, ", ")
	}
	return out
}

// comparisonNext says what to do after a comparison.
func comparisonNext(r *ComparisonReport, q quoter) []string {
	c := r.Comparison
	var next []string
	if r.Interrupted() {
		return []string{"Run the comparison again, to its end: it was interrupted, so its figures are partial and it has no verdict."}
	}
	if authOnly(c.Faults) {
		return []string{"Give both builds tokens (--token-cmd, or --oauth2-token-url and --oauth2-client-id with the secret in $OAUTH2_CLIENT_SECRET), then re-run the comparison."}
	}
	if len(c.Faults) > 0 {
		// Advice from figures that are not the builds' own would mislead.
		return []string{"Fix the wiring faults first (each says how), then re-run the comparison: until each build uses its own SQL counter and mock, its figures are not its own."}
	}
	for _, e := range c.Endpoints {
		if e.Verdict == analyzer.Regression {
			next = append(next, regressionNext(c, e, q)...)
		}
	}
	if n := cpuNext(c); n != "" {
		next = append(next, n)
	}
	if d := c.MockMisses[1] - c.MockMisses[0]; d > 0 {
		next = append(next, fmt.Sprintf("The candidate made %d upstream calls the snapshot has no answer for: record a snapshot that covers them (replay record), or stop mocking that upstream.", c.MockMisses[1]))
	}
	for _, g := range r.Goals {
		if !g.Passed {
			if g.Reason != "" {
				next = append(next, fmt.Sprintf("Fix goal %s: %s.", q(g.Goal), g.Reason))
			} else {
				next = append(next, fmt.Sprintf("Bring %s within %s (now %s).", q(g.Goal), g.Expected, actual(g)))
			}
		}
	}
	var few, noisy []string
	for _, e := range c.Endpoints {
		if e.Verdict != analyzer.Inconclusive {
			continue
		}
		if e.Cause == analyzer.CauseNoise {
			noisy = append(noisy, e.Endpoint)
		} else if e.Cause == analyzer.CauseSamples {
			few = append(few, e.Endpoint)
		}
	}
	if len(few)+len(noisy) > 0 {
		s := fmt.Sprintf("Re-run with a longer --duration: %s inconclusive (%s)", plural(len(few)+len(noisy), "endpoint"), list(append(few, noisy...)))
		if len(noisy) > 0 {
			s += "; where the noise is as large as the change, a quieter machine helps too"
		}
		next = append(next, s+".")
	}
	if len(next) == 0 {
		what := "no endpoint got slower or ran more SQL"
		if len(comparedResponses(c)) > 0 {
			what = "no endpoint got slower, ran more SQL or answered otherwise"
		}
		if imp := endpointsWith(c, analyzer.Improvement); len(imp) > 0 {
			return []string{"Nothing to fix: " + what + "; " + list(imp) + " got better."}
		}
		return []string{"Nothing to fix: " + what + "."}
	}
	return next
}

// regressionNext is the advice for one regressed endpoint: its cause's,
// then its changed answers'.
func regressionNext(c *analyzer.Comparison, e *analyzer.EndpointComparison, q quoter) []string {
	var next []string
	switch e.Cause {
	case analyzer.CauseNPlusOne:
		next = append(next, fmt.Sprintf("Fix the N+1 in %s: fetch what %s reads for all rows in one query (WHERE … IN (…) or = ANY($1), or a JOIN) instead of once per row, then re-run the comparison.",
			e.Endpoint, q(c.StatementName(e.Fingerprint))))
	case analyzer.CauseSQL:
		next = append(next, fmt.Sprintf("Remove or batch the extra statements in %s (see the SQL per fingerprint), then re-run the comparison.", e.Endpoint))
	case analyzer.CauseSlowerSQL:
		if e.Fingerprint != "" {
			next = append(next, fmt.Sprintf("Look at the plan of %s in %s (EXPLAIN ANALYZE: a missing index, a changed query, more rows).",
				q(c.StatementName(e.Fingerprint)), e.Endpoint))
		} else {
			next = append(next, fmt.Sprintf("Look at the statements of %s: its database time per request grew (EXPLAIN ANALYZE the slowest).", e.Endpoint))
		}
	case analyzer.CauseFailures:
		s := fmt.Sprintf("Find why %s fails in the candidate", e.Endpoint)
		if len(e.Candidate.Failures) > 0 {
			s += " (" + strings.TrimPrefix(failureList(e.Candidate), e.Endpoint+": ") + ")"
		}
		next = append(next, s+".")
	case analyzer.CauseApp:
		next = append(next, fmt.Sprintf("Profile %s in the candidate: the extra time is spent outside the database.", e.Endpoint))
	case analyzer.CauseBehaviour:
	case analyzer.CauseUpstreamNPlusOne, analyzer.CauseUpstream:
		next = append(next, upstreamAdvice(e, q))
	default:
		next = append(next, fmt.Sprintf("Count SQL (--postgres or --mysql LISTEN=HOST:PORT) to tell whether the database or the app made %s slower.", e.Endpoint))
	}
	if e.ResponseVerdict == analyzer.Regression {
		next = append(next, behaviourNext(e, q))
	}
	return next
}

// plural formats a count of things: "1 endpoint", "2 endpoints".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

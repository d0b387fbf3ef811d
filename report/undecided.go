package report

import (
	"fmt"
	"strings"

	"github.com/replaykit/replay/analyzer"
)

// Undecided says in one sentence why the run's figures cannot decide it;
// "" when they can. A SQL counter or mock that saw nothing of the build
// always does (analyzer.Fault.SawNothing: the figures do not measure what
// they claim); goals that were not evaluated do when nothing failed (a
// missed goal, too many failed requests or differing answers fail the run
// on their own; so do the failed calls of a mock's misses, a fault shown
// beside them). The CLI exits 1 with it (could not tell), before Passed.
func (r *RunReport) Undecided() string {
	if why := faultsWhy(blind(r.Faults())); why != "" {
		return why
	}
	if analyzer.AnyMissed(r.Goals) || r.Failures != nil && r.Failures.Failed || r.Responses != nil && !r.Responses.Passed() {
		return ""
	}
	return notEvaluatedWhy(r.Goals)
}

// Undecided says in one sentence why the comparison cannot decide the
// gate; "" when it can. Wiring faults always do; goals not evaluated, and
// a comparison in which no endpoint could be judged, do when nothing
// failed (a regression or a missed goal fails it on its own; with
// FailOnInconclusive an inconclusive comparison fails too). The CLI exits
// 1 with it, before Passed.
func (r *ComparisonReport) Undecided() string {
	c := r.Comparison
	if why := faultsWhy(c.Faults); why != "" {
		return why
	}
	if c.Verdict == analyzer.Regression || analyzer.AnyMissed(r.Goals) {
		return ""
	}
	if why := notEvaluatedWhy(r.Goals); why != "" {
		return why
	}
	if c.Verdict == analyzer.Inconclusive && !c.Options.FailOnInconclusive {
		return "inconclusive: " + inconclusiveWhy(c)
	}
	return ""
}

// blind keeps the faults of a counter or mock that saw nothing.
func blind(faults []analyzer.Fault) []analyzer.Fault {
	var out []analyzer.Fault
	for _, f := range faults {
		if f.SawNothing() {
			out = append(out, f)
		}
	}
	return out
}

// faultsWhy is the reason wiring faults give; "" for none.
func faultsWhy(faults []analyzer.Fault) string {
	kind := "wiring"
	if authOnly(faults) {
		kind = "auth"
	}
	switch len(faults) {
	case 0:
		return ""
	case 1:
		return "1 " + kind + " fault, so the figures do not measure what they claim: " + faults[0].Text
	}
	return fmt.Sprintf("%d %s faults, so the figures do not measure what they claim; the first: %s (the report lists them all)", len(faults), kind, faults[0].Text)
}

// notEvaluatedWhy is the reason goals not evaluated give; "" for none.
func notEvaluatedWhy(goals []analyzer.GoalResult) string {
	for _, g := range goals {
		if !g.NotEvaluated {
			continue
		}
		if n := len(analyzer.Undecided(goals)); n > 1 {
			return fmt.Sprintf("%d goals not evaluated (%s), the first: %s", n, strings.Join(analyzer.Undecided(goals), ", "), g.Reason)
		}
		return fmt.Sprintf("goal %q not evaluated: %s", g.Goal, g.Reason)
	}
	return ""
}

// inconclusiveWhy says why no endpoint of c could be judged, with the
// first one's explanation.
func inconclusiveWhy(c *analyzer.Comparison) string {
	for _, e := range c.Endpoints {
		if e.Verdict == analyzer.Inconclusive {
			return fmt.Sprintf("no endpoint could be judged (%d of %d; %s: %s)", len(c.Endpoints), len(c.Endpoints), e.Endpoint, e.Explanation)
		}
	}
	return "no endpoint could be judged: none was replayed on both sides"
}

// undecidedShort is the reason of Undecided in a few words, for a Result
// line; "" when the figures decide.
func undecidedShort(why string, faults []analyzer.Fault, goals []analyzer.GoalResult) string {
	switch {
	case why == "":
		return ""
	case len(faults) > 0:
		return plural(len(faults), "wiring fault") + " (below): the figures do not measure what they claim"
	case len(analyzer.Undecided(goals)) > 0:
		return plural(len(analyzer.Undecided(goals)), "goal") + " not evaluated (below)"
	}
	return why
}

package report

import (
	"fmt"

	"github.com/replaykit/replay/analyzer"
)

// One estimator per figure. An endpoint's p95 and p99 in every format are
// the figures its verdict rests on (analyzer.EndpointComparison.P95 and
// P99). When slice pairs were set aside those leave them out, and each
// side's own percentiles over all its requests (EndpointSummary.Latency)
// differ: wherever a report also shows the latter, it says so.

// Bases of a percentile change, as the JSON names them (ChangeDocument.Basis).
const (
	// BasisAllRequests: the percentiles of all of each side's load requests,
	// the same as the sides' own figures (baseline.p95_ms…).
	BasisAllRequests = "all-requests"
	// BasisKeptPairs: the percentiles of the requests of the slice pairs
	// kept, the pairs set aside left out (set_aside).
	BasisKeptPairs = "kept-pairs"
)

// basis names what a change's figures are computed over.
func basis(ch analyzer.Change) string {
	if ch.WithoutSetAside {
		return BasisKeptPairs
	}
	return BasisAllRequests
}

// keptPairsShown reports whether any endpoint's figures leave out slice
// pairs set aside, and so differ from the sides' figures over all their
// requests.
func keptPairsShown(c *analyzer.Comparison) bool {
	for _, e := range c.Endpoints {
		if e.P95.WithoutSetAside || e.P99.WithoutSetAside {
			return true
		}
	}
	return false
}

// allRequestsHeader heads the text table's column of the sides' p95 over
// all their requests, shown beside the verdict's when pairs were set aside.
const allRequestsHeader = "ALL-REQUESTS p95 ms"

// keptPairsLegend says, under a table, which figures leave the pairs set
// aside out and which do not.
func keptPairsLegend(c *analyzer.Comparison) string {
	return fmt.Sprintf("p95 and p99 leave out the %s set aside (see the note), as the verdict does; %s: each side's p95 over all its requests, baseline → candidate.",
		plural(len(c.SetAside), "slice pair"), allRequestsHeader)
}

// distributionScope labels an HTML distribution chart drawn over all
// requests beside figures that leave the slice pairs set aside out.
const distributionScope = "The distribution and its p50, p95 and p99 marks are of all requests, the slices set aside included; the p95 and p99 in the table and the explanation leave them out, as the verdict does."

// allRequestsP95 formats the sides' p95 over all their requests:
// "61.6 → 259".
func allRequestsP95(x *analyzer.EndpointComparison) string {
	return num(x.Baseline.Latency.P95) + " → " + num(x.Candidate.Latency.P95)
}

// changeOut describes an endpoint's p95 and p99 as its verdict has them,
// for JUnit's system-out: "p95 4.9 ms → 15.1 ms (+10.1 ms ×3.05), p99 …",
// naming the pairs left out when any were.
func changeOut(c *analyzer.Comparison, x *analyzer.EndpointComparison) string {
	s := fmt.Sprintf("p95 %s → %s (%s), p99 %s → %s (%s)",
		analyzer.FormatMs(x.P95.Baseline), analyzer.FormatMs(x.P95.Candidate), change(x.P95),
		analyzer.FormatMs(x.P99.Baseline), analyzer.FormatMs(x.P99.Candidate), change(x.P99))
	if x.P95.WithoutSetAside {
		s += fmt.Sprintf(", without the %s set aside", plural(len(c.SetAside), "slice pair"))
	}
	return s
}

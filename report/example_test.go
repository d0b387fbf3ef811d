package report_test

import (
	"context"
	"fmt"
	"os"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

// Compare two run files and print the Markdown Result block, as
// `replay compare RUN_A RUN_B --format markdown` does.
func Example() {
	ctx := context.Background()
	base, err := snapshots.OpenRun("baseline.run")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer base.Close()
	cand, err := snapshots.OpenRun("candidate.run")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer cand.Close()
	c, err := analyzer.CompareRuns(ctx, base, cand, analyzer.SummarizeOptions{}, analyzer.CompareOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	goals, err := analyzer.ParseGoals([]string{"p95<500ms", "GET /orders: sql<=5"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	r := &report.ComparisonReport{
		Comparison: c,
		Goals:      analyzer.Check(c.Candidate, goals),
		Artifacts:  []report.Artifact{{Name: "baseline run", Path: "baseline.run"}, {Name: "candidate run", Path: "candidate.run"}},
	}
	if err := report.WriteComparison(os.Stdout, report.Markdown, r); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if !r.Passed() {
		fmt.Fprintln(os.Stderr, "regression or missed goal") // the CLI exits 99
	}
}

package analyzer

import (
	"context"
	"fmt"
	"iter"

	"github.com/replaykit/replay/snapshots"
)

// RunSource is a run to read: *snapshots.Run satisfies it.
type RunSource interface {
	Info() snapshots.RunInfo
	Results(ctx context.Context) iter.Seq2[*snapshots.Result, error]
}

var _ RunSource = (*snapshots.Run)(nil)

// SummarizeRun summarizes a run read from r.
func SummarizeRun(ctx context.Context, r RunSource, opts SummarizeOptions) (*Summary, error) {
	return Summarize(ctx, r.Info(), r.Results(ctx), opts)
}

// CompareRuns summarizes two runs and compares the candidate with the
// baseline.
func CompareRuns(ctx context.Context, base, cand RunSource, sopts SummarizeOptions, copts CompareOptions) (*Comparison, error) {
	b, err := SummarizeRun(ctx, base, sopts)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	k, err := SummarizeRun(ctx, cand, sopts)
	if err != nil {
		return nil, fmt.Errorf("candidate: %w", err)
	}
	return Compare(b, k, copts)
}

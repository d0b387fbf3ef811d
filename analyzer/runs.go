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

// CompareRuns summarizes two runs, side by side (reading a run file is
// what takes time), and compares the candidate with the baseline. The two
// sources must be safe to read at the same time (two *snapshots.Run are).
func CompareRuns(ctx context.Context, base, cand RunSource, sopts SummarizeOptions, copts CompareOptions) (*Comparison, error) {
	var k *Summary
	var kerr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		k, kerr = SummarizeRun(ctx, cand, sopts)
	}()
	b, berr := SummarizeRun(ctx, base, sopts)
	<-done
	if berr != nil {
		return nil, fmt.Errorf("baseline: %w", berr)
	}
	if kerr != nil {
		return nil, fmt.Errorf("candidate: %w", kerr)
	}
	return Compare(b, k, copts)
}

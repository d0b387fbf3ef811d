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

// SummarizeRun summarizes a run read from r, with the answers it captured
// when r is a ResponseSource (Summary.Responses).
func SummarizeRun(ctx context.Context, r RunSource, opts SummarizeOptions) (*Summary, error) {
	s, err := Summarize(ctx, r.Info(), r.Results(ctx), opts)
	if err != nil {
		return nil, err
	}
	if s.Responses, err = ReadResponses(r); err != nil {
		return nil, fmt.Errorf("summarize run %q: %w", r.Info().Name, err)
	}
	return s, nil
}

// CompareRuns summarizes two runs, side by side (reading a run file is
// what takes time), and compares the candidate with the baseline. The two
// sources must be safe to read at the same time (two *snapshots.Run are).
// With copts.Recorded, the recording's answers to the requests the
// baseline sampled teach the comparison of answers their noise too.
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
	if copts.Recorded != nil && b.Responses != nil {
		rec, err := readRecorded(ctx, copts.Recorded, b.Responses.Endpoints, false, false)
		if err != nil {
			return nil, fmt.Errorf("compare responses: %w", err)
		}
		b.Responses.Recorded = rec
	}
	return Compare(b, k, copts)
}

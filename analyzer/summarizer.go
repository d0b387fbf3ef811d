package analyzer

import (
	"fmt"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Summarizer is Summarize fed one result at a time, as a run makes them
// (replay's run writes each result to its file and adds it here, while it
// is still in the cache). Not safe for concurrent use.
type Summarizer struct {
	info snapshots.RunInfo
	op   string
	a    *runAcc
}

// NewSummarizer returns a Summarizer of the run info describes.
func NewSummarizer(info snapshots.RunInfo, opts SummarizeOptions) (*Summarizer, error) {
	if opts.SampleSize < 0 {
		return nil, fmt.Errorf("summarize: sample size %d is negative", opts.SampleSize)
	}
	if opts.SampleSize == 0 {
		opts.SampleSize = DefaultSampleSize
	}
	if opts.Seed == 0 {
		opts.Seed = 1
	}
	op := "summarize run"
	if info.Name != "" {
		op = fmt.Sprintf("summarize run %q", info.Name)
	}
	a := &runAcc{opts: opts, endpoints: map[string]*endpointAcc{}, slices: map[int]int64{}, sliceSpans: map[int][2]time.Time{}, allSliced: true, weights: info.ExplainWeights}
	a.counted = info.UnattributedSQL.Kept()
	return &Summarizer{info: info, op: op, a: a}, nil
}

// Add adds r (it keeps nothing of r but strings).
func (sz *Summarizer) Add(r *snapshots.Result) { sz.a.add(r) }

// Summary returns the figures of the results added so far.
func (sz *Summarizer) Summary() *Summary { return sz.a.summary(sz.info) }

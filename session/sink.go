package session

import (
	"sync"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// summarySink writes results to the run file and adds them to the run's
// summary as they come, on the producer's goroutine: the result is still
// in its cache then, where a goroutine of the summary's own read it on the
// other core, a few cache misses a result, and was woken for it
// (docs/benchmarks.md). Neither keeps the result.
type summarySink struct {
	rw *snapshots.RunWriter

	mu  sync.Mutex
	sum *analyzer.Summarizer
	err error
}

func newSummarySink(rw *snapshots.RunWriter, info snapshots.RunInfo) *summarySink {
	sum, err := analyzer.NewSummarizer(info, analyzer.SummarizeOptions{})
	return &summarySink{rw: rw, sum: sum, err: err}
}

func (s *summarySink) Add(r *snapshots.Result) {
	s.rw.Pack(r)
	s.mu.Lock()
	if s.sum != nil {
		s.sum.Add(r)
	}
	s.mu.Unlock()
}

// CopiesResults: neither the run writer nor the summary keeps a result.
func (s *summarySink) CopiesResults() {}

// packing is a sink that writes results to a run file packed at once
// (RunWriter.Pack), so that the replayer may reuse them.
type packing struct{ rw *snapshots.RunWriter }

func (p packing) Add(r *snapshots.Result) { p.rw.Pack(r) }

func (packing) CopiesResults() {}

// summary returns the summary of the results added so far.
func (s *summarySink) summary() (*analyzer.Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	return s.sum.Summary(), nil
}

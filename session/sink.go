package session

import (
	"context"
	"sync"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// summarySink writes results to the run file and feeds them to the
// analyzer as they come, in batches: handing each result over on its own
// would wake the analyzer's goroutine once a request, which costs the load
// generator more than the analysis (docs/benchmarks.md).
type summarySink struct {
	rw   *snapshots.RunWriter
	ch   chan []*snapshots.Result
	done chan struct{}
	sum  *analyzer.Summary
	err  error

	mu  sync.Mutex
	buf []*snapshots.Result // not handed over yet
}

// summaryBatch is how many results go to the analyzer at once; the
// channel holds summaryBatches batches, as many results as before
// batching.
const (
	summaryBatch   = 256
	summaryBatches = 16
)

func newSummarySink(ctx context.Context, rw *snapshots.RunWriter, info snapshots.RunInfo) *summarySink {
	s := &summarySink{rw: rw, ch: make(chan []*snapshots.Result, summaryBatches), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		results := func(yield func(*snapshots.Result, error) bool) {
			for b := range s.ch {
				for _, r := range b {
					if !yield(r, nil) {
						for range s.ch { // the analyzer stopped: keep the replayer from blocking
						}
						return
					}
				}
			}
		}
		s.sum, s.err = analyzer.Summarize(context.WithoutCancel(ctx), info, results, analyzer.SummarizeOptions{})
	}()
	return s
}

func (s *summarySink) Add(r *snapshots.Result) {
	s.rw.Add(r)
	s.mu.Lock()
	if s.buf == nil {
		s.buf = make([]*snapshots.Result, 0, summaryBatch)
	}
	s.buf = append(s.buf, r)
	var full []*snapshots.Result
	if len(s.buf) == summaryBatch {
		full, s.buf = s.buf, nil
	}
	s.mu.Unlock()
	if full != nil {
		s.ch <- full
	}
}

// summary ends the stream and returns the summary.
func (s *summarySink) summary() (*analyzer.Summary, error) {
	s.mu.Lock()
	rest := s.buf
	s.buf = nil
	s.mu.Unlock()
	if len(rest) > 0 {
		s.ch <- rest
	}
	close(s.ch)
	<-s.done
	return s.sum, s.err
}

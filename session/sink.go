package session

import (
	"context"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// summarySink writes results to the run file and feeds them to the
// analyzer as they come.
type summarySink struct {
	rw   *snapshots.RunWriter
	ch   chan *snapshots.Result
	done chan struct{}
	sum  *analyzer.Summary
	err  error
}

func newSummarySink(ctx context.Context, rw *snapshots.RunWriter, info snapshots.RunInfo) *summarySink {
	s := &summarySink{rw: rw, ch: make(chan *snapshots.Result, 4096), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		results := func(yield func(*snapshots.Result, error) bool) {
			for r := range s.ch {
				if !yield(r, nil) {
					break
				}
			}
			for range s.ch { // the analyzer stopped: keep the replayer from blocking
			}
		}
		s.sum, s.err = analyzer.Summarize(context.WithoutCancel(ctx), info, results, analyzer.SummarizeOptions{})
	}()
	return s
}

func (s *summarySink) Add(r *snapshots.Result) {
	s.rw.Add(r)
	s.ch <- r
}

// summary ends the stream and returns the summary.
func (s *summarySink) summary() (*analyzer.Summary, error) {
	close(s.ch)
	<-s.done
	return s.sum, s.err
}

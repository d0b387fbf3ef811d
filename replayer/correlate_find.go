package replayer

import (
	"context"
	"fmt"
	"sync"

	"github.com/replaykit/replay/snapshots"
)

// AnswerReader reads recorded answers by exchange id; *snapshots.Snapshot
// is one. A Source whose snapshot is one can be correlated.
type AnswerReader interface {
	Answers(ctx context.Context, ids []int64) ([]*snapshots.Exchange, error)
}

// sourceLinks caches the links of a Source per session key, so that both
// sides of a comparison share one scan.
type sourceLinks struct {
	mu   sync.Mutex
	sets map[string]*linkSet
	errs map[string]error
}

// findLinks returns the links of the request sequence: from cfg.Exchanges,
// or by reading cfg.Source's requests and answers once (under the Source's
// context). Nil when there are none.
func findLinks(cfg Config, seq requestSeq) (*linkSet, error) {
	key := cfg.State.SessionKey
	if cfg.Source == nil {
		d := newLinkDetector(key)
		byID := make(map[int64]*snapshots.Exchange, len(cfg.Exchanges))
		for _, e := range cfg.Exchanges {
			if e != nil {
				byID[e.ID] = e
			}
		}
		for i := range seq.len() {
			if e := byID[seq.id(i)]; e != nil {
				d.add(i, e)
			}
		}
		return d.done(seq.len()), nil
	}
	src := cfg.Source
	src.links.mu.Lock()
	defer src.links.mu.Unlock()
	if set, ok := src.links.sets[key]; ok {
		return set, src.links.errs[key]
	}
	set, err := src.scanLinks(src.ctx, key) // the source's reads are bounded by its own context
	if src.links.sets == nil {
		src.links.sets, src.links.errs = map[string]*linkSet{}, map[string]error{}
	}
	src.links.sets[key], src.links.errs[key] = set, err
	return set, err
}

// scanLinks reads the source's requests and their recorded answers, batch
// by batch, and finds the links between them.
func (s *Source) scanLinks(ctx context.Context, key string) (*linkSet, error) {
	ar, ok := s.snap.(AnswerReader)
	if !ok {
		return nil, nil
	}
	d := newLinkDetector(key)
	for b := range s.batchCount() {
		ids := s.ids.Slice(b*SourceBatch, min((b+1)*SourceBatch, s.ids.Len()))
		reqs, err := s.snap.Requests(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("replayer: correlate: %w", err)
		}
		answers, err := ar.Answers(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("replayer: correlate: %w", err)
		}
		byID := make(map[int64]*snapshots.Exchange, len(answers))
		for _, a := range answers {
			byID[a.ID] = a
		}
		for i, e := range reqs {
			if a := byID[e.ID]; a != nil {
				e.Status, e.ResponseHeader, e.ResponseBody = a.Status, a.ResponseHeader, a.ResponseBody
			}
			d.add(b*SourceBatch+i, e)
		}
	}
	return d.done(s.ids.Len()), nil
}

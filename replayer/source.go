package replayer

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync"

	"github.com/replaykit/replay/internal/batchcache"
	"github.com/replaykit/replay/internal/idlist"
	"github.com/replaykit/replay/internal/spool"

	"github.com/replaykit/replay/snapshots"
)

// SnapshotReader is what a Source reads requests from;
// *snapshots.Snapshot is one.
type SnapshotReader interface {
	Index(ctx context.Context, d snapshots.Direction) iter.Seq2[snapshots.IndexEntry, error]
	Requests(ctx context.Context, ids []int64) ([]*snapshots.Exchange, error)
}

// SourceBatch is the number of requests a Source reads from its snapshot at
// once; SourceWindow the number of such batches it (and each Replayer
// reading from it) keeps in memory: the batch the load is at, the ones
// just behind and the next, read ahead.
const (
	SourceBatch  = 512
	SourceWindow = 6
)

// Source is the recorded inbound requests of a snapshot, read as the load
// needs them: in memory it holds an index (ID, endpoint and start of every
// request: 20 bytes each) and a window of batches around the cursor, never
// every body. Both sides of a comparison share one. Safe for concurrent use.
type Source struct {
	snap       SnapshotReader
	ids        idlist.List // by position: ascending
	eps        []uint32
	starts     []int64 // unix ns (0: none recorded); read on first need (loadStarts)
	startsErr  error
	startsOnce sync.Once
	ctx        context.Context
	names      []string
	first      []int // by endpoint: its first position
	truncated  map[string]int64
	batches    *batchcache.Cache[[]*snapshots.Exchange]
	spool      *spool.File // set by Spool before the load
	links      sourceLinks // correlate_find.go
}

// NewSource indexes the inbound requests of snap that a Replayer selecting
// endpoints (Config.Endpoints) replays. It fails with ErrNoRequests when
// none is left.
func NewSource(ctx context.Context, snap SnapshotReader, endpoints []string) (*Source, error) {
	filter, err := newEndpointFilter(endpoints)
	if err != nil {
		return nil, err
	}
	s := &Source{snap: snap, ctx: ctx}
	byName := map[string]uint32{}
	seen := map[string]bool{}
	for e, err := range snap.Index(ctx, snapshots.Inbound) {
		if err != nil {
			return nil, err
		}
		seen[e.Endpoint] = true
		if !filter.match(e.Endpoint) {
			continue
		}
		ep, ok := byName[e.Endpoint]
		if !ok {
			ep = uint32(len(s.names))
			byName[e.Endpoint] = ep
			s.names = append(s.names, e.Endpoint)
			s.first = append(s.first, s.ids.Len())
		}
		if e.Truncated {
			if s.truncated == nil {
				s.truncated = map[string]int64{}
			}
			s.truncated[e.Endpoint]++
		}
		s.ids.Append(e.ID)
		s.eps = append(s.eps, ep)
	}
	if s.ids.Len() == 0 {
		if len(endpoints) > 0 && len(seen) > 0 {
			return nil, fmt.Errorf("replayer: %w: --endpoint %s matches none of %s", ErrNoRequests,
				strings.Join(endpoints, ", "), strings.Join(sortedKeys(seen), ", "))
		}
		return nil, fmt.Errorf("replayer: %w", ErrNoRequests)
	}
	// Trim what append over-allocated: at 3M requests, tens of MB.
	s.ids.Clip()
	s.eps = idlist.Trim(s.eps)
	s.batches = batchcache.New(s.batchCount(), SourceWindow, func(b int) ([]*snapshots.Exchange, error) {
		if s.spool != nil {
			return s.spool.Batch(b)
		}
		return s.read(ctx, b)
	})
	return s, nil
}

// Spool copies the requests to a spool in dir (the temporary directory
// when empty), so that the load reads them from there; call it before the
// load, and close what it returns after. It fails with spool.ErrNoSpool
// when the disk has no room for them or the spool cannot be written, and
// the requests are then read from the snapshot as the load goes.
func (s *Source) Spool(ctx context.Context, dir string) (io.Closer, error) {
	f, err := spool.Build(ctx, dir, s.batchCount(), func(b int) ([]*snapshots.Exchange, error) { return s.read(ctx, b) })
	if err != nil {
		return nil, err // read's errors name the replayer, the spool's the spool
	}
	s.spool = f
	return f, nil
}

// SpoolSize returns the size of the spool in bytes; 0 without one.
func (s *Source) SpoolSize() int64 {
	if s.spool == nil {
		return 0
	}
	return s.spool.Size()
}

// Len returns the number of requests in one pass.
func (s *Source) Len() int { return s.ids.Len() }

// Truncated counts, per endpoint, the requests whose body was cut at
// recording; nil when none was.
func (s *Source) Truncated() map[string]int64 { return s.truncated }

// Contains reports whether the exchange id is one of the source's requests.
func (s *Source) Contains(id int64) bool {
	return s.ids.Contains(id)
}

// Reads returns the number of batches read from the snapshot so far.
func (s *Source) Reads() int64 { return s.batches.Loads() }

// start returns the recorded start of position i in unix ns (0: none),
// reading every start on first use.
func (s *Source) start(i int) (int64, error) {
	s.startsOnce.Do(func() { s.starts, s.startsErr = s.loadStarts() })
	if s.startsErr != nil {
		return 0, s.startsErr
	}
	return s.starts[i], nil
}

// loadStarts reads the recorded starts of the source's requests.
func (s *Source) loadStarts() ([]int64, error) {
	n := s.ids.Len()
	starts := make([]int64, n)
	i := 0
	for e, err := range s.snap.Index(s.ctx, snapshots.Inbound) {
		if err != nil {
			return nil, err
		}
		if i < n && s.ids.At(i) == e.ID {
			if !e.Start.IsZero() {
				starts[i] = e.Start.UnixNano()
			}
			i++
		}
	}
	if i < n {
		return nil, fmt.Errorf("replayer: %d recorded requests went missing from the snapshot", n-i)
	}
	return starts, nil
}

func (s *Source) batchCount() int { return (s.ids.Len() + SourceBatch - 1) / SourceBatch }

// read reads batch b from the snapshot.
func (s *Source) read(ctx context.Context, b int) ([]*snapshots.Exchange, error) {
	ids := s.ids.Slice(b*SourceBatch, min((b+1)*SourceBatch, s.ids.Len()))
	exs, err := s.snap.Requests(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(exs) != len(ids) {
		return nil, fmt.Errorf("replayer: read requests %d to %d: %d of %d missing from the snapshot", ids[0], ids[len(ids)-1], len(ids)-len(exs), len(ids))
	}
	return exs, nil
}

package replayer

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

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
	snap      SnapshotReader
	ids       []int64 // by position: ascending
	eps       []uint32
	starts    []int64 // unix ns; 0: none recorded
	names     []string
	first     []int // by endpoint: its first position
	truncated map[string]int64
	batches   *batchCache[[]*snapshots.Exchange]
}

// NewSource indexes the inbound requests of snap that a Replayer selecting
// endpoints (Config.Endpoints) replays. It fails with ErrNoRequests when
// none is left.
func NewSource(ctx context.Context, snap SnapshotReader, endpoints []string) (*Source, error) {
	filter, err := newEndpointFilter(endpoints)
	if err != nil {
		return nil, err
	}
	s := &Source{snap: snap}
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
			s.first = append(s.first, len(s.ids))
		}
		if e.Truncated {
			if s.truncated == nil {
				s.truncated = map[string]int64{}
			}
			s.truncated[e.Endpoint]++
		}
		var ns int64
		if !e.Start.IsZero() {
			ns = e.Start.UnixNano()
		}
		s.ids, s.eps, s.starts = append(s.ids, e.ID), append(s.eps, ep), append(s.starts, ns)
	}
	if len(s.ids) == 0 {
		if len(endpoints) > 0 && len(seen) > 0 {
			return nil, fmt.Errorf("replayer: %w: --endpoint %s matches none of %s", ErrNoRequests,
				strings.Join(endpoints, ", "), strings.Join(sortedKeys(seen), ", "))
		}
		return nil, fmt.Errorf("replayer: %w", ErrNoRequests)
	}
	// Trim what append over-allocated: at 3M requests, tens of MB.
	s.ids, s.eps, s.starts = slices.Clip(s.ids), slices.Clip(s.eps), slices.Clip(s.starts)
	s.batches = newBatchCache(s.batchCount(), func(b int) ([]*snapshots.Exchange, error) {
		return s.read(ctx, b)
	})
	return s, nil
}

// Len returns the number of requests in one pass.
func (s *Source) Len() int { return len(s.ids) }

// Truncated counts, per endpoint, the requests whose body was cut at
// recording; nil when none was.
func (s *Source) Truncated() map[string]int64 { return s.truncated }

// Contains reports whether the exchange id is one of the source's requests.
func (s *Source) Contains(id int64) bool {
	_, ok := slices.BinarySearch(s.ids, id)
	return ok
}

// Reads returns the number of batches read from the snapshot so far.
func (s *Source) Reads() int64 { return s.batches.loads.Load() }

func (s *Source) batchCount() int { return (len(s.ids) + SourceBatch - 1) / SourceBatch }

// read reads batch b from the snapshot.
func (s *Source) read(ctx context.Context, b int) ([]*snapshots.Exchange, error) {
	ids := s.ids[b*SourceBatch : min((b+1)*SourceBatch, len(s.ids))]
	exs, err := s.snap.Requests(ctx, ids)
	if err != nil {
		return nil, err
	}
	if len(exs) != len(ids) {
		return nil, fmt.Errorf("replayer: read requests %d to %d: %d of %d missing from the snapshot", ids[0], ids[len(ids)-1], len(ids)-len(exs), len(ids))
	}
	return exs, nil
}

// batchCache keeps the last SourceWindow batches loaded, loading each once
// however many goroutines ask for it, and the next one ahead of need.
type batchCache[T any] struct {
	n     int // batches in all
	load  func(b int) (T, error)
	loads atomic.Int64

	mu    sync.Mutex
	m     map[int]*batch[T]
	order []int // in order of loading: the oldest goes first
}

type batch[T any] struct {
	ready chan struct{}
	v     T
	err   error
}

func newBatchCache[T any](n int, load func(b int) (T, error)) *batchCache[T] {
	return &batchCache[T]{n: n, load: load, m: map[int]*batch[T]{}}
}

// get returns batch b, loading it (and starting to load b+1) if needed.
func (c *batchCache[T]) get(b int) (T, error) {
	c.mu.Lock()
	e := c.m[b]
	if e == nil {
		e = c.start(b)
		if next := (b + 1) % c.n; c.m[next] == nil {
			c.start(next)
		}
	}
	c.mu.Unlock()
	<-e.ready
	return e.v, e.err
}

// start loads b in the background, forgetting the oldest batch when the
// window is full (its readers keep their copy); c.mu is held.
func (c *batchCache[T]) start(b int) *batch[T] {
	e := &batch[T]{ready: make(chan struct{})}
	c.m[b] = e
	c.order = append(c.order, b)
	for len(c.order) > SourceWindow {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.loads.Add(1)
	go func() {
		e.v, e.err = c.load(b)
		close(e.ready)
	}()
	return e
}

// len returns the number of batches held now.
func (c *batchCache[T]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

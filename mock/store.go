package mock

import (
	"context"
	"fmt"
	"iter"
	"sync"

	"github.com/replaykit/replay/snapshots"
)

// Recording is a snapshot a mock reads its exchanges from (Config.Snapshot);
// *snapshots.Snapshot is one.
type Recording interface {
	// Calls yields the outbound exchanges in recorded order; their
	// responses need not be filled in.
	Calls(ctx context.Context) iter.Seq2[*snapshots.Exchange, error]
	// ExchangesByID returns the exchanges with the given IDs, whole.
	ExchangesByID(ctx context.Context, ids []int64) ([]*snapshots.Exchange, error)
}

// ResponseCache is the number of recorded exchanges a mock reading from a
// Recording keeps in memory: the last ones it answered with.
const ResponseCache = 1024

// store gives the recorded exchange of an ID: from memory
// (Config.Exchanges) or read from a Recording, the last ResponseCache kept.
type store struct {
	mem map[int64]*snapshots.Exchange
	rec Recording

	mu    sync.Mutex
	cache map[int64]*snapshots.Exchange
	ring  []int64 // the cached IDs, the oldest at next
	next  int
	reads int64
}

func newStore(cfg Config) *store {
	if cfg.Snapshot != nil {
		return &store{rec: cfg.Snapshot, cache: map[int64]*snapshots.Exchange{}}
	}
	st := &store{mem: make(map[int64]*snapshots.Exchange, len(cfg.Exchanges))}
	for _, e := range cfg.Exchanges {
		if e != nil {
			st.mem[e.ID] = e
		}
	}
	return st
}

// get returns exchange id; one that cannot be read is an exchange with no
// status and the error, which the mock answers with a 502 saying it.
func (st *store) get(ctx context.Context, id int64) *snapshots.Exchange {
	if st.mem != nil {
		return st.mem[id]
	}
	st.mu.Lock()
	e := st.cache[id]
	st.mu.Unlock()
	if e != nil {
		return e
	}
	exs, err := st.rec.ExchangesByID(ctx, []int64{id})
	if err == nil && len(exs) == 0 {
		err = fmt.Errorf("no exchange %d", id)
	}
	if err != nil {
		return &snapshots.Exchange{ID: id, Error: "replay mock: read the recorded response: " + err.Error()}
	}
	e = exs[0]
	st.mu.Lock()
	defer st.mu.Unlock()
	st.reads++
	if c := st.cache[id]; c != nil {
		return c
	}
	if len(st.ring) < ResponseCache {
		st.ring = append(st.ring, id)
	} else {
		delete(st.cache, st.ring[st.next])
		st.ring[st.next] = id
		st.next = (st.next + 1) % ResponseCache
	}
	st.cache[id] = e
	return e
}

// exchanges yields the recorded exchanges: those in memory, or the
// Recording's calls.
func (st *store) exchanges(ctx context.Context, mem []*snapshots.Exchange) iter.Seq2[*snapshots.Exchange, error] {
	if st.rec != nil {
		return st.rec.Calls(ctx)
	}
	return func(yield func(*snapshots.Exchange, error) bool) {
		for _, e := range mem {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// buildMatcher indexes the recorded exchanges of cfg (in memory or read from
// its Snapshot) for matching.
func buildMatcher(ctx context.Context, st *store, cfg Config) (*matcher, error) {
	ix := newIndexer()
	exs := cfg.Exchanges
	if st.rec == nil {
		exs = byRecordedOrder(exs)
	}
	for e, err := range st.exchanges(ctx, exs) {
		if err != nil {
			return nil, err
		}
		if err := ix.add(e); err != nil {
			return nil, err
		}
	}
	vol := newVolatility(append(ix.keys, cfg.VolatileKeys...))
	return ix.matcher(vol, cfg.Rules), nil
}

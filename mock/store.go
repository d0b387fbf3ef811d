package mock

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/replaykit/replay/internal/batchcache"
	"github.com/replaykit/replay/internal/idlist"
	"github.com/replaykit/replay/internal/spool"
	"github.com/replaykit/replay/snapshots"
)

// Recording is a snapshot a mock reads its exchanges from (Config.Snapshot);
// *snapshots.Snapshot is one.
type Recording interface {
	// Calls yields the outbound exchanges in recorded order; their
	// responses need not be filled in.
	Calls(ctx context.Context) iter.Seq2[*snapshots.Exchange, error]
	// Answers returns the exchanges with the given IDs in the order of
	// ids with at least their ID, method, URL, duration, status, response
	// header and body, the body's recorded size and error.
	Answers(ctx context.Context, ids []int64) ([]*snapshots.Exchange, error)
	// CallParents yields the service and parent of every outbound
	// exchange with a parent.
	CallParents(ctx context.Context) iter.Seq2[snapshots.CallParent, error]
}

// A mock reading from a Recording reads the answers in batches of
// ResponseBatch consecutive recorded calls, and keeps ResponseWindow
// batches: a build replayed in the recorded order makes its calls in about
// that order, so one read serves many answers.
const (
	ResponseBatch  = 128
	ResponseWindow = 8
)

// store gives the recorded exchange at a position of the recorded order:
// from memory (Config.Exchanges) or read from a Recording.
type store struct {
	calls   *idlist.List // exchange IDs, by position in recorded order
	mem     map[int64]*snapshots.Exchange
	rec     Recording
	batches *batchcache.Cache[[]*snapshots.Exchange]
	spool   *spool.File // set by Index.Spool before the load
	answers func(b int) ([]*snapshots.Exchange, error)
}

func newStore(cfg Config, calls *idlist.List) *store {
	st := &store{calls: calls, rec: cfg.Snapshot}
	if cfg.Snapshot == nil {
		st.mem = make(map[int64]*snapshots.Exchange, len(cfg.Exchanges))
		for _, e := range cfg.Exchanges {
			if e != nil {
				st.mem[e.ID] = e
			}
		}
		return st
	}
	calls.Clip()
	n := (calls.Len() + ResponseBatch - 1) / ResponseBatch
	st.answers = func(b int) ([]*snapshots.Exchange, error) {
		ids := calls.Slice(b*ResponseBatch, min((b+1)*ResponseBatch, calls.Len()))
		exs, err := cfg.Snapshot.Answers(context.Background(), ids)
		if err == nil && len(exs) != len(ids) {
			err = fmt.Errorf("%d of the recorded exchanges %d to %d are missing", len(ids)-len(exs), ids[0], ids[len(ids)-1])
		}
		return exs, err
	}
	st.batches = batchcache.New(n, ResponseWindow, func(b int) ([]*snapshots.Exchange, error) {
		if st.spool != nil {
			return st.spool.Batch(b)
		}
		return st.answers(b)
	})
	return st
}

// get returns the exchange at recorded position pos; one that cannot be
// read is an exchange with no status and the error, which the mock answers
// with a 502 saying it.
func (st *store) get(pos int) *snapshots.Exchange {
	if st.mem != nil {
		return st.mem[st.calls.At(pos)]
	}
	b := pos / ResponseBatch
	exs, err := st.batches.Get(b)
	if err != nil {
		return &snapshots.Exchange{ID: st.calls.At(pos), Error: "replay mock: read the recorded response: " + err.Error()}
	}
	return exs[pos-b*ResponseBatch]
}

// exchanges yields the recorded exchanges: mem, or the Recording's calls.
func exchanges(ctx context.Context, cfg Config) iter.Seq2[*snapshots.Exchange, error] {
	if cfg.Snapshot != nil {
		return cfg.Snapshot.Calls(ctx)
	}
	return func(yield func(*snapshots.Exchange, error) bool) {
		for _, e := range byRecordedOrder(cfg.Exchanges) {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Index is the recorded exchanges of a Config indexed for matching: each
// distinct request once and a position per recorded call (12 bytes), with
// the answers read from the snapshot as needed. The Servers of a session
// (one a side) share one: Config.Index.
type Index struct {
	m     *matcher
	store *store
}

// Spool copies the recorded answers to a spool in dir (the temporary
// directory when empty), so that the mocks read them from there; call it
// before the load, and close what it returns after. It fails with
// spool.ErrNoSpool when the disk has no room for them or the spool cannot
// be written, and the answers are then read from the snapshot as needed.
// Nothing is spooled for an Index of Config.Exchanges (in memory): it
// returns nil then.
func (ix *Index) Spool(ctx context.Context, dir string) (io.Closer, error) {
	st := ix.store
	if st.answers == nil || st.calls.Len() == 0 {
		return nil, nil
	}
	f, err := spool.Build(ctx, dir, (st.calls.Len()+ResponseBatch-1)/ResponseBatch, func(b int) ([]*snapshots.Exchange, error) {
		exs, err := st.answers(b)
		if err != nil {
			err = fmt.Errorf("mock: %w", err)
		}
		return exs, err
	})
	if err != nil {
		return nil, err
	}
	st.spool = f
	return f, nil
}

// SpoolSize returns the size of the spool in bytes; 0 without one.
func (ix *Index) SpoolSize() int64 {
	if ix.store.spool == nil {
		return 0
	}
	return ix.store.spool.Size()
}

// Calls returns the number of recorded calls indexed.
func (ix *Index) Calls() int { return ix.store.calls.Len() }

// NewIndex indexes the recorded exchanges of cfg (Exchanges, or read from
// Snapshot) with its Rules and VolatileKeys.
func NewIndex(ctx context.Context, cfg Config) (*Index, error) {
	ix := newIndexer(cfg.Decoder)
	for e, err := range exchanges(ctx, cfg) {
		if err != nil {
			return nil, fmt.Errorf("mock: %w", err)
		}
		if err := ix.add(e); err != nil {
			return nil, fmt.Errorf("mock: %w", err)
		}
	}
	vol := newVolatility(append(ix.keys, cfg.VolatileKeys...))
	return &Index{m: ix.matcher(vol, cfg.Rules), store: newStore(cfg, &ix.calls)}, nil
}

// RecordedCalls counts the recorded calls to mocked services whose parent
// (snapshots.Exchange.ParentID) is an inbound exchange parent says; read
// from the snapshot again with Config.Snapshot.
func (s *Server) RecordedCalls(ctx context.Context, parent func(id int64) bool) (int64, error) {
	var n int64
	count := func(service string, p int64) {
		if p != 0 && s.mocked[strings.ToLower(service)] && parent(p) {
			n++
		}
	}
	if s.cfg.Snapshot != nil {
		for c, err := range s.cfg.Snapshot.CallParents(ctx) {
			if err != nil {
				return n, err
			}
			count(c.Service, c.Parent)
		}
		return n, nil
	}
	for _, e := range s.cfg.Exchanges {
		if e != nil && e.Direction != snapshots.Inbound {
			count(e.Service, e.ParentID)
		}
	}
	return n, nil
}

package snapshots

import (
	"container/heap"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strconv"
)

// Run is an open run file, read-only. Its methods are safe for concurrent
// use.
type Run struct {
	path string
	db   *sql.DB
	info RunInfo
	base int64 // what the results' times are relative to
}

// OpenRun opens a run file, with the same errors as Open.
func OpenRun(path string) (*Run, error) {
	db, err := openFile(path, kindRun)
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", path, err)
	}
	info, base, err := readRunInfo(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open run %s: %w", path, err)
	}
	return &Run{path: path, db: db, info: info, base: base}, nil
}

func readRunInfo(db *sql.DB) (info RunInfo, base int64, err error) {
	rows, err := db.Query(`SELECT key, value FROM run_info`)
	if err != nil {
		return info, 0, fmt.Errorf("read run info: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return info, 0, fmt.Errorf("read run info: %w", err)
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "name":
			info.Name = v
		case "snapshot":
			info.Snapshot = v
		case "target":
			info.Target = v
		case "started_ns":
			info.Started = fromUnixNano(n)
		case "ended_ns":
			info.Ended = fromUnixNano(n)
		case "load_started_ns":
			info.LoadStarted = fromUnixNano(n)
		case "load_ended_ns":
			info.LoadEnded = fromUnixNano(n)
		case "settings":
			if err := json.Unmarshal([]byte(v), &info.Settings); err != nil {
				return info, 0, fmt.Errorf("read run info: settings: %w", err)
			}
		case "mock_misses":
			info.MockMisses = n
		case "statements":
			info.Statements = n
		case "explain_weights":
			if err := json.Unmarshal([]byte(v), &info.ExplainWeights); err != nil {
				return info, 0, fmt.Errorf("read run info: explain weights: %w", err)
			}
		case "load_sql":
			info.LoadSQL = new(LoadSQL)
			if err := json.Unmarshal([]byte(v), info.LoadSQL); err != nil {
				return info, 0, fmt.Errorf("read run info: load sql: %w", err)
			}
		case "build_cpu":
			info.BuildCPU = new(BuildCPU)
			if err := json.Unmarshal([]byte(v), info.BuildCPU); err != nil {
				return info, 0, fmt.Errorf("read run info: build cpu: %w", err)
			}
		case "statement_errors":
			info.StatementErrors = n
		case "truncated":
			if err := json.Unmarshal([]byte(v), &info.Truncated); err != nil {
				return info, 0, fmt.Errorf("read run info: truncated: %w", err)
			}
		case "interrupted":
			info.Interrupted = v == "true"
		case "state":
			info.State = new(State)
			if err := json.Unmarshal([]byte(v), info.State); err != nil {
				return info, 0, fmt.Errorf("read run info: state: %w", err)
			}
		case "base_ns":
			base = n
		case "wiring":
			info.Wiring = new(Wiring)
			if err := json.Unmarshal([]byte(v), info.Wiring); err != nil {
				return info, 0, fmt.Errorf("read run info: wiring: %w", err)
			}
		case "unattributed_sql":
			if info.UnattributedSQL, err = unmarshalHistogram(v); err != nil {
				return info, 0, fmt.Errorf("read run info: unattributed_sql: %w", err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return info, 0, fmt.Errorf("read run info: %w", err)
	}
	return info, base, nil
}

// Path returns the file the run was opened from.
func (r *Run) Path() string { return r.path }

// Info returns the run's description.
func (r *Run) Info() RunInfo { return r.info }

// Count returns the number of results in the run.
func (r *Run) Count(ctx context.Context) (int64, error) {
	var n int64
	if err := r.db.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM results`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read run %s: %w", r.path, err)
	}
	return n, nil
}

// Results yields the run's results in order of Seq. It streams, a block
// of results at a time, so memory stays bounded however many results the
// run holds. Each result is new; those of a run share their strings. A
// result without SQL counts has SQL nil.
func (r *Run) Results(ctx context.Context) iter.Seq2[*Result, error] {
	return func(yield func(*Result, error) bool) {
		if err := r.results(ctx, yield); err != nil {
			yield(nil, fmt.Errorf("read run %s: %w", r.path, err))
		}
	}
}

// maxOpenBlocks bounds the blocks a reader merges at once. A writer's
// blocks need two (one of many results, one late result); more means a
// damaged file.
const maxOpenBlocks = 1024

// results reads on the driver's connection directly: database/sql's
// bookkeeping and conversions per row cost more than the row itself.
func (r *Run) results(ctx context.Context, yield func(*Result, error) bool) error {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		q, ok := dc.(driver.QueryerContext)
		if !ok {
			return fmt.Errorf("sqlite driver connection %T lacks QueryContext", dc)
		}
		rows, err := q.QueryContext(ctx, `SELECT first, data FROM results ORDER BY first`, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		// The string table is read on the same connection while rows is
		// open, so that it sees the same commit (the file may be written
		// meanwhile); it is read when a record names a string it lacks.
		dec := resultDecoder{base: r.base, load: func(from int64) ([]string, error) {
			return loadStrings(ctx, q, from)
		}}
		return mergeBlocks(ctx, rows, func(rec []byte) bool {
			res, err := dec.decode(rec)
			if err != nil {
				yield(nil, fmt.Errorf("read run %s: %w", r.path, err))
				return false
			}
			return yield(res, nil)
		})
	})
}

// blockCursor walks the records of a block.
type blockCursor struct {
	rec, rest []byte // the next record, and those after it
	seq       int64  // rec's Seq
}

// next moves to the record after rec; it reports false at the block's end.
func (c *blockCursor) next() (bool, error) {
	if len(c.rest) == 0 {
		return false, nil
	}
	var err error
	c.rec, c.rest, c.seq, err = splitRecord(c.rest)
	return err == nil, err
}

// mergeBlocks calls yield with the records of the blocks rows yields (first
// Seq, data; in order of first Seq), in order of Seq, until yield returns
// false. Blocks are opened as late as the order allows: a block starting at
// first cannot hold a Seq before first.
func mergeBlocks(ctx context.Context, rows driver.Rows, yield func(rec []byte) bool) error {
	dest := make([]driver.Value, 2)
	var next struct {
		ok    bool
		first int64
		data  []byte
	}
	read := func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				next.ok = false
				return nil
			}
			return err
		}
		next.ok = true
		next.first, _ = dest[0].(int64)
		next.data, _ = dest[1].([]byte)
		return nil
	}
	if err := read(); err != nil {
		return err
	}
	var open cursorHeap
	var last int64
	for started := false; ; started = true {
		for next.ok && (len(open) == 0 || next.first <= open[0].seq) {
			c := &blockCursor{rest: next.data}
			if ok, err := c.next(); !ok || c.seq != next.first {
				return fmt.Errorf("block %d: malformed (%v)", next.first, err)
			}
			if len(open) == maxOpenBlocks {
				return fmt.Errorf("block %d: more than %d overlapping blocks", next.first, maxOpenBlocks)
			}
			heap.Push(&open, c)
			if err := read(); err != nil {
				return err
			}
		}
		if len(open) == 0 {
			return nil
		}
		c := open[0]
		if started && c.seq <= last {
			return fmt.Errorf("result %d out of order or stored twice", c.seq)
		}
		last = c.seq
		rec := c.rec
		ok, err := c.next()
		if err != nil {
			return fmt.Errorf("block of result %d: %w", last, err)
		}
		if ok {
			if len(open) > 1 {
				heap.Fix(&open, 0)
			}
		} else {
			heap.Pop(&open)
		}
		if !yield(rec) {
			return nil
		}
	}
}

// cursorHeap orders open blocks by their next Seq (container/heap).
type cursorHeap []*blockCursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return h[i].seq < h[j].seq }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*blockCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return c
}

// loadStrings reads the string table from the id from on.
func loadStrings(ctx context.Context, q driver.QueryerContext, from int64) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, value FROM strings WHERE id >= ? AND id <= ? ORDER BY id`,
		[]driver.NamedValue{{Ordinal: 1, Value: from}, {Ordinal: 2, Value: int64(maxInterned)}})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var strs []string
	dest := make([]driver.Value, 2)
	for {
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				return strs, nil
			}
			return nil, err
		}
		id, _ := dest[0].(int64)
		s, _ := dest[1].(string)
		if id != from+int64(len(strs)) {
			return nil, fmt.Errorf("string %d missing", from+int64(len(strs)))
		}
		strs = append(strs, s)
	}
}

// Close closes the file.
func (r *Run) Close() error { return r.db.Close() }

package snapshots

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// RunInfo describes a run: what was replayed against what, and how.
type RunInfo struct {
	// Name labels the run, e.g. "baseline" or "candidate".
	Name string
	// Snapshot is the path of the snapshot replayed.
	Snapshot string
	// Target is the URL the requests went to.
	Target string
	// Started and Ended bound the run.
	Started, Ended time.Time
	// Settings records the run's settings (load model, goals, headers…) as
	// key/value pairs for reports.
	Settings map[string]string
	// MockMisses counts requests the mock could not answer.
	MockMisses int64
	// Statements counts SQL statements seen by the counter in total,
	// attributed or not.
	Statements int64
}

// RunWriter streams results into a new run file. Like Writer, it commits
// in batches on its own goroutine, at least once a second.
type RunWriter struct {
	path    string
	info    RunInfo
	b       batcher[*Result]
	lastSeq atomic.Int64

	// Owned by the writing goroutine.
	enc  resultEncoder
	buf  []byte              // the records of one insert
	args []driver.NamedValue // its arguments
}

// resultsPerInsert is how many results one INSERT statement writes: binding
// and running a statement has a cost of its own, which rows share.
const resultsPerInsert = 32

// CreateRun creates a run file at path (ErrExists when it exists).
func CreateRun(path string, info RunInfo) (*RunWriter, error) {
	db, err := createFile(path, kindRun, runDDL)
	if err != nil {
		return nil, fmt.Errorf("create run %s: %w", path, err)
	}
	// Times are stored relative to the base, which takes fewer bytes.
	base := unixNano(info.Started)
	if base == 0 {
		base = time.Now().UnixNano()
	}
	if err := writeRunInfo(db, info, base); err != nil {
		db.Close()
		return nil, fmt.Errorf("create run %s: %w", path, cleanup(path, err))
	}
	w := &RunWriter{path: path, info: info}
	w.enc = resultEncoder{base: base, in: newInterner()}
	// OR IGNORE: a statement that cannot fail half-way needs no statement
	// journal, which costs more than the rows (see runDDL).
	many := `INSERT OR IGNORE INTO results (seq, data) VALUES (?,?)` + strings.Repeat(`,(?,?)`, resultsPerInsert-1)
	w.b = batcher[*Result]{
		db:   db,
		path: path,
		queries: map[string]string{
			"results": many,
			"result":  `INSERT INTO results (seq, data) VALUES (?,?)`,
			"string":  `INSERT INTO strings (id, value) VALUES (?,?)`,
		},
		write:       w.write,
		afterCommit: w.enc.in.committed,
	}
	w.b.start()
	return w, nil
}

// Add queues r for writing, assigning r.Seq when zero. Safe for concurrent
// use; it blocks only while 10000 results are waiting. The writer owns r
// afterwards (it only reads it: r may be shared with other readers).
func (w *RunWriter) Add(r *Result) {
	if r.Seq == 0 {
		r.Seq = w.lastSeq.Add(1)
	} else {
		atomicMax(&w.lastSeq, r.Seq)
	}
	w.b.add(r)
}

// Close writes info (its Ended, MockMisses, Statements and Settings
// replace those given to CreateRun; a zero Ended means now, nil Settings
// keep the earlier ones), commits and closes the file.
func (w *RunWriter) Close(info RunInfo) error {
	err := w.b.close()
	final := w.info
	final.Ended = info.Ended
	if final.Ended.IsZero() {
		final.Ended = time.Now()
	}
	final.MockMisses = info.MockMisses
	final.Statements = info.Statements
	if info.Settings != nil {
		final.Settings = info.Settings
	}
	if ierr := writeRunInfo(w.b.db, final, w.enc.base); err == nil {
		err = ierr
	}
	finish(w.b.db)
	if cerr := w.b.db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write run %s: %w", w.path, err)
	}
	return nil
}

// write inserts chunk, resultsPerInsert results per statement (the rest one
// by one). A result whose Seq is already in the file is dropped and
// reported.
func (w *RunWriter) write(st *stmts, chunk []*Result) {
	if w.enc.newStr == nil {
		w.enc.newStr = func(id int64, s string) error { return st.exec("string", id, s) }
	}
	for len(chunk) > 0 {
		n := min(len(chunk), resultsPerInsert)
		if n < resultsPerInsert {
			n = 1
		}
		part := chunk[:n]
		chunk = chunk[n:]
		w.buf = w.buf[:0]
		ends := [resultsPerInsert]int{}
		for i, r := range part {
			w.buf = w.enc.append(w.buf, r)
			ends[i] = len(w.buf)
		}
		if err := w.enc.err; err != nil {
			w.enc.err = nil
			w.b.fail(fmt.Errorf("result %d: string table: %w", part[0].Seq, err))
		}
		w.args = w.args[:0]
		start := 0
		for i, r := range part {
			w.args = append(w.args,
				driver.NamedValue{Ordinal: 2*i + 1, Value: r.Seq},
				driver.NamedValue{Ordinal: 2*i + 2, Value: w.buf[start:ends[i]]})
			start = ends[i]
		}
		if n == 1 {
			if err := st.execArgs("result", w.args); err != nil {
				w.b.fail(fmt.Errorf("result %d: %w", part[0].Seq, err))
			}
			continue
		}
		res, err := st.m["results"].ExecContext(st.ctx, w.args)
		var added int64
		if err == nil {
			added, err = res.RowsAffected()
		}
		switch {
		case err != nil:
			w.b.fail(fmt.Errorf("results %d to %d: %w", part[0].Seq, part[n-1].Seq, err))
		case added < int64(n):
			w.b.fail(fmt.Errorf("results %d to %d: %d of them have a Seq already written, and were dropped",
				part[0].Seq, part[n-1].Seq, int64(n)-added))
		}
	}
}

// writeRunInfo stores info and the base of the run's times as key/value
// rows, replacing earlier ones.
func writeRunInfo(db *sql.DB, info RunInfo, base int64) error {
	settings, err := json.Marshal(info.Settings)
	if err != nil {
		return fmt.Errorf("store run info: %w", err)
	}
	kv := [][2]string{
		{"name", info.Name},
		{"snapshot", info.Snapshot},
		{"target", info.Target},
		{"started_ns", strconv.FormatInt(unixNano(info.Started), 10)},
		{"ended_ns", strconv.FormatInt(unixNano(info.Ended), 10)},
		{"settings", string(settings)},
		{"mock_misses", strconv.FormatInt(info.MockMisses, 10)},
		{"statements", strconv.FormatInt(info.Statements, 10)},
		{"base_ns", strconv.FormatInt(base, 10)},
	}
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("store run info: %w", err)
	}
	for _, p := range kv {
		if _, err := tx.Exec(`INSERT OR REPLACE INTO run_info (key, value) VALUES (?, ?)`, p[0], p[1]); err != nil {
			tx.Rollback()
			return fmt.Errorf("store run info: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store run info: %w", err)
	}
	return nil
}

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
		case "settings":
			if err := json.Unmarshal([]byte(v), &info.Settings); err != nil {
				return info, 0, fmt.Errorf("read run info: settings: %w", err)
			}
		case "mock_misses":
			info.MockMisses = n
		case "statements":
			info.Statements = n
		case "base_ns":
			base = n
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
	if err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM results`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read run %s: %w", r.path, err)
	}
	return n, nil
}

// Results yields the run's results in order of Seq. It streams, one query
// and one row per result, so memory stays bounded however many results the
// run holds. Each result is new; those of the same run share strings. A
// result without SQL counts has SQL nil.
func (r *Run) Results(ctx context.Context) iter.Seq2[*Result, error] {
	return func(yield func(*Result, error) bool) {
		if err := r.results(ctx, yield); err != nil {
			yield(nil, fmt.Errorf("read run %s: %w", r.path, err))
		}
	}
}

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
		rows, err := q.QueryContext(ctx, `SELECT seq, data FROM results ORDER BY seq`, nil)
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
		dest := make([]driver.Value, 2)
		for i := 0; ; i++ {
			if i%4096 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			if err := rows.Next(dest); err != nil {
				if err == io.EOF {
					return nil
				}
				return err
			}
			seq, _ := dest[0].(int64)
			data, _ := dest[1].([]byte)
			res, err := dec.decode(seq, data)
			if err != nil {
				return err
			}
			if !yield(res, nil) {
				return nil
			}
		}
	})
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

package snapshots

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
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
	b       batcher
	lastSeq atomic.Int64
	fps     map[string]int64 // fingerprint ids, owned by the writing goroutine
}

// CreateRun creates a run file at path (ErrExists when it exists).
func CreateRun(path string, info RunInfo) (*RunWriter, error) {
	db, err := createFile(path, kindRun, runDDL)
	if err != nil {
		return nil, fmt.Errorf("create run %s: %w", path, err)
	}
	if err := writeRunInfo(db, info); err != nil {
		db.Close()
		return nil, fmt.Errorf("create run %s: %w", path, cleanup(path, err))
	}
	w := &RunWriter{path: path, info: info, fps: map[string]int64{}}
	w.b = batcher{
		db:   db,
		path: path,
		queries: map[string]string{
			"result": `INSERT INTO results (seq, phase, slice, exchange_id, endpoint, method, url,
				intended_ns, sent_ns, done_ns, status, recorded_status, bytes, error, trace_id, sql_counted)
				VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
			"sql":         `INSERT INTO result_sql (seq, position, fingerprint_id, count, duration_ns) VALUES (?,?,?,?,?)`,
			"fingerprint": `INSERT INTO fingerprints (id, fingerprint) VALUES (?, ?)`,
		},
	}
	w.b.start()
	return w, nil
}

// Add queues r for writing, assigning r.Seq when zero. Safe for concurrent
// use; it blocks only while 10000 results are waiting. The writer owns r
// afterwards.
func (w *RunWriter) Add(r *Result) {
	if r.Seq == 0 {
		r.Seq = w.lastSeq.Add(1)
	} else {
		atomicMax(&w.lastSeq, r.Seq)
	}
	w.b.add(&resultRecord{w, r})
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
	if ierr := writeRunInfo(w.b.db, final); err == nil {
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

// resultRecord is a result waiting to be written.
type resultRecord struct {
	w *RunWriter
	r *Result
}

func (rr *resultRecord) write(st *stmts) error {
	r := rr.r
	err := st.exec("result", r.Seq, r.Phase, r.Slice, r.ExchangeID, r.Endpoint, r.Method, r.URL,
		unixNano(r.Intended), unixNano(r.Sent), unixNano(r.Done), r.Status, r.RecordedStatus,
		r.Bytes, r.Error, r.TraceID, r.SQLCounted)
	if err != nil {
		return fmt.Errorf("result %d: %w", r.Seq, err)
	}
	for i, c := range r.SQL {
		id, ok := rr.w.fps[c.Fingerprint]
		if !ok {
			id = int64(len(rr.w.fps) + 1)
			if err := st.exec("fingerprint", id, c.Fingerprint); err != nil {
				return fmt.Errorf("result %d: fingerprint: %w", r.Seq, err)
			}
			// Remembered only once its row is in; a failed commit after
			// this loses the row, which the error already reports.
			rr.w.fps[c.Fingerprint] = id
		}
		if err := st.exec("sql", r.Seq, i, id, c.Count, int64(c.Duration)); err != nil {
			return fmt.Errorf("result %d: sql counts: %w", r.Seq, err)
		}
	}
	return nil
}

// writeRunInfo stores info as key/value rows, replacing earlier ones.
func writeRunInfo(db *sql.DB, info RunInfo) error {
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
}

// OpenRun opens a run file, with the same errors as Open.
func OpenRun(path string) (*Run, error) {
	db, err := openFile(path, kindRun)
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", path, err)
	}
	info, err := readRunInfo(db)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open run %s: %w", path, err)
	}
	return &Run{path: path, db: db, info: info}, nil
}

func readRunInfo(db *sql.DB) (RunInfo, error) {
	var info RunInfo
	rows, err := db.Query(`SELECT key, value FROM run_info`)
	if err != nil {
		return info, fmt.Errorf("read run info: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return info, fmt.Errorf("read run info: %w", err)
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
				return info, fmt.Errorf("read run info: settings: %w", err)
			}
		case "mock_misses":
			info.MockMisses = n
		case "statements":
			info.Statements = n
		}
	}
	if err := rows.Err(); err != nil {
		return info, fmt.Errorf("read run info: %w", err)
	}
	return info, nil
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

// Results yields the run's results in order of Seq. It streams: results and
// their SQL counts are read side by side, so memory stays bounded however
// many results the run holds. A result without SQL counts has SQL nil.
func (r *Run) Results(ctx context.Context) iter.Seq2[*Result, error] {
	return func(yield func(*Result, error) bool) {
		if err := r.results(ctx, yield); err != nil {
			yield(nil, fmt.Errorf("read run %s: %w", r.path, err))
		}
	}
}

func (r *Run) results(ctx context.Context, yield func(*Result, error) bool) error {
	fps, err := r.fingerprints(ctx)
	if err != nil {
		return err
	}
	rows, err := r.db.QueryContext(ctx, `SELECT seq, phase, slice, exchange_id, endpoint, method, url,
		intended_ns, sent_ns, done_ns, status, recorded_status, bytes, error, trace_id, sql_counted
		FROM results ORDER BY seq`)
	if err != nil {
		return err
	}
	defer rows.Close()
	counts, err := r.db.QueryContext(ctx, `SELECT seq, fingerprint_id, count, duration_ns
		FROM result_sql ORDER BY seq, position`)
	if err != nil {
		return err
	}
	defer counts.Close()
	var next sqlRow // the first count row not yet given to a result
	more, err := next.read(counts)
	if err != nil {
		return err
	}
	for rows.Next() {
		res, err := scanResult(rows)
		if err != nil {
			return err
		}
		for more && next.seq < res.Seq { // counts of a missing result
			if more, err = next.read(counts); err != nil {
				return err
			}
		}
		for more && next.seq == res.Seq {
			res.SQL = append(res.SQL, SQLCount{Fingerprint: fps[next.fp], Count: next.count, Duration: time.Duration(next.durNS)})
			if more, err = next.read(counts); err != nil {
				return err
			}
		}
		if !yield(res, nil) {
			return nil
		}
	}
	return rows.Err()
}

// sqlRow is one row of result_sql.
type sqlRow struct {
	seq, fp, durNS int64
	count          int
}

// read scans the next row of rows into s; it reports false at the end.
func (s *sqlRow) read(rows *sql.Rows) (bool, error) {
	if !rows.Next() {
		return false, rows.Err()
	}
	return true, rows.Scan(&s.seq, &s.fp, &s.count, &s.durNS)
}

func (r *Run) fingerprints(ctx context.Context) (map[int64]string, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT id, fingerprint FROM fingerprints`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	fps := map[int64]string{}
	for rows.Next() {
		var id int64
		var fp string
		if err := rows.Scan(&id, &fp); err != nil {
			return nil, err
		}
		fps[id] = fp
	}
	return fps, rows.Err()
}

func scanResult(sc scanner) (*Result, error) {
	var r Result
	var intended, sent, done int64
	err := sc.Scan(&r.Seq, &r.Phase, &r.Slice, &r.ExchangeID, &r.Endpoint, &r.Method, &r.URL,
		&intended, &sent, &done, &r.Status, &r.RecordedStatus, &r.Bytes, &r.Error, &r.TraceID, &r.SQLCounted)
	if err != nil {
		return nil, err
	}
	r.Intended, r.Sent, r.Done = fromUnixNano(intended), fromUnixNano(sent), fromUnixNano(done)
	return &r, nil
}

// Close closes the file.
func (r *Run) Close() error { return r.db.Close() }

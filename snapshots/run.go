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
	b       batcher[*Result]
	lastSeq atomic.Int64

	// Owned by the writing goroutine.
	enc  resultEncoder
	buf  []byte               // the records of one insert
	args []driver.NamedValue  // its arguments
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
	many := `INSERT INTO results (seq, data) VALUES (?,?)` + strings.Repeat(`,(?,?)`, resultsPerInsert-1)
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

// write inserts chunk, resultsPerInsert results per statement. When a
// statement fails (a Seq given twice, say), its results are inserted one
// by one, so that only the bad ones are lost and reported.
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
		name := "results"
		if n == 1 {
			name = "result"
		}
		if err := st.execArgs(name, w.args); err != nil {
			if n == 1 {
				w.b.fail(fmt.Errorf("result %d: %w", part[0].Seq, err))
				continue
			}
			for i, r := range part {
				one := []driver.NamedValue{{Ordinal: 1, Value: r.Seq}, {Ordinal: 2, Value: w.args[2*i+1].Value}}
				if err := st.execArgs("result", one); err != nil {
					w.b.fail(fmt.Errorf("result %d: %w", r.Seq, err))
				}
			}
		}
	}
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

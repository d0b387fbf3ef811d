package snapshots

import (
	"cmp"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
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
	// LoadStarted and LoadEnded bound its load (the explain phase before it
	// excluded): when the load began (a shard's: the start common to the
	// shards), whether or not a request went out then (a ramp from 0
	// virtual users sends none at first), and when its last request ended.
	// Zero in run files written before replay recorded them, and in a
	// comparison's, whose load alternates with the other side's.
	LoadStarted, LoadEnded time.Time
	// Settings records the run's settings (load model, goals, headers…) as
	// key/value pairs for reports.
	Settings map[string]string
	// MockMisses counts requests the mock could not answer.
	MockMisses int64
	// Statements counts SQL statements seen by the counter in total,
	// attributed or not, that completed without error.
	Statements int64
	// Wiring is what the run's mock and SQL counter saw of the builds that
	// used them; nil in run files written before replay recorded it.
	Wiring *Wiring
	// UnattributedSQL counts, per interval of time, the statements the
	// counter could not attribute to a request, for estimating the SQL of
	// requests that overlapped; not kept (zero Bin) in runs without a
	// counter and in older run files.
	UnattributedSQL SQLHistogram
	// ExplainWeights gives, per recorded exchange ID replayed in the
	// explain phase, how many requests of the load's request sequence it
	// stands for (its request shape's share, see replayer.Explain), so that
	// the explain phase's per-request figures follow the load's mix. Nil in
	// runs written before it existed: every explain request counts once.
	ExplainWeights map[int64]float64
	// LoadSQL is what the SQL counter saw while the load ran (explain
	// phase, warm-up and reset excluded), attributed or not; nil when no
	// counter was in place or the run predates it.
	LoadSQL *LoadSQL
	// StatementErrors counts the statements the server rejected, attributed
	// or not; zero in run files of version 1, which counted them in
	// Statements.
	StatementErrors int64
	// Truncated counts, per endpoint, the recorded requests replayed with a
	// body cut at recording (Exchange.RequestTruncated), which only
	// replay's --allow-truncated replays; nil when there were none, and in
	// run files written before replay recorded it.
	Truncated map[string]int64
	// BuildCPU is the CPU time the build spent over each slice of its load,
	// when replay started the build and could read it; nil otherwise (a
	// build given as a URL, a system without /proc) and in run files
	// written before replay recorded it.
	BuildCPU *BuildCPU
	// Interrupted reports that the run was stopped before its load ended
	// (Ctrl-C, SIGTERM): the file holds the requests completed until then,
	// and the run has no verdict. False in run files written before replay
	// recorded it.
	Interrupted bool
	// State is what the replay's stage did with tokens and correlated
	// values (never a token); nil when it did nothing, and in run files
	// written before replay recorded it.
	State *State
}

// LoadSQL is what the SQL counter saw during a run's load: every statement,
// whichever request it belonged to.
type LoadSQL struct {
	// Statements counts the statements (a pool's empty liveness pings
	// excluded).
	Statements int64
	// Total is their database time.
	Total time.Duration
	// Fingerprints break the figures down, most statements first.
	Fingerprints []LoadFingerprint
}

// LoadFingerprint is one statement fingerprint of a LoadSQL.
type LoadFingerprint struct {
	// Fingerprint is the folded statement text.
	Fingerprint string
	// Count is the number of statements.
	Count int64
	// Total is their database time.
	Total time.Duration
}

// RunWriter streams results into a new run file. Like Writer, it commits
// in batches on its own goroutine, at least once a second.
type RunWriter struct {
	path    string
	info    RunInfo
	b       batcher[runRecord]
	lastSeq atomic.Int64

	// enc packs results: Add's on the writing goroutine, Pack's on the
	// producer's (see Pack), under the batcher's lock; arena holds Pack's.
	enc   resultEncoder
	arena []byte

	// Owned by the writing goroutine.
	held    []heldResult      // results of the open transaction, not written yet
	heldBuf []byte            // the records of Add's results among them
	heldRsp []*responseRecord // responses and hashes of the open transaction, in order
	txStrs  []internedStr     // strings stored in the open transaction
	unsaved []internedStr     // strings whose transaction failed: stored again in the next
	maxLast int64             // the highest Seq in a block written so far
	block   []byte            // the block being packed
}

// CreateRun creates a run file at path (ErrExists when it exists).
func CreateRun(path string, info RunInfo) (*RunWriter, error) {
	return createRun(path, info, 0, 0)
}

// createRun is CreateRun with the batcher's transaction size and interval
// (zero: the defaults) for tests.
func createRun(path string, info RunInfo, size int, interval time.Duration) (*RunWriter, error) {
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
	w := &RunWriter{path: path, info: info, maxLast: math.MinInt64}
	w.enc = resultEncoder{base: base, in: newInterner()}
	w.b = batcher[runRecord]{
		db:   db,
		path: path,
		queries: map[string]string{
			"block":  `INSERT INTO results (first, last, n, data) VALUES (?,?,?,?)`,
			"string": `INSERT INTO strings (id, value) VALUES (?,?)`,
			// The block that may hold a late result: blocks of more than
			// one result never overlap, so it is the last to start before.
			"cover":    `SELECT last, data FROM results WHERE first < ? AND n > 1 ORDER BY first DESC LIMIT 1`,
			"response": insertResponse,
			"hash":     insertResponseHash,
		},
		size:         size,
		interval:     interval,
		write:        w.hold,
		beforeCommit: w.flush,
		afterCommit:  w.committed,
	}
	w.b.start()
	return w, nil
}

// Add queues r for writing, assigning r.Seq when zero. Safe for concurrent
// use; it blocks only while 10000 results are waiting. The writer owns r
// afterwards (it only reads it, and packs it on its own goroutine: r may
// be shared with other readers); see Pack for a producer that reuses its
// results.
func (w *RunWriter) Add(r *Result) {
	w.number(r)
	w.b.add(runRecord{seq: r.Seq, res: r})
}

// Added is the number of results added so far (the highest Seq given);
// a reader of the file sees them all once they are committed.
func (w *RunWriter) Added() int64 { return w.lastSeq.Load() }

// Close writes info (its Ended, MockMisses, Statements, StatementErrors,
// Wiring, UnattributedSQL and Settings replace those given to CreateRun, an
// Interrupted of either marks the run; a zero Ended means now; nil Settings,
// Wiring, ExplainWeights, LoadSQL and BuildCPU, and zero LoadStarted and
// LoadEnded, keep the earlier ones), commits and closes the file.
func (w *RunWriter) Close(info RunInfo) error {
	err := w.b.close()
	final := w.info
	final.Ended = info.Ended
	if final.Ended.IsZero() {
		final.Ended = time.Now()
	}
	final.MockMisses = info.MockMisses
	final.Statements = info.Statements
	if info.Wiring != nil {
		final.Wiring = info.Wiring
	}
	final.UnattributedSQL = info.UnattributedSQL
	if info.ExplainWeights != nil {
		final.ExplainWeights = info.ExplainWeights
	}
	if info.LoadSQL != nil {
		final.LoadSQL = info.LoadSQL
	}
	if !info.LoadStarted.IsZero() {
		final.LoadStarted, final.LoadEnded = info.LoadStarted, info.LoadEnded
	}
	if info.BuildCPU != nil {
		final.BuildCPU = info.BuildCPU
	}
	if info.State != nil {
		final.State = info.State
	}
	final.StatementErrors = info.StatementErrors
	final.Interrupted = final.Interrupted || info.Interrupted
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

// runRecord is one record queued by a RunWriter: a result (Add's res, or
// Pack's record and the strings it interned first), or a response sample or
// hashes (see responses.go).
type runRecord struct {
	seq  int64
	res  *Result
	rec  []byte
	strs []internedStr
	rsp  *responseRecord
}

// flush writes the results held, in order of Seq, in blocks (see
// runcodec.go). Results numbered after every block written so far fill new
// blocks; the others (late: a producer was slow between numbering and
// adding its result, or the caller numbered them) are written one per
// block, so that blocks of many results never overlap and a reader merges
// at most one of them with late ones. A Seq written before is reported and
// dropped.
func (w *RunWriter) flush(st *stmts) error {
	unsaved := w.unsaved
	w.unsaved = nil
	for _, s := range unsaved {
		w.storeStr(st, s)
	}
	w.flushResponses(st)
	held := w.held
	slices.SortStableFunc(held, func(a, b heldResult) int { return cmp.Compare(a.seq, b.seq) })
	// Drop a Seq given twice, then write the late results.
	kept := held[:0]
	for _, r := range held {
		if len(kept) > 0 && r.seq == kept[len(kept)-1].seq {
			w.b.fail(fmt.Errorf("result %d: %w", r.seq, errSeqTaken))
			continue
		}
		kept = append(kept, r)
	}
	i := 0
	for ; i < len(kept) && kept[i].seq <= w.maxLast; i++ {
		w.writeLate(st, kept[i])
	}
	for rest := kept[i:]; len(rest) > 0; {
		w.block = w.block[:0]
		first, n := rest[0].seq, 0
		for ; n < len(rest) && n < maxBlockResults && len(w.block) < maxBlockBytes; n++ {
			w.appendRecord(rest[n])
		}
		w.maxLast = rest[n-1].seq
		rest = rest[n:]
		if err := st.exec("block", first, w.maxLast, n, w.block); err != nil {
			w.b.fail(fmt.Errorf("results %d to %d: %w", first, w.maxLast, err))
		}
	}
	clear(w.held) // let the records go
	w.held = w.held[:0]
	w.heldBuf = w.heldBuf[:0]
	return nil
}

// errSeqTaken reports a result whose Seq is already in the run.
var errSeqTaken = errors.New("a result with this Seq is already in the run; dropped")

// appendRecord packs r's record at the end of the block.
func (w *RunWriter) appendRecord(r heldResult) {
	w.block = binary.AppendUvarint(w.block, uint64(len(r.rec)))
	w.block = append(w.block, r.rec...)
}

// writeLate writes r, numbered before the last block written, as a block
// of its own, unless a block holds its Seq already.
func (w *RunWriter) writeLate(st *stmts, r heldResult) {
	row, err := st.queryRow("cover", r.seq)
	if err == nil && row != nil {
		last, _ := row[0].(int64)
		data, _ := row[1].([]byte)
		if r.seq <= last {
			var taken bool
			taken, err = blockHolds(data, r.seq)
			if err == nil && taken {
				err = errSeqTaken
			}
		}
	}
	if err == nil {
		w.block = w.block[:0]
		w.appendRecord(r)
		// A late result alone in its block starts it: a Seq given twice
		// breaks the primary key.
		err = st.exec("block", r.seq, r.seq, 1, w.block)
	}
	if err != nil {
		w.b.fail(fmt.Errorf("result %d: %w", r.seq, err))
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
		{"statement_errors", strconv.FormatInt(info.StatementErrors, 10)},
		{"base_ns", strconv.FormatInt(base, 10)},
	}
	if info.UnattributedSQL.Kept() {
		h, err := marshalHistogram(info.UnattributedSQL)
		if err != nil {
			return fmt.Errorf("store run info: %w", err)
		}
		kv = append(kv, [2]string{"unattributed_sql", h})
	}
	if !info.LoadStarted.IsZero() {
		kv = append(kv, [2]string{"load_started_ns", strconv.FormatInt(unixNano(info.LoadStarted), 10)},
			[2]string{"load_ended_ns", strconv.FormatInt(unixNano(info.LoadEnded), 10)})
	}
	if info.Interrupted {
		kv = append(kv, [2]string{"interrupted", "true"})
	}
	// Added later (but wiring): absent from older files, which read as nil.
	kv, err = appendJSONInfo(kv, []jsonInfo{
		{"wiring", info.Wiring, info.Wiring != nil},
		{"explain_weights", info.ExplainWeights, info.ExplainWeights != nil},
		{"truncated", info.Truncated, len(info.Truncated) > 0},
		{"state", info.State, !info.State.Empty()},
		{"load_sql", info.LoadSQL, info.LoadSQL != nil},
		{"build_cpu", info.BuildCPU, info.BuildCPU != nil},
	})
	if err != nil {
		return err
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

// jsonInfo is a run_info key whose value is JSON, stored when present.
type jsonInfo struct {
	key     string
	v       any
	present bool
}

// appendJSONInfo appends the present keys of infos to kv, their values
// marshalled.
func appendJSONInfo(kv [][2]string, infos []jsonInfo) ([][2]string, error) {
	for _, in := range infos {
		if !in.present {
			continue
		}
		b, err := json.Marshal(in.v)
		if err != nil {
			return nil, fmt.Errorf("store run info: %s: %w", strings.ReplaceAll(in.key, "_", " "), err)
		}
		kv = append(kv, [2]string{in.key, string(b)})
	}
	return kv, nil
}

package snapshots

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Options configure a Writer. The zero value is useful.
type Options struct {
	// Rules are user-given endpoint templates that win over the computed ones.
	Rules []Rule
	// FlushInterval bounds how long a written record waits before it is
	// committed; zero means one second.
	FlushInterval time.Duration
	// BatchSize is the number of records committed in one transaction at
	// most, and the number that may wait in memory before AddExchange and
	// AddStatement block; zero means 10000.
	BatchSize int
	// Logger receives write errors; nil discards.
	Logger *slog.Logger
	// Redactor, when set, removes secrets from every exchange before it is
	// written, and its description is recorded in the file
	// (Snapshot.Redaction); nil writes exchanges as they are.
	Redactor Redactor
}

// Redactor removes secrets from exchanges before they are written.
type Redactor interface {
	// Redact replaces the secrets of e with Redacted. AddExchange calls it
	// on the caller's goroutine, after computing e's endpoint. It must not
	// change what e's fields point to (header maps and bodies may be shared
	// with live traffic), only the fields.
	Redact(e *Exchange)
	// String describes the redaction, e.g. "default" or "off".
	String() string
}

// Writer appends exchanges and statements to a new snapshot file. Its
// methods are safe for concurrent use; records are committed in batches at
// least once per FlushInterval, so a killed process loses at most that much.
// The file can be opened for reading (by Open, in this process or another)
// while the Writer writes; readers see what has been committed.
type Writer struct {
	path     string
	rules    []Rule
	redactor Redactor
	b        batcher[record]

	lastExchange  atomic.Int64 // highest exchange ID handed out or given
	lastStatement atomic.Int64
	seen          [2]atomic.Int64 // by direction index
	queued        [2]atomic.Int64 // exchanges accepted, by direction index
	queuedStmts   atomic.Int64

	// Owned by the writing goroutine: what has been written so far.
	written      [2]int64
	writtenStmts int64
}

// Create creates a new snapshot file at path; it fails with ErrExists when
// the file exists.
func Create(path string, opts Options) (*Writer, error) {
	db, err := createFile(path, kindSnapshot, slices.Concat(snapshotDDL, snapshotV2, snapshotV3))
	if err != nil {
		return nil, fmt.Errorf("create snapshot %s: %w", path, err)
	}
	if opts.Redactor != nil {
		if _, err := db.Exec(`INSERT INTO meta (key, value) VALUES ('redaction', ?)`, opts.Redactor.String()); err != nil {
			db.Close()
			return nil, cleanup(path, fmt.Errorf("create snapshot %s: %w", path, err))
		}
	}
	w := &Writer{path: path, rules: opts.Rules, redactor: opts.Redactor}
	w.b = batcher[record]{
		db:   db,
		path: path,
		queries: map[string]string{
			"exchange":  `INSERT INTO exchanges (` + exchangeCols + `) VALUES ` + exchangeRow,
			"statement": `INSERT INTO statements (` + statementCols + `) VALUES ` + statementRow,
			"capture":   `INSERT OR REPLACE INTO capture (name, value) VALUES (?, ?)`,
			"rule":      `INSERT OR REPLACE INTO rules (position, rule) VALUES (?, ?)`,
		},
		interval:     opts.FlushInterval,
		size:         opts.BatchSize,
		logger:       opts.Logger,
		write:        w.write,
		beforeCommit: w.writeStats,
	}
	w.b.start()
	w.storeRules(opts.Rules)
	return w, nil
}

// storeRules records the endpoint rules in the file, replacing any earlier.
func (w *Writer) storeRules(rules []Rule) {
	if len(rules) > 0 {
		w.b.add(rulesRecord(rules))
	}
}

// record is one row (or a few) of a snapshot, waiting to be written.
type record interface {
	// write inserts the record with the writer's prepared statements.
	write(st *stmts) error
}

// The columns of a row of exchanges and of statements.
const (
	exchangeCols = `id, direction, protocol, service, start_ns, duration_ns,
		method, url, proto, request_header, request_body, request_body_size,
		status, response_header, response_body, response_body_size,
		endpoint, parent_id, trace_id, error, ` + v2Columns
	exchangeRow   = `(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	statementCols = `id, exchange_id, trace_id, conn, start_ns, duration_ns,
		protocol, sql, fingerprint, rows, command_tag, error`
	statementRow = `(?,?,?,?,?,?,?,?,?,?,?,?)`
)

// write writes a chunk of records; a record that fails is reported and
// skipped. (Statements of many rows cost no less per row here: with twenty
// values a row, binding them dominates.)
func (w *Writer) write(st *stmts, chunk []record) {
	for _, r := range chunk {
		if err := r.write(st); err != nil {
			w.b.fail(err)
		}
	}
}

// rulesRecord is the list of rules waiting to be written.
type rulesRecord []Rule

func (rr rulesRecord) write(st *stmts) error {
	for i, r := range rr {
		if err := st.exec("rule", i+1, r.String()); err != nil {
			return fmt.Errorf("store rules: %w", err)
		}
	}
	return nil
}

// Path returns the file the writer writes.
func (w *Writer) Path() string { return w.path }

// NewID reserves an exchange ID, for an exchange still in flight.
func (w *Writer) NewID() int64 { return w.lastExchange.Add(1) }

// AddExchange queues e for writing. It computes e.Endpoint when empty
// (EndpointOf), assigns e.ID when zero, takes an empty Direction for
// Inbound, and applies Options.Redactor. It does not block on disk; it waits only when
// BatchSize records are already waiting, and never drops a record. The
// writer owns e afterwards: the caller must not change it.
func (w *Writer) AddExchange(e *Exchange) {
	if e.ID == 0 {
		e.ID = w.NewID()
	} else {
		atomicMax(&w.lastExchange, e.ID)
	}
	if e.Endpoint == "" {
		e.Endpoint = EndpointOf(e, w.rules)
	}
	if e.Direction == "" {
		e.Direction = Inbound
	}
	if w.redactor != nil {
		w.redactor.Redact(e)
	}
	// Encoding here spreads the work over the callers' goroutines; the
	// writing goroutine is the one that limits throughput.
	rec := &exchangeRecord{w: w, e: e}
	rec.values = [len(rec.values)]driver.Value{e.ID, string(e.Direction), e.Protocol, e.Service,
		unixNano(e.Start), int64(e.Duration), e.Method, e.URL, e.Proto,
		headerJSON(e.RequestHeader), blob(e.RequestBody), e.RequestBodySize,
		int64(e.Status), headerJSON(e.ResponseHeader), blob(e.ResponseBody), e.ResponseBodySize,
		e.Endpoint, e.ParentID, e.TraceID, e.Error,
		headerJSON(e.ResponseTrailer), blob(encodeMessages(e.Messages)), clientConn(e.ClientConn)}
	if !w.b.add(rec) {
		w.b.logger.Error("snapshot write: exchange added after Close", "id", e.ID)
		return
	}
	w.queued[dirIndex(e.Direction)].Add(1)
}

// AddStatement queues s for writing, assigning s.ID when zero. Like
// AddExchange, it does not block on disk and never drops a record.
func (w *Writer) AddStatement(s *Statement) {
	if s.ID == 0 {
		s.ID = w.lastStatement.Add(1)
	} else {
		atomicMax(&w.lastStatement, s.ID)
	}
	rec := &statementRecord{w: w, s: s}
	rec.values = [len(rec.values)]driver.Value{s.ID, s.ExchangeID, s.TraceID, s.Conn,
		unixNano(s.Start), int64(s.Duration), s.Protocol, s.SQL, s.Fingerprint,
		s.Rows, s.CommandTag, s.Error}
	if !w.b.add(rec) {
		w.b.logger.Error("snapshot write: statement added after Close", "id", s.ID)
		return
	}
	w.queuedStmts.Add(1)
}

// CountSeen adds one to the requests seen in direction d (capture stats).
func (w *Writer) CountSeen(d Direction) { w.seen[dirIndex(d)].Add(1) }

// addSeen adds n to the requests seen in direction d; imports use it to
// carry over the capture statistics of the file they read.
func (w *Writer) addSeen(d Direction, n int64) { w.seen[dirIndex(d)].Add(n) }

// Stats returns the capture statistics so far; records count once added,
// since the writer never drops one.
func (w *Writer) Stats() CaptureStats {
	return CaptureStats{
		InboundSeen:      w.seen[0].Load(),
		InboundRecorded:  w.queued[0].Load(),
		OutboundSeen:     w.seen[1].Load(),
		OutboundRecorded: w.queued[1].Load(),
		Statements:       w.queuedStmts.Load(),
	}
}

// Close commits everything queued and closes the file. It returns the first
// error met while writing, if any.
func (w *Writer) Close() error {
	err := w.b.close()
	finish(w.b.db)
	if cerr := w.b.db.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write snapshot %s: %w", w.path, err)
	}
	return nil
}

// CloseOrRemove closes w, and removes its file when err (what filling w
// ended with) is not nil or the close fails: a snapshot holding part of its
// input would mislead. It returns err, else Close's error. The file removed
// is the one Create made; a file that was there before Create is never w's.
func (w *Writer) CloseOrRemove(err error) error {
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return cleanup(w.path, err)
	}
	return nil
}

// writeStats stores the capture counters in the transaction about to commit,
// so that the file's statistics always match the records it holds.
func (w *Writer) writeStats(st *stmts) error {
	rows := []struct {
		name  string
		value int64
	}{
		{"inbound_seen", w.seen[0].Load()},
		{"inbound_recorded", w.written[0]},
		{"outbound_seen", w.seen[1].Load()},
		{"outbound_recorded", w.written[1]},
		{"statements", w.writtenStmts},
	}
	for _, r := range rows {
		if err := st.exec("capture", r.name, r.value); err != nil {
			return fmt.Errorf("store capture stats: %w", err)
		}
	}
	return nil
}

// exchangeRecord is an exchange waiting to be written.
type exchangeRecord struct {
	w *Writer
	e *Exchange
	// values of the row (exchangeCols), made by AddExchange: on the
	// callers' goroutines rather than on the writing one.
	values [23]driver.Value
}

func (r *exchangeRecord) write(st *stmts) error {
	st.args = appendValues(st.args[:0], r.values[:])
	if err := st.execArgs("exchange", st.args); err != nil {
		return fmt.Errorf("exchange %d: %w", r.e.ID, err)
	}
	r.w.written[dirIndex(r.e.Direction)]++
	return nil
}

// statementRecord is a statement waiting to be written.
type statementRecord struct {
	w      *Writer
	s      *Statement
	values [12]driver.Value // of the row (statementCols)
}

func (r *statementRecord) write(st *stmts) error {
	st.args = appendValues(st.args[:0], r.values[:])
	if err := st.execArgs("statement", st.args); err != nil {
		return fmt.Errorf("statement %d: %w", r.s.ID, err)
	}
	r.w.writtenStmts++
	return nil
}

// appendValues appends vs to args, numbered after them.
func appendValues(args []driver.NamedValue, vs []driver.Value) []driver.NamedValue {
	for _, v := range vs {
		args = append(args, driver.NamedValue{Ordinal: len(args) + 1, Value: v})
	}
	return args
}

// dirIndex maps a direction to an index of the counters: anything that is
// not Outbound counts as inbound.
func dirIndex(d Direction) int {
	if d == Outbound {
		return 1
	}
	return 0
}

// atomicMax raises v to at least n.
func atomicMax(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if cur >= n || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// headerJSON encodes h for the database as a JSON object of arrays, with
// sorted keys as encoding/json writes it; nil and empty headers are NULL.
func headerJSON(h http.Header) any {
	if len(h) == 0 {
		return nil
	}
	type field struct {
		key    string
		values []string
	}
	var stack [24]field // most headers have fewer keys: no allocation
	fields := stack[:0]
	size := 2
	for k, vs := range h {
		fields = append(fields, field{k, vs})
		size += len(k) + 6
		for _, v := range vs {
			size += len(v) + 3
		}
	}
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.key, b.key) })
	var b strings.Builder // its String does not copy
	b.Grow(size)
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, f.key)
		b.WriteString(":[")
		for j, v := range f.values {
			if j > 0 {
				b.WriteByte(',')
			}
			writeJSONString(&b, v)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.String()
}

// writeJSONString writes s as a JSON string, as encoding/json would
// (invalid UTF-8 becomes U+FFFD), though without escaping <, > and &.
func writeJSONString(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			q, _ := json.Marshal(s) // rare: needs escaping
			b.Write(q)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

// blob stores empty bodies as NULL.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// unixNano stores the zero time as 0 (so the Unix epoch itself reads back
// as the zero time).
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromUnixNano reads what unixNano stored.
func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// clientConn is an exchange's client connection as stored: NULL when
// unknown (zero).
func clientConn(c int64) driver.Value {
	if c == 0 {
		return nil
	}
	return c
}

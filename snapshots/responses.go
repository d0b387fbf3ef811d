package snapshots

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// ResponseSample is one captured answer of a build to a replayed request.
type ResponseSample struct {
	// ExchangeID is the recorded inbound exchange replayed.
	ExchangeID int64
	// Endpoint is the exchange's endpoint.
	Endpoint string
	// Phase is PhaseExplain or PhaseLoad.
	Phase string
	// Status is the answer's status code.
	Status int
	// Header holds only the headers a comparison may look at (replay keeps
	// a set); nil when none.
	Header http.Header
	// Body is the body decoded (Content-Encoding gzip/deflate undone), at
	// most the capture limit.
	Body []byte
	// BodySize is the full decoded size.
	BodySize int64
	// Truncated says Body was cut at the capture limit.
	Truncated bool
}

// ResponseHash counts the answers beyond the sample by body hash, per
// exchange.
type ResponseHash struct {
	// ExchangeID is the recorded inbound exchange replayed.
	ExchangeID int64
	// Endpoint is the exchange's endpoint.
	Endpoint string
	// Status is the answers' status code.
	Status int
	// Hash is FNV-1a 64 of the raw body bytes as received.
	Hash uint64
	// Count is how many answers had this exchange, status and hash.
	Count int64
}

// responseRecord is a sample or a batch of hashes queued by a RunWriter.
type responseRecord struct {
	sample *ResponseSample
	hashes []ResponseHash
}

// The tables of responses, created with every run file since they exist;
// run files written before lack them.
const (
	responsesDDL = `CREATE TABLE responses (
		id          INTEGER PRIMARY KEY,
		exchange_id INTEGER NOT NULL,
		endpoint    TEXT NOT NULL,
		phase       TEXT NOT NULL,
		status      INTEGER NOT NULL,
		header      TEXT,
		body        BLOB,
		body_size   INTEGER NOT NULL,
		truncated   INTEGER NOT NULL
	)`
	// response_hashes may hold a key (exchange, endpoint, status, hash)
	// more than once when hashes were added in chunks; readers sum them.
	responseHashesDDL = `CREATE TABLE response_hashes (
		id          INTEGER PRIMARY KEY,
		exchange_id INTEGER NOT NULL,
		endpoint    TEXT NOT NULL,
		status      INTEGER NOT NULL,
		hash        INTEGER NOT NULL,
		count       INTEGER NOT NULL
	)`
	insertResponse = `INSERT INTO responses (exchange_id, endpoint, phase, status, header, body, body_size, truncated)
		VALUES (?,?,?,?,?,?,?,?)`
	insertResponseHash = `INSERT INTO response_hashes (exchange_id, endpoint, status, hash, count) VALUES (?,?,?,?,?)`
)

// AddResponse queues s for writing, like Add: it never waits for the disk
// (only while 10000 records are waiting). The writer owns s afterwards (it
// only reads it).
func (w *RunWriter) AddResponse(s *ResponseSample) {
	if s == nil {
		return
	}
	w.b.add(runRecord{rsp: &responseRecord{sample: s}})
}

// AddResponseHashes queues h for writing (a copy: the caller may reuse
// it). It may be called once at the end or with chunks as they fill; a
// key (exchange, endpoint, status, hash) given more than once reads as the
// sum of its counts.
func (w *RunWriter) AddResponseHashes(h []ResponseHash) {
	if len(h) == 0 {
		return
	}
	w.b.add(runRecord{rsp: &responseRecord{hashes: slices.Clone(h)}})
}

// flushResponses writes the responses and hashes held, in the order they
// were added.
func (w *RunWriter) flushResponses(st *stmts) {
	for _, r := range w.heldRsp {
		if s := r.sample; s != nil {
			if err := writeSample(st, s); err != nil {
				w.b.fail(fmt.Errorf("response of exchange %d: %w", s.ExchangeID, err))
			}
		}
		for _, h := range r.hashes {
			err := st.exec("hash", h.ExchangeID, h.Endpoint, h.Status, int64(h.Hash), h.Count)
			if err != nil {
				w.b.fail(fmt.Errorf("response hash of exchange %d: %w", h.ExchangeID, err))
			}
		}
	}
	clear(w.heldRsp)
	w.heldRsp = w.heldRsp[:0]
}

func writeSample(st *stmts, s *ResponseSample) error {
	var header any // NULL without headers
	if len(s.Header) > 0 {
		b, err := json.Marshal(s.Header)
		if err != nil {
			return err
		}
		header = string(b)
	}
	body := s.Body
	if body == nil {
		body = []byte{}
	}
	return st.exec("response", s.ExchangeID, s.Endpoint, s.Phase, s.Status, header, body, s.BodySize, s.Truncated)
}

// hasTable reports whether the run file has the table name: run files
// written before a table existed lack it.
func (r *Run) hasTable(ctx context.Context, name string) (bool, error) {
	var n int
	err := r.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}

// Responses calls fn with each response sample of the run, in the order
// they were added, until fn returns an error (returned as is). A run file
// written before replay kept responses has none: fn is never called.
func (r *Run) Responses(fn func(*ResponseSample) error) error {
	ctx := context.Background()
	if ok, err := r.hasTable(ctx, "responses"); err != nil || !ok {
		return r.readErr(err)
	}
	rows, err := r.db.QueryContext(ctx, `SELECT exchange_id, endpoint, phase, status, header, body, body_size, truncated
		FROM responses ORDER BY id`)
	if err != nil {
		return r.readErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		s := new(ResponseSample)
		var header sql.NullString
		if err := rows.Scan(&s.ExchangeID, &s.Endpoint, &s.Phase, &s.Status, &header, &s.Body, &s.BodySize, &s.Truncated); err != nil {
			return r.readErr(err)
		}
		if header.Valid {
			if err := json.Unmarshal([]byte(header.String), &s.Header); err != nil {
				return r.readErr(fmt.Errorf("response of exchange %d: header: %w", s.ExchangeID, err))
			}
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return r.readErr(rows.Err())
}

// ResponseHashes calls fn with each (exchange, endpoint, status, hash) of
// the run and its count, in the order they were first added, until fn
// returns an error (returned as is). A run file written before replay kept
// responses has none.
func (r *Run) ResponseHashes(fn func(ResponseHash) error) error {
	ctx := context.Background()
	if ok, err := r.hasTable(ctx, "response_hashes"); err != nil || !ok {
		return r.readErr(err)
	}
	rows, err := r.db.QueryContext(ctx, `SELECT exchange_id, endpoint, status, hash, sum(count)
		FROM response_hashes GROUP BY exchange_id, endpoint, status, hash ORDER BY min(id)`)
	if err != nil {
		return r.readErr(err)
	}
	defer rows.Close()
	for rows.Next() {
		var h ResponseHash
		var hash int64
		if err := rows.Scan(&h.ExchangeID, &h.Endpoint, &h.Status, &hash, &h.Count); err != nil {
			return r.readErr(err)
		}
		h.Hash = uint64(hash)
		if err := fn(h); err != nil {
			return err
		}
	}
	return r.readErr(rows.Err())
}

// readErr names the run file in err (nil stays nil).
func (r *Run) readErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("read run %s: %w", r.path, err)
}

package snapshots

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"
)

// Filter selects exchanges. Zero fields match everything.
type Filter struct {
	Direction Direction
	// Services, when not empty, lists the host:port services to include.
	Services []string
}

// Snapshot is an open snapshot file, read-only. Its methods are safe for
// concurrent use.
type Snapshot struct {
	path    string
	db      *sql.DB
	version int      // the file's format version
	readers *readers // for byID
}

// Open opens a snapshot for reading; it fails with a clear error naming the
// file when the file is missing, corrupt, not a snapshot (ErrNotSnapshot) or
// of an unknown version (ErrVersion). It never creates a file.
func Open(path string) (*Snapshot, error) {
	db, err := openFile(path, kindSnapshot)
	if err != nil {
		return nil, fmt.Errorf("open snapshot %s: %w", path, err)
	}
	var version int
	if err := db.QueryRow(`SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'version'`).Scan(&version); err != nil {
		db.Close()
		return nil, fmt.Errorf("open snapshot %s: %w", path, err)
	}
	return &Snapshot{path: path, db: db, version: version, readers: &readers{db: db}}, nil
}

// Version returns the snapshot's format version (1 to SchemaVersion).
func (s *Snapshot) Version() int { return s.version }

// sel adapts a query naming the columns of versions 2 and 3 to the
// file's version: an older file has no such columns, and reads them as
// NULL.
func (s *Snapshot) sel(q string) string {
	switch {
	case s.version >= 3:
		return q
	case s.version == 2:
		return strings.ReplaceAll(q, "client_conn", "NULL")
	}
	return strings.NewReplacer("response_trailer", "NULL", "messages", "NULL", "client_conn", "NULL").Replace(q)
}

// Path returns the file the snapshot was opened from.
func (s *Snapshot) Path() string { return s.path }

const exchangeColumns = `id, direction, protocol, service, start_ns, duration_ns,
	method, url, proto, request_header, request_body, request_body_size,
	status, response_header, response_body, response_body_size,
	endpoint, parent_id, trace_id, error, ` + v2Columns

// Exchanges yields exchanges matching f in order of ID. Empty headers and
// bodies read back as nil.
func (s *Snapshot) Exchanges(ctx context.Context, f Filter) iter.Seq2[*Exchange, error] {
	q := `SELECT ` + exchangeColumns + ` FROM exchanges`
	var where []string
	var args []any
	if f.Direction != "" {
		where = append(where, "direction = ?")
		args = append(args, string(f.Direction))
	}
	if len(f.Services) > 0 {
		where = append(where, "service IN (?"+strings.Repeat(",?", len(f.Services)-1)+")")
		for _, svc := range f.Services {
			args = append(args, svc)
		}
	}
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id"
	return queryRows(ctx, s, s.sel(q), args, scanExchange)
}

// Exchange returns the exchange with id, or an error when there is none.
func (s *Snapshot) Exchange(ctx context.Context, id int64) (*Exchange, error) {
	q := `SELECT ` + exchangeColumns + ` FROM exchanges WHERE id = ?`
	for e, err := range queryRows(ctx, s, s.sel(q), []any{id}, scanExchange) {
		return e, err
	}
	return nil, fmt.Errorf("read snapshot %s: no exchange %d", s.path, id)
}

// Statements yields all statements in order of ID.
func (s *Snapshot) Statements(ctx context.Context) iter.Seq2[*Statement, error] {
	q := `SELECT id, exchange_id, trace_id, conn, start_ns, duration_ns, protocol,
		sql, fingerprint, rows, command_tag, error FROM statements ORDER BY id`
	return queryRows(ctx, s, q, nil, scanStatement)
}

// Counts returns the number of exchanges and statements in the file.
func (s *Snapshot) Counts(ctx context.Context) (exchanges, statements int64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM exchanges), (SELECT count(*) FROM statements)`).
		Scan(&exchanges, &statements)
	if err != nil {
		return 0, 0, fmt.Errorf("read snapshot %s: %w", s.path, err)
	}
	return exchanges, statements, nil
}

// Stats returns the capture statistics stored in the file, as of its last
// commit.
func (s *Snapshot) Stats() (CaptureStats, error) {
	var cs CaptureStats
	rows, err := s.db.Query(`SELECT name, value FROM capture`)
	if err != nil {
		return cs, fmt.Errorf("read snapshot %s: capture stats: %w", s.path, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return cs, fmt.Errorf("read snapshot %s: capture stats: %w", s.path, err)
		}
		switch name {
		case "inbound_seen":
			cs.InboundSeen = v
		case "inbound_recorded":
			cs.InboundRecorded = v
		case "outbound_seen":
			cs.OutboundSeen = v
		case "outbound_recorded":
			cs.OutboundRecorded = v
		case "statements":
			cs.Statements = v
		}
	}
	if err := rows.Err(); err != nil {
		return cs, fmt.Errorf("read snapshot %s: capture stats: %w", s.path, err)
	}
	return cs, nil
}

// Rules returns the endpoint rules the snapshot was recorded with.
func (s *Snapshot) Rules() ([]Rule, error) {
	rows, err := s.db.Query(`SELECT rule FROM rules ORDER BY position`)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s: rules: %w", s.path, err)
	}
	defer rows.Close()
	var rules []Rule
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, fmt.Errorf("read snapshot %s: rules: %w", s.path, err)
		}
		r, err := ParseRule(text)
		if err != nil {
			return nil, fmt.Errorf("read snapshot %s: %w", s.path, err)
		}
		rules = append(rules, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read snapshot %s: rules: %w", s.path, err)
	}
	return rules, nil
}

// Created returns when the snapshot file was created.
func (s *Snapshot) Created() (time.Time, error) {
	var v string
	if err := s.db.QueryRow(`SELECT value FROM meta WHERE key = 'created'`).Scan(&v); err != nil {
		return time.Time{}, fmt.Errorf("read snapshot %s: %w", s.path, err)
	}
	return time.Parse(time.RFC3339Nano, v)
}

// Redaction returns how the snapshot's exchanges were redacted when
// written (Options.Redactor, e.g. "default" or "off"); "" when the file
// does not say (it predates the record, or was written without one).
func (s *Snapshot) Redaction() (string, error) {
	var v string
	err := s.db.QueryRow(`SELECT value FROM meta WHERE key = 'redaction'`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read snapshot %s: %w", s.path, err)
	}
	return v, nil
}

// Close closes the file.
func (s *Snapshot) Close() error {
	s.readers.close()
	return s.db.Close()
}

// scanner is what rows and a single row have in common.
type scanner interface{ Scan(dest ...any) error }

// queryRows streams the rows of q, one scan at a time, so that a snapshot
// of any size is read in bounded memory.
func queryRows[T any](ctx context.Context, s *Snapshot, q string, args []any, scan func(scanner) (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		rows, err := s.db.QueryContext(ctx, q, args...)
		if err != nil {
			yield(zero, fmt.Errorf("read snapshot %s: %w", s.path, err))
			return
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scan(rows)
			if err != nil {
				yield(zero, fmt.Errorf("read snapshot %s: %w", s.path, err))
				return
			}
			if !yield(v, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(zero, fmt.Errorf("read snapshot %s: %w", s.path, err))
		}
	}
}

func scanExchange(sc scanner) (*Exchange, error) {
	var e Exchange
	var dir string
	var startNS, durNS int64
	var reqH, respH, trailer sql.NullString
	var msgs []byte
	var conn sql.NullInt64
	err := sc.Scan(&e.ID, &dir, &e.Protocol, &e.Service, &startNS, &durNS,
		&e.Method, &e.URL, &e.Proto, &reqH, &e.RequestBody, &e.RequestBodySize,
		&e.Status, &respH, &e.ResponseBody, &e.ResponseBodySize,
		&e.Endpoint, &e.ParentID, &e.TraceID, &e.Error, &trailer, &msgs, &conn)
	if err != nil {
		return nil, err
	}
	e.ClientConn = conn.Int64
	e.Direction = Direction(dir)
	e.Start = fromUnixNano(startNS)
	e.Duration = time.Duration(durNS)
	if e.RequestHeader, err = parseHeader(reqH); err != nil {
		return nil, fmt.Errorf("exchange %d: request header: %w", e.ID, err)
	}
	if e.ResponseHeader, err = parseHeader(respH); err != nil {
		return nil, fmt.Errorf("exchange %d: response header: %w", e.ID, err)
	}
	if e.ResponseTrailer, err = parseHeader(trailer); err != nil {
		return nil, fmt.Errorf("exchange %d: response trailer: %w", e.ID, err)
	}
	if e.Messages, err = decodeMessages(msgs); err != nil {
		return nil, fmt.Errorf("exchange %d: %w", e.ID, err)
	}
	if len(e.RequestBody) == 0 {
		e.RequestBody = nil
	}
	if len(e.ResponseBody) == 0 {
		e.ResponseBody = nil
	}
	return &e, nil
}

func scanStatement(sc scanner) (*Statement, error) {
	var st Statement
	var startNS, durNS int64
	err := sc.Scan(&st.ID, &st.ExchangeID, &st.TraceID, &st.Conn, &startNS, &durNS,
		&st.Protocol, &st.SQL, &st.Fingerprint, &st.Rows, &st.CommandTag, &st.Error)
	if err != nil {
		return nil, err
	}
	st.Start = fromUnixNano(startNS)
	st.Duration = time.Duration(durNS)
	return &st, nil
}

func parseHeader(s sql.NullString) (http.Header, error) {
	if !s.Valid || s.String == "" {
		return nil, nil
	}
	if h, ok := parseHeaderFast(s.String); ok {
		if len(h) == 0 {
			return nil, nil
		}
		return h, nil
	}
	var h http.Header
	if err := json.Unmarshal([]byte(s.String), &h); err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, nil
	}
	return h, nil
}

// parseHeaderFast parses a header as headerJSON writes it when nothing in
// it needed escaping ({"Name":["value",…],…}, no space, no backslash): a
// replay reading its requests as it goes decodes one per request, and
// encoding/json costs several times more. It reports false for anything
// else, which encoding/json then reads.
func parseHeaderFast(s string) (http.Header, bool) {
	if strings.IndexByte(s, '\\') >= 0 || len(s) < 2 || s[0] != '{' {
		return nil, false
	}
	// Keys are the strings followed by ":[" (a value's closing quote is
	// followed by "," or "]"); the values share one array.
	keys := strings.Count(s, `":[`)
	h := make(http.Header, keys)
	all := make([]string, 0, max(strings.Count(s, `"`)/2-keys, 0))
	i := 1
	str := func() (string, bool) {
		if i >= len(s) || s[i] != '"' {
			return "", false
		}
		end := strings.IndexByte(s[i+1:], '"')
		if end < 0 {
			return "", false
		}
		v := s[i+1 : i+1+end]
		i += end + 2
		return v, true
	}
	if s[i] == '}' {
		return h, i+1 == len(s)
	}
	for {
		k, ok := str()
		if !ok || i+1 >= len(s) || s[i] != ':' || s[i+1] != '[' {
			return nil, false
		}
		i += 2
		first := len(all)
		for i < len(s) && s[i] != ']' {
			v, ok := str()
			if !ok || i >= len(s) {
				return nil, false
			}
			all = append(all, v)
			switch {
			case s[i] == ',' && i+1 < len(s) && s[i+1] == '"':
				i++
			case s[i] != ']':
				return nil, false
			}
		}
		if i+1 >= len(s) {
			return nil, false
		}
		h[k] = all[first:len(all):len(all)] // full: an append to one copies it
		i++                                 // ']'
		switch s[i] {
		case ',':
			i++
		case '}':
			return h, i+1 == len(s)
		default:
			return nil, false
		}
	}
}

package snapshots

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// A replay reading a big snapshot as its load goes reads every request and
// every mocked answer by ID, in batches, during the load: what it spends
// there is taken from the load. Through database/sql, with the statement
// prepared again for each batch and every column converted, a row cost
// 8–11 µs of CPU here; through the driver, on a connection that keeps its
// prepared statements, with only the columns used, 4–6 µs
// (BenchmarkRequests, BenchmarkAnswers). So byID reads that way.

// maxIDs is the most IDs one query names (SQLite allows 32766 variables).
const maxIDs = 4096

// Idle connections and prepared statements a Snapshot keeps for byID.
const (
	maxIdleReaders   = 2
	maxReaderStmts   = 8
	exchangeColCount = 23
)

// readers is a Snapshot's pool of connections for byID.
type readers struct {
	db     *sql.DB
	mu     sync.Mutex
	idle   []*reader
	closed bool
}

// reader is one connection with the statements it prepared, by query.
type reader struct {
	conn  *sql.Conn
	stmts map[string]driver.Stmt
}

func (p *readers) get(ctx context.Context) (*reader, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("snapshot closed")
	}
	if n := len(p.idle); n > 0 {
		r := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return r, nil
	}
	p.mu.Unlock()
	conn, err := p.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &reader{conn: conn, stmts: map[string]driver.Stmt{}}, nil
}

// put gives r back, or closes it when it failed (err) or enough are idle.
func (p *readers) put(r *reader, err error) {
	p.mu.Lock()
	if err == nil && !p.closed && len(p.idle) < maxIdleReaders {
		p.idle = append(p.idle, r)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	r.close()
}

// close closes the idle readers; one in use is closed when it is put back.
func (p *readers) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, r := range idle {
		r.close()
	}
}

func (r *reader) close() {
	_ = r.conn.Raw(func(any) error {
		for _, st := range r.stmts {
			st.Close()
		}
		return nil
	})
	r.conn.Close()
}

// query runs q with args, its statement prepared once, and calls row for
// each row with the values of its columns (valid until the next call).
func (r *reader) query(ctx context.Context, q string, args []int64, row func([]driver.Value) error) error {
	return r.conn.Raw(func(dc any) error {
		st, cached := r.stmts[q]
		if !cached {
			prep, ok := dc.(driver.ConnPrepareContext)
			if !ok {
				return errors.New("the SQLite driver cannot prepare statements with a context")
			}
			var err error
			if st, err = prep.PrepareContext(ctx, q); err != nil {
				return err
			}
			if len(r.stmts) < maxReaderStmts {
				r.stmts[q] = st
			} else {
				defer st.Close()
			}
		}
		sq, ok := st.(driver.StmtQueryContext)
		if !ok {
			return errors.New("the SQLite driver cannot query with a context")
		}
		named := make([]driver.NamedValue, len(args))
		for i, a := range args {
			named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
		}
		rows, err := sq.QueryContext(ctx, named)
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, len(rows.Columns()))
		for {
			if err := rows.Next(dest); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
			if err := row(dest); err != nil {
				return err
			}
		}
	})
}

// byID reads the exchanges with ids with q (selecting the columns of
// scanExchange, in its order, with " WHERE id IN " at its end), returning
// them in the order of ids; an unknown ID is left out.
func (s *Snapshot) byID(ctx context.Context, ids []int64, q string) ([]*Exchange, error) {
	got := make(map[int64]*Exchange, len(ids))
	for rest := ids; len(rest) > 0; {
		chunk := rest[:min(len(rest), maxIDs)]
		rest = rest[len(chunk):]
		r, err := s.readers.get(ctx)
		if err != nil {
			return nil, fmt.Errorf("read snapshot %s: %w", s.path, err)
		}
		err = r.query(ctx, s.sel(q)+"(?"+strings.Repeat(",?", len(chunk)-1)+")", chunk, func(v []driver.Value) error {
			e, err := exchangeFromValues(v)
			if err == nil {
				got[e.ID] = e
			}
			return err
		})
		s.readers.put(r, err)
		if err != nil {
			return nil, fmt.Errorf("read snapshot %s: %w", s.path, err)
		}
	}
	out := make([]*Exchange, 0, len(ids))
	for _, id := range ids {
		if e := got[id]; e != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// exchangeFromValues is scanExchange for a row read through the driver.
func exchangeFromValues(v []driver.Value) (*Exchange, error) {
	if len(v) != exchangeColCount {
		return nil, fmt.Errorf("%d columns, want %d", len(v), exchangeColCount)
	}
	e := &Exchange{
		ID: valInt(v[0]), Direction: Direction(valString(v[1])), Protocol: valString(v[2]), Service: valString(v[3]),
		Start: fromUnixNano(valInt(v[4])), Duration: time.Duration(valInt(v[5])),
		Method: valString(v[6]), URL: valString(v[7]), Proto: valString(v[8]),
		RequestBody: valBytes(v[10]), RequestBodySize: valInt(v[11]), Status: int(valInt(v[12])),
		ResponseBody: valBytes(v[14]), ResponseBodySize: valInt(v[15]),
		Endpoint: valString(v[16]), ParentID: valInt(v[17]), TraceID: valString(v[18]), Error: valString(v[19]),
		ClientConn: valInt(v[22]),
	}
	var err error
	if e.ResponseTrailer, err = parseHeader(sql.NullString{String: valString(v[20]), Valid: v[20] != nil}); err != nil {
		return nil, fmt.Errorf("exchange %d: response trailer: %w", e.ID, err)
	}
	if e.Messages, err = decodeMessages(valBytes(v[21])); err != nil {
		return nil, fmt.Errorf("exchange %d: %w", e.ID, err)
	}
	if e.RequestHeader, err = parseHeader(sql.NullString{String: valString(v[9]), Valid: v[9] != nil}); err != nil {
		return nil, fmt.Errorf("exchange %d: request header: %w", e.ID, err)
	}
	if e.ResponseHeader, err = parseHeader(sql.NullString{String: valString(v[13]), Valid: v[13] != nil}); err != nil {
		return nil, fmt.Errorf("exchange %d: response header: %w", e.ID, err)
	}
	return e, nil
}

func valInt(v driver.Value) int64 {
	n, _ := v.(int64)
	return n
}

func valString(v driver.Value) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// valBytes returns a blob's bytes, nil for an empty one (as scanExchange).
func valBytes(v driver.Value) []byte {
	var b []byte
	switch x := v.(type) {
	case []byte:
		b = x
	case string:
		b = []byte(x)
	}
	if len(b) == 0 {
		return nil
	}
	return b
}

package snapshots

import (
	"context"
	"iter"
	"time"
)

// IndexEntry is what a reader of a big snapshot keeps in memory of one
// exchange: enough to choose it, not its headers and bodies.
type IndexEntry struct {
	ID       int64
	Start    time.Time
	Endpoint string
	// Truncated says the request body was cut at recording
	// (Exchange.RequestTruncated).
	Truncated bool
}

// Index yields the exchanges of direction d in order of ID, without their
// headers and bodies, so that a snapshot of any size is indexed in memory
// of a few bytes per exchange.
func (s *Snapshot) Index(ctx context.Context, d Direction) iter.Seq2[IndexEntry, error] {
	// As Exchange.RequestTruncated: a gRPC call (its endpoint says so) with
	// no message is not cut, whatever bytes it sent.
	q := `SELECT id, start_ns, endpoint, CASE WHEN messages IS NULL
		THEN request_body_size > length(coalesce(request_body, x''))
			AND NOT (endpoint LIKE 'gRPC %' AND length(coalesce(request_body, x'')) = 0)
		ELSE hex(substr(messages, 2, 1)) IN ('01', '03') END
		FROM exchanges WHERE direction = ? ORDER BY id`
	return queryRows(ctx, s, s.sel(q), []any{string(d)}, func(sc scanner) (IndexEntry, error) {
		var e IndexEntry
		var ns int64
		err := sc.Scan(&e.ID, &ns, &e.Endpoint, &e.Truncated)
		e.Start = fromUnixNano(ns)
		return e, err
	})
}

// Requests returns the exchanges with the given IDs, in the order of ids
// (an unknown ID is left out), with what is needed to send a request
// again: ID, direction, start, duration, method, URL, HTTP version,
// request header and body, status and endpoint, and a gRPC call's messages
// (both sides': a replay sends the client's and checks the server's),
// response trailers, and for an exchange over HTTP/2 or a gRPC call its
// response header and error (where a call's status may be); the other
// fields are left zero (a column not
// read costs nothing: read during a load, every column counts). Bodies are
// read only here, so a caller reading in batches holds one batch at a time.
func (s *Snapshot) Requests(ctx context.Context, ids []int64) ([]*Exchange, error) {
	return s.byID(ctx, ids, `SELECT id, direction, NULL, NULL, start_ns, duration_ns,
	method, url, proto, request_header, request_body, NULL,
	status, CASE WHEN `+h2OrGRPC+` THEN response_header END, NULL, NULL, endpoint, NULL, NULL,
	CASE WHEN `+h2OrGRPC+` THEN error END, `+v2Columns+` FROM exchanges WHERE id IN `)
}

// h2OrGRPC is true of an exchange over HTTP/2 or a gRPC call, in SQL.
const h2OrGRPC = `(proto = 'HTTP/2.0' OR request_header LIKE '%application/grpc%')`

// Answers returns the exchanges with the given IDs in the order of ids (an
// unknown ID is left out) with what a mock needs to answer again: ID,
// method, URL, duration, status, response header and body, the body's
// recorded size, the error, and a gRPC call's messages and response
// trailers; the other fields are left zero.
func (s *Snapshot) Answers(ctx context.Context, ids []int64) ([]*Exchange, error) {
	return s.byID(ctx, ids, `SELECT id, NULL, NULL, NULL, NULL, duration_ns,
	method, url, NULL, NULL, NULL, NULL,
	status, response_header, response_body, response_body_size, NULL, NULL, NULL, error, `+v2Columns+` FROM exchanges WHERE id IN `)
}

// Calls yields the outbound exchanges in recorded order (by start, then
// ID) without their response header, body and trailers
// (Exchange.ResponseBodySize still says how big the body was; a gRPC
// call's messages are all there, the client's being what it is matched on): what a mock indexes before it reads
// the answers it gives with Answers.
func (s *Snapshot) Calls(ctx context.Context) iter.Seq2[*Exchange, error] {
	q := `SELECT id, direction, protocol, service, start_ns, duration_ns,
	method, url, proto, request_header, request_body, request_body_size,
	status, NULL, NULL, response_body_size, endpoint, parent_id, trace_id, error, NULL, messages, client_conn
	FROM exchanges WHERE direction = ? ORDER BY start_ns, id`
	return queryRows(ctx, s, s.sel(q), []any{string(Outbound)}, scanExchange)
}

// CallParent is an outbound exchange's service and the inbound exchange it
// belongs to.
type CallParent struct {
	Service string
	Parent  int64
}

// CallParents yields the service and parent of every outbound exchange
// that has a parent (Exchange.ParentID), in no particular order: cheaper
// than Calls for counting a replay's expected upstream calls.
func (s *Snapshot) CallParents(ctx context.Context) iter.Seq2[CallParent, error] {
	q := `SELECT service, parent_id FROM exchanges WHERE direction = ? AND parent_id != 0`
	return queryRows(ctx, s, q, []any{string(Outbound)}, func(sc scanner) (CallParent, error) {
		var c CallParent
		err := sc.Scan(&c.Service, &c.Parent)
		return c, err
	})
}

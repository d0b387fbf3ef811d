package snapshots

import (
	"net/http"
	"time"
)

// Direction says which side of the app an exchange was seen on.
type Direction string

// The directions of an exchange.
const (
	// Inbound exchanges are requests the app served: the traffic to replay.
	Inbound Direction = "inbound"
	// Outbound exchanges are calls the app made to upstream services.
	Outbound Direction = "outbound"
)

// Redacted is the value a snapshot holds in place of a secret (a redacted
// header's value), and the value reports show for one.
const Redacted = "[REDACTED]"

// Exchange is one recorded HTTP request and its response.
type Exchange struct {
	// ID identifies the exchange within its snapshot. Writer.NewID hands out
	// IDs before an exchange completes, so that outbound calls and SQL
	// statements can name their parent while it is still in flight; zero
	// means the writer assigns one.
	ID int64
	// Direction is Inbound or Outbound.
	Direction Direction
	// Protocol is "http" or "https".
	Protocol string
	// Service is the host:port the request was addressed to.
	Service string
	// Start is when the request began; stored with nanosecond precision.
	Start time.Time
	// Duration runs from Start until the last byte of the response body.
	Duration time.Duration

	// Method is the request method, e.g. "GET".
	Method string
	// URL is the request target as the client sent it for a proxy: absolute
	// (scheme://host/path?query), so that it names the service.
	URL string
	// Proto is the HTTP version, e.g. "HTTP/1.1" or "HTTP/2.0"; empty means
	// HTTP/1.1. HTTP/2.0 with Protocol "http" is h2c (HTTP/2 in the clear,
	// as gRPC clients speak it with prior knowledge), with "https" it is h2
	// (negotiated by ALPN); see Exchange.Transport.
	Proto string
	// RequestHeader holds the request headers, redacted values included as
	// the redaction marker.
	RequestHeader http.Header
	// RequestBody is the request body, at most the recorder's body cap.
	RequestBody []byte
	// RequestBodySize is the full size of the request body in bytes; when it
	// is larger than len(RequestBody) the body was truncated.
	RequestBodySize int64

	// Status is the response status code; zero when no response came.
	Status int
	// ResponseHeader holds the response headers.
	ResponseHeader http.Header
	// ResponseBody is the response body as sent on the wire (still
	// gzip-encoded when the upstream gzipped it), at most the body cap.
	ResponseBody []byte
	// ResponseBodySize is the full size of the response body in bytes.
	ResponseBodySize int64
	// ResponseTrailer holds the trailers that followed the response body
	// (gRPC's Grpc-Status and Grpc-Message among them); nil when none came.
	// A gRPC error answered without a body ("Trailers-Only") has its status
	// in ResponseHeader instead.
	ResponseTrailer http.Header

	// Messages holds every message of a gRPC call (IsGRPC), the client's and
	// the server's, in the order they were whole on the wire, each with its
	// time; nil for any other exchange. A gRPC exchange's RequestBody and
	// ResponseBody are nil (its messages are here) and RequestBodySize and
	// ResponseBodySize count the bytes of each side's stream on the wire,
	// the 5-byte prefixes included.
	Messages []Message

	// Endpoint is method plus path template, e.g. "GET /orders/{id}", and
	// for an inbound request that names an operation, the operation in
	// braces: "POST /graphql {allBooks}" (see EndpointOf). The writer
	// computes it when empty.
	Endpoint string
	// ParentID is the inbound exchange this outbound call belongs to; zero
	// when unknown.
	ParentID int64
	// TraceID is the W3C trace id from the request's traceparent header, if
	// any (32 hex digits).
	TraceID string
	// Error describes a transport failure (no response, or a response cut
	// short); empty on success.
	Error string
	// ClientConn identifies, within the snapshot, the client connection an
	// inbound request came on: requests of one connection share it (HTTP/2
	// streams of one connection too). Zero means unknown (an outbound call,
	// an import that did not say, a file of format 1 or 2). Replay takes
	// the requests of one connection for one client when it correlates.
	ClientConn int64
}

// RequestTruncated reports whether the recorded request body is shorter than
// the one sent; for a gRPC call, whether a client message was cut. A gRPC
// call's bytes after its last whole message are a message the client began
// and never ended (it canceled, its deadline passed): not a body cut at
// recording, so a call with no whole message at all is not cut either.
func (e *Exchange) RequestTruncated() bool {
	if e.Messages != nil || len(e.RequestBody) == 0 && e.IsGRPC() {
		return messagesCut(e.Messages, FromClient)
	}
	return e.RequestBodySize > int64(len(e.RequestBody))
}

// ResponseTruncated reports whether the recorded response body is shorter
// than the one sent; for a gRPC call, whether a server message was cut.
func (e *Exchange) ResponseTruncated() bool {
	if e.Messages != nil {
		return messagesCut(e.Messages, FromServer)
	}
	return e.ResponseBodySize > int64(len(e.ResponseBody))
}

// Statement protocols.
const (
	ProtocolSimple   = "simple"
	ProtocolExtended = "extended"
)

// Statement is one SQL statement the database completed.
type Statement struct {
	// ID identifies the statement within its snapshot; zero means the writer
	// assigns one.
	ID int64
	// ExchangeID is the inbound exchange the statement belongs to; zero when
	// it could not be attributed.
	ExchangeID int64
	// TraceID is the trace id found in a sqlcommenter traceparent comment, if
	// any.
	TraceID string
	// Conn numbers the client connection the statement ran on (unique within
	// one proxy's lifetime).
	Conn int64
	// Start is when the statement was sent to the server.
	Start time.Time
	// Duration runs from Start until the server completed the statement.
	Duration time.Duration
	// Protocol is ProtocolSimple or ProtocolExtended.
	Protocol string
	// SQL is the statement text as sent.
	SQL string
	// Fingerprint is SQL with literals and parameters folded to "?", e.g.
	// "SELECT * FROM order_items WHERE order_id = ?".
	Fingerprint string
	// Rows is the number of rows returned or affected, from the command tag
	// or the DataRow messages.
	Rows int64
	// CommandTag is the server's completion tag, e.g. "SELECT 50".
	CommandTag string
	// Error is the server's error ("SQLSTATE: message"); empty on success.
	Error string
}

// CaptureStats counts what a recording saw and what it kept.
type CaptureStats struct {
	// InboundSeen counts inbound requests the recorder received.
	InboundSeen int64 `json:"inbound_seen"`
	// InboundRecorded counts inbound exchanges written to the snapshot.
	InboundRecorded int64 `json:"inbound_recorded"`
	// OutboundSeen counts outbound requests the recorder received.
	OutboundSeen int64 `json:"outbound_seen"`
	// OutboundRecorded counts outbound exchanges written to the snapshot.
	OutboundRecorded int64 `json:"outbound_recorded"`
	// Statements counts SQL statements written to the snapshot.
	Statements int64 `json:"statements"`
}

// Phases of a run.
const (
	// PhaseLoad results come from the load model and give latency figures.
	PhaseLoad = "load"
	// PhaseExplain results come from requests replayed one at a time, so that
	// every SQL statement is attributed exactly.
	PhaseExplain = "explain"
)

// SQLCount is how many statements of one fingerprint a request caused. A
// statement the server rejected (it ended in an ErrorResponse) counts in
// Errors only, not in Count or Duration. Run files written before Errors
// existed (version 1) counted such statements in Count.
type SQLCount struct {
	// Fingerprint is the folded statement text.
	Fingerprint string
	// Count is the number of statements of this fingerprint that completed
	// without error.
	Count int
	// Duration is their total database time.
	Duration time.Duration
	// Errors is the number of statements of this fingerprint the server
	// rejected; zero when none failed.
	Errors int
}

// Result is one replayed request.
type Result struct {
	// Seq numbers results within a run in the order they were written,
	// from 1; zero means the run writer assigns it.
	Seq int64
	// Phase is PhaseLoad or PhaseExplain.
	Phase string
	// Slice numbers the interleaved slice of a comparison the result belongs
	// to; zero when the run was not sliced.
	Slice int
	// ExchangeID is the recorded inbound exchange that was replayed.
	ExchangeID int64
	// Endpoint is the recorded exchange's endpoint, e.g. "GET /orders".
	Endpoint string
	// Method and URL are what was sent (URL is path and query).
	Method string
	URL    string
	// Intended is when the load model meant the request to start.
	Intended time.Time
	// Sent is when the request was actually written to the connection.
	Sent time.Time
	// Done is when the last byte of the response body arrived, or the
	// request failed.
	Done time.Time
	// Status is the response status; zero when none came.
	Status int
	// RecordedStatus is the status of the recorded exchange.
	RecordedStatus int
	// Bytes is the size of the response body in bytes.
	Bytes int64
	// Error describes a transport error or timeout; empty otherwise.
	Error string
	// TraceID is the trace id of the traceparent sent with the request.
	TraceID string
	// SQLCounted reports whether SQL statements were counted for this
	// request (a counter was in place and could attribute them).
	SQLCounted bool
	// SQL holds the statements attributed to the request, per fingerprint.
	SQL []SQLCount
	// UpstreamCounted reports whether the request's calls to mocked
	// services were counted: a mock was in place and attributed every call
	// made while the request was in flight. Run files of versions 1 and 2
	// have it false.
	UpstreamCounted bool
	// Upstream holds the calls to mocked services attributed to the
	// request, per service and endpoint.
	Upstream []UpstreamCount
	// GRPC reports that the request was a gRPC call: it succeeded when its
	// grpc-status is the recorded one (Status and RecordedStatus stay the
	// HTTP statuses). False in run files before version 4.
	GRPC bool
	// GRPCStatus is the grpc-status the call ended with (0 is OK);
	// NoGRPCStatus when none came. Only meaningful when GRPC is set.
	GRPCStatus int
	// RecordedGRPCStatus is the recorded call's grpc-status; NoGRPCStatus
	// when the recording has none. Only meaningful when GRPC is set.
	RecordedGRPCStatus int
}

// Latency is the time from the intended start to the end of the response, so
// a target that stalls the load generator cannot hide its slowness.
func (r *Result) Latency() time.Duration { return r.Done.Sub(r.Intended) }

// ServiceTime is the time from the actual send to the end of the response.
func (r *Result) ServiceTime() time.Duration { return r.Done.Sub(r.Sent) }

// Statements is the number of statements attributed to the request.
func (r *Result) Statements() int {
	n := 0
	for _, c := range r.SQL {
		n += c.Count
	}
	return n
}

// Failed reports whether the replayed request failed: a transport error, a
// timeout, or a status of another class than the recorded one; for a gRPC
// call, a grpc-status other than the recorded one.
func (r *Result) Failed() bool {
	if r.GRPC {
		return r.grpcFailed()
	}
	if r.Error != "" || r.Status == 0 {
		return true
	}
	if r.RecordedStatus == 0 {
		return r.Status >= 500
	}
	return r.Status/100 != r.RecordedStatus/100
}

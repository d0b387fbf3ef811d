// Package mock answers an app's outbound calls from recorded exchanges, so
// that a replay neither needs nor touches the real upstream services.
//
// A Server (New(Config)) is two things at once:
//
//   - a forward proxy (ServeHTTP) for the app's HTTP_PROXY and HTTPS_PROXY.
//     Requests to mocked services are answered from the recording; HTTPS ones
//     arrive through CONNECT tunnels that are intercepted with replay's CA
//     (elazarl/goproxy, leaf certificates from internal/ca), so the app must
//     trust that CA (SSL_CERT_FILE and friends, see `replay ca`). Requests to
//     services that are not mocked pass through to the real upstream: plain
//     HTTP is forwarded, CONNECT is tunnelled without interception.
//   - per recorded service, a plain server (ServiceHandler) for apps that take
//     an upstream base URL instead of a proxy.
//
// Load reads a snapshot's outbound exchanges for Config.Exchanges; the
// replayer starts a Server in-process (serving it on its own listener) and
// reads Misses, MissLog and Stats after a run. Close ends the CONNECT
// tunnels still open once the listener has stopped.
//
// # Matching
//
// A request to a mocked service (host:port, the scheme's default port made
// explicit) is matched against the exchanges recorded for that service at
// three levels, the first that finds candidates wins:
//
//  1. Exact: method, path and raw query as sent, and body. A body that is
//     one JSON value is compared canonically (object key order and
//     whitespace don't matter; number literals and array order do); other
//     bodies byte for byte.
//  2. Loose: as Exact, but the path is compared unescaped, query parameters
//     in any order, and volatile values are ignored in the query, in JSON
//     bodies and in application/x-www-form-urlencoded bodies.
//  3. Template: as Loose, but path segments that are ids may differ: the
//     endpoint template (snapshots.Endpoint with Config.Rules, e.g.
//     "GET /items/{id}") must be equal. Among the candidates the recorded
//     request most similar to the request answers (strongest match).
//
// Config.Match stops at a stricter level (Exact or Loose), so that a request
// for an id that was not recorded is a miss rather than another id's answer.
//
// Headers are never compared (they carry dates, tokens and client versions).
//
// Volatile values, ignored at the loose and template levels:
//
//   - by key, for query parameters, form fields and JSON object members at
//     any depth: ts, timestamp, time, now, nonce, cnonce, request_id, req_id,
//     correlation_id, trace_id, span_id, traceparent, idempotency_key,
//     signature, sig, cachebuster, cb, rand, random, expires, X-Amz-Date,
//     X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, "_" (any key of
//     underscores only), any key ending in timestamp, nonce, request_id,
//     correlation_id, idempotency_key or signature, and Config.VolatileKeys.
//     Keys compare case-insensitively with '-', '_' and '.' ignored
//     (requestId = request_id = X-Request-ID).
//   - by key too: every name whose recorded value somewhere is the redaction
//     placeholder (snapshots.Redacted: the recorder replaced a secret), so
//     that a call carrying a real token matches its redacted recording.
//   - by value, whatever the key: UUIDs, hex strings of 16 or more digits
//     with both digits and letters (trace ids, hashes), RFC 3339 / ISO 8601
//     date-times (a date alone is not volatile), HTTP dates, and Unix times
//     in s, ms, µs or ns between 2001 and 2100 (numbers or strings).
//
// # Order
//
// Recorded exchanges are ordered by start time. Among the candidates a level
// finds, the first one that has not answered yet answers and is marked used,
// so the nth identical request gets the nth recorded response and stateful
// sequences (create, then poll until done) replay in order. When all are
// used, the last one answers again, for as long as the app asks. Safe for
// concurrent use: each request takes its own candidate under a lock.
//
// # Answers
//
// A hit gets the recorded status, headers and body bytes as recorded (gzip
// stays gzip for a client whose Accept-Encoding names it; one that names
// no coding, such as plain curl, gets the body decoded, without
// Content-Encoding; a chunked recording is served with Content-Length),
// without hop-by-hop headers; HEAD gets the recorded Content-Length and no
// body.
// With Timing "recorded" the answer waits the recorded duration first (the
// request's context cuts the wait short). A recording of a failed call
// (status 0) answers 502 with X-Replay-Mock: recorded-error.
// A recorded response whose body was cut at recording (the recorder's body
// limit) answers 502 with X-Replay-Mock: truncated, unless
// Config.AllowTruncated serves it cut (marked the same); Stats.Truncated
// counts both.
//
// A miss (no level finds a candidate) is counted (Misses), kept in MissLog
// (distinct requests by method, service, path, query and body, at most
// MissLogLimit, each with a count) and logged at Info level.
// With OnMiss "error" it answers 502 with header X-Replay-Mock: miss and a
// JSON body naming the closest recorded request of the service and the
// fields that differ:
//
//	{"error":"mock miss","request":"GET https://api.test/a?x=2",
//	 "closest":"GET https://api.test/a?x=1","differences":["query x: got 2, recorded 1"]}
//
// With OnMiss "passthrough" the real upstream answers instead (the miss is
// still counted).
//
// Intercepted HTTPS speaks HTTP/1.1, and HTTP/2 too (ALPN "h2") when a
// mocked service was recorded over HTTP/2 or Config.HTTP2 is set. Trailers
// are not recorded, so gRPC calls (status in trailers) cannot be mocked.
//
// Limits: a request whose recorded body was cut at the recorder's body limit cannot
// match (its body is compared whole); WebSocket upgrades are not mocked.
// The package records nothing (see recorder) and does not mock databases:
// SQL goes to a real PostgreSQL (see sqlcount).
package mock

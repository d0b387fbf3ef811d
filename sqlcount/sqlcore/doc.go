// Package sqlcore is the core of an SQL counter, shared by every wire
// protocol: the Proxy (accepting, relaying through event loops or
// goroutines, the idle and startup guard), the statements a wire completes
// (Recorder), fingerprint totals, attribution to the requests in flight
// (sqlcommenter traceparent comments, a request alone in flight), the
// histogram of unattributed statements, Stats and the JSON file.
//
// A Wire (package pgwire, mysqlwire) knows one protocol: it takes each
// client connection through its startup and decodes the traffic; nothing
// here knows which protocol it is. Package sqlcount picks the wire by name.
package sqlcore

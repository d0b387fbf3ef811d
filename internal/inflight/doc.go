// Package inflight attributes events (SQL statements, upstream calls) to the
// inbound requests in flight while they happen: by the W3C trace id the
// event carries when the app propagated the request's traceparent, else to
// the one request in flight from the event's start to its end.
//
// A Tracker is told when a request begins and ends (Begin, End); an event
// takes the current Window when it starts and is attributed when it
// completes (Attribute). The SQL counter (package sqlcount) and the mock
// (package mock) each keep one; they differ only in what they count, the
// accumulator C of a request and the event E added to it.
package inflight

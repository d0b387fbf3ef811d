// Package hopbyhop removes the hop-by-hop headers of an HTTP message (RFC
// 9110 §7.6.1): those that describe one connection and that a proxy, or a
// replay of a recorded message, must not pass on.
//
// The mock applies it to recorded responses, the replayer to recorded
// requests; each then drops the headers it computes itself (Content-Length,
// and for requests Host and the trace context). It does not touch trailers
// or bodies.
package hopbyhop

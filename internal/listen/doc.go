// Package listen is how every replay listener opens: on loopback unless
// an address names another host, and bounded (Limits) so that slow or idle
// clients cannot hold connections for ever.
//
// Addr turns a listen address without a host (":8082", "8082") into a
// loopback one; Warning says what a listener on another host exposes.
// Limits is the flag group of the bounds (read-header and idle timeouts of
// HTTP listeners, startup and idle timeouts of the SQL counter, a
// connection limit per listener) with AddFlags for commands; its Listen
// opens a limited listener and Server an HTTP server with the timeouts.
//
// It does not speak any protocol: the SQL counter (package sqlcount) and
// the hijacked tunnels of the forward proxies (package conntrack) apply
// their timeouts themselves.
package listen

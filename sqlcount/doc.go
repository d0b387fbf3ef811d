// Package sqlcount counts, times, fingerprints and attributes every SQL
// statement passing between an application and its database: a
// wire-protocol proxy for PostgreSQL and for MySQL/MariaDB.
//
// A Proxy sits between an application and its server:
//
//	p, err := sqlcount.New(sqlcount.Config{Upstream: "127.0.0.1:5432", OnStatement: save})
//	go p.Serve(ctx, listener) // the app connects to the listener instead of the server
//	...
//	p.Begin(exchangeID, traceID) // an inbound request is in flight
//	counts := p.End(exchangeID)  // it ended: the statements it caused, per fingerprint
//	totals := p.Stats()          // everything so far, per fingerprint
//
// Config.Protocol picks the wire protocol: "" or "postgres" (package
// pgwire), "mysql" (package mysqlwire, MySQL and MariaDB). Everything else
// is one core, package sqlcore, whatever the protocol: statements,
// fingerprint totals, timing, attribution, stats and the JSON file.
// Stats.WriteTable renders the totals for a terminal and Stats.WriteJSON as
// the JSON document replay sqlcount --json writes.
//
// # Attribution
//
// A statement belongs to an inbound request when it carries the request's
// trace id in a sqlcommenter traceparent comment
// (/*traceparent='00-<trace id>-<span id>-01'*/, URL-encoded or not), under
// any concurrency; else when exactly one request was in flight from the
// statement's start to its completion, with no other request beginning or
// ending in between; else it counts in the totals only.
//
// # What it does not do
//
// It never rewrites statements; each wire package says what it changes in a
// handshake, if anything, and what it cannot see.
package sqlcount

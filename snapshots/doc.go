// Package snapshots is replay's shared vocabulary and on-disk format.
//
// It defines the data model — Exchange (a recorded request and response),
// Statement (one SQL statement the database completed) and Result (one
// replayed request) — and stores them in SQLite files through
// modernc.org/sqlite: snapshots (what a recording captured) and run files
// (what a replay measured). Every file records its format version; old
// versions are upgraded here and nowhere else.
//
// It also computes endpoint templates ("GET /orders/{id}") and converts
// snapshots to and from JSON Lines and HAR 1.2.
//
// It imports nothing else of replay's, and does no networking.
package snapshots

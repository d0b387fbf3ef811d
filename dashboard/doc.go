// Package dashboard serves a live view of a replay while its load runs:
// `replay run --dashboard ADDR` and `replay compare --dashboard ADDR`.
//
// A Dashboard is a session.Observer: the session tells it every explain and
// load result as it completes and where it is (side, phase, slice), and it
// aggregates them per side and per endpoint of each side, in HDR
// histograms, into totals so far and a time series of one point per window
// (a second by default: requests, rate, failures, p50/p95/p99, max). It
// serves one self-contained page (inline CSS and script, nothing loaded from
// elsewhere) at /, the figures as JSON at /api/feed (Feed; ?since=I returns
// only the points after window I), and, once the session ends, its HTML
// report at /report.
//
// It listens through internal/listen: on loopback unless the address names
// a host, with a warning when it is reachable from the network. Options is
// the flag group a command registers in one line.
//
// It does not judge anything: the figures are raw, as they come; the
// verdict is the report's.
package dashboard

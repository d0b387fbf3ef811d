// Package session runs replays from start to end: one side of a replay is
// a build (a URL the user runs, or a command replay starts) with its own
// mock of the upstreams and its own SQL counter in front of the real
// database, replayed to by its own replayer into its own run file.
//
//   - Run replays a snapshot against one side (`replay run`) and returns
//     its report.
//   - Compare replays it against a baseline and a candidate, interleaved
//     or one after the other, with resets, explain phases and warmups
//     (`replay compare`, `replay demo`), then compares the two run files.
//   - CompareFiles and LoadComparison compare run files written earlier.
//
// Order matters and is kept here: a side's mock and SQL counter listen
// before its build starts, so that a connection pool opened at start goes
// through the counter. Everything a side started is stopped when it ends,
// also on errors and when ctx is canceled; the run files then keep what was
// measured so far.
//
// It does not parse flags or print: a caller (the CLI) validates its
// settings, renders the reports (package report) and tells the user how to
// start a build given as a URL (Config.Listening).
package session

package analyzer

import (
	"fmt"
	"strconv"

	"github.com/replaykit/replay/snapshots"
)

// Kinds of wiring faults, as reported in Fault.Kind.
const (
	// FaultSQLUnused: a side's SQL counter saw no connection (while the
	// other side's did, or in a run of its own): its build's SQL is not
	// counted.
	FaultSQLUnused = "sql-unused"
	// FaultSQLCrossed: a side's SQL counter saw the other side's build
	// (by its application_name): that build's statements were counted as
	// this side's.
	FaultSQLCrossed = "sql-crossed"
	// FaultMockUnused: a side's mock saw no call although the recorded
	// requests replayed made calls to mocked services.
	FaultMockUnused = "mock-unused"
	// FaultMockMisses: more than MaxMockMissRate of a side's calls to its
	// mock had no recorded answer, and got errors (not passed through).
	FaultMockMisses = "mock-misses"
	// FaultAuth: a side's requests were refused for want of a credential
	// (redacted at recording, none given) or went out without a token:
	// the comparison would rest on its auth failures (AuthFaults).
	FaultAuth = "auth"
)

// MaxMockMissRate is the share of a side's mock calls that may miss before
// the side is reported as miswired (FaultMockMisses).
const MaxMockMissRate = 0.01

// Fault is a wiring fault: a build did not use what replay set up for it
// (its SQL counter, its mock), so a side's figures do not measure what they
// claim. A comparison with a fault has no clean verdict.
type Fault struct {
	// Side is the side at fault: "baseline", "candidate", or a run's name.
	Side string
	// Kind is one of the Fault constants.
	Kind string
	// Text is one sentence: what was seen, and what to fix.
	Text string
}

func (f Fault) String() string { return f.Text }

// SawNothing reports whether the fault is a SQL counter or a mock that saw
// nothing of a build that should have used it (FaultSQLUnused,
// FaultMockUnused): none of the build's SQL or upstream calls is in its
// figures.
func (f Fault) SawNothing() bool { return f.Kind == FaultSQLUnused || f.Kind == FaultMockUnused }

// RunFaults returns the wiring faults of one run on its own: a SQL counter
// that saw no connection, a mock never called although the recording made
// upstream calls, too many mock misses. None for run files that did not
// record their wiring.
func RunFaults(info snapshots.RunInfo) []Fault {
	w := info.Wiring
	if w == nil {
		return nil
	}
	var out []Fault
	if w.SQLAddr != "" && w.SQLConnections == 0 {
		out = append(out, Fault{Side: info.Name, Kind: FaultSQLUnused, Text: fmt.Sprintf(
			"the SQL counter (%s) saw no connection: the build does not reach its database through it, so none of its SQL was counted; point its database address (DATABASE_URL, PGHOST/PGPORT, MYSQL_HOST/MYSQL_PORT, a DSN) at %s, or at the HOST:PORT of --postgres or --mysql, which replay rewrites",
			w.SQLAddr, w.SQLAddr)})
	}
	return append(out, mockFaults(info, "the run", "the build")...)
}

// CompareFaults returns the wiring faults of a comparison: each side's
// mock faults (see RunFaults); a side whose SQL counter saw no connection
// while the other's did (or neither saw one); a side's counter that saw the
// other side's build. None for run files that did not record their wiring.
func CompareFaults(base, cand snapshots.RunInfo) []Fault {
	sides := [2]snapshots.RunInfo{base, cand}
	if base.Wiring == nil || cand.Wiring == nil {
		return nil
	}
	var out []Fault
	for i, s := range sides {
		o := sides[1-i]
		w, ow := s.Wiring, o.Wiring
		if w.SQLAddr == "" {
			continue
		}
		if w.SQLConnections == 0 {
			seen := "neither side's did"
			if ow.SQLConnections > 0 {
				seen = fmt.Sprintf("the %s's saw %s", o.Name, plural(ow.SQLConnections, "connection"))
			}
			out = append(out, Fault{Side: s.Name, Kind: FaultSQLUnused, Text: fmt.Sprintf(
				"the %s's SQL counter (%s) saw no connection while %s: the %s build does not reach its database through it, so none of its SQL was counted; point the %s's database address (DATABASE_URL, PGHOST/PGPORT, MYSQL_HOST/MYSQL_PORT, a DSN) at %s, or at the HOST:PORT of --postgres or --mysql, which replay rewrites",
				s.Name, w.SQLAddr, seen, s.Name, s.Name, w.SQLAddr)})
		}
		if ow.SQLApp == "" || ow.SQLApp == w.SQLApp {
			continue
		}
		for _, c := range w.SQLClients {
			if c.App != ow.SQLApp {
				continue
			}
			to := "its own counter"
			if ow.SQLAddr != "" {
				to += ", " + ow.SQLAddr
			}
			out = append(out, Fault{Side: o.Name, Kind: FaultSQLCrossed, Text: fmt.Sprintf(
				"the %s's SQL counter (%s) saw %s on %s from the %s build (application_name %s), counted as the %s's: point the %s's DATABASE_URL at %s, not at the %s's",
				s.Name, w.SQLAddr, plural(c.Statements, "statement"), plural(c.Connections, "connection"), o.Name, c.App, s.Name, o.Name, to, s.Name)})
		}
	}
	for _, s := range sides {
		out = append(out, mockFaults(s, "the "+s.Name, "the "+s.Name+" build")...)
	}
	return out
}

// mockFaults are the faults of a run's mock: never called although the
// recording made upstream calls, or too many misses answered with errors.
// whose names the mock's side ("the candidate"), build its build.
func mockFaults(info snapshots.RunInfo, whose, build string) []Fault {
	w := info.Wiring
	if w.MockAddr == "" {
		return nil
	}
	var out []Fault
	if w.MockCalls == 0 && w.RecordedCalls > 0 {
		out = append(out, Fault{Side: info.Name, Kind: FaultMockUnused, Text: fmt.Sprintf(
			"%s's mock (%s) saw no call, but the recorded requests replayed made %s to mocked services: %s does not send them through the mock; make it honour HTTP_PROXY/HTTPS_PROXY (or give it the mock as its upstream's base URL) and trust SSL_CERT_FILE",
			whose, w.MockAddr, plural(w.RecordedCalls, "call"), build)})
	}
	if w.MockCalls > 0 && float64(info.MockMisses) > MaxMockMissRate*float64(w.MockCalls) && !MissesPassedThrough(info) {
		out = append(out, Fault{Side: info.Name, Kind: FaultMockMisses, Text: fmt.Sprintf(
			"%s's mock could not answer %d of its %s (%s, over %s): %s got errors instead of recorded answers; see the closest recorded requests with 'replay mock', then record again or allow --on-miss passthrough",
			whose, info.MockMisses, plural(w.MockCalls, "call"), FormatPercent(100*float64(info.MockMisses)/float64(w.MockCalls)), FormatPercent(100*MaxMockMissRate), build)})
	}
	return out
}

// plural formats n things, e.g. "1 connection", "41 statements".
func plural(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.FormatInt(n, 10) + " " + thing + "s"
}

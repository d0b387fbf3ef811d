package analyzer

import (
	"fmt"
	"math"

	"github.com/replaykit/replay/snapshots"
)

// SQLSourceCounter: every statement the SQL counter saw during the load
// (snapshots.RunInfo.LoadSQL), attributed or not, over the load's requests.
const SQLSourceCounter = "counter"

// SQLCheckTolerance is how far, relative to the load's figure, the explain
// phase's statements per request may stray from the load's before the
// self-check says they disagree.
const SQLCheckTolerance = 0.10

// SQLCheck compares the explain phase's statements per request, weighted by
// the load's mix of endpoints, with what the SQL counter saw during the
// load. When they disagree the explain phase missed what the load ran (a
// request shape it did not replay, statements a build runs only under
// load, background work), and its figures are not exact.
type SQLCheck struct {
	// ExplainPerRequest is the explain phase's statements per request,
	// each endpoint weighted by its load requests.
	ExplainPerRequest float64
	// LoadPerRequest is LoadStatements / LoadRequests.
	LoadPerRequest float64
	// LoadStatements counts the statements the counter saw during the load.
	LoadStatements int64
	// LoadRequests counts the load's requests.
	LoadRequests int64
	// Agree reports whether the two figures are within SQLCheckTolerance.
	Agree bool
}

// CheckLoad computes the summary's figures from the load's SQL counter
// totals (s.Info.LoadSQL): LoadCounter and SQLCheck. A run whose counter
// saw no connection (SQLUnwired) counted nothing: its SQL figures, zeros
// that would read as "no statements", are dropped, so that SQL is shown
// as not counted and goals on it are not evaluated. Summarize calls it;
// call it again after replacing s.Info (a run summarized while its file was
// written learns the totals and its wiring when it is closed).
func CheckLoad(s *Summary) {
	s.LoadCounter, s.SQLCheck = SQLStats{}, nil
	if SQLUnwired(s.Info) {
		s.dropSQL()
		return
	}
	l := s.Info.LoadSQL
	if l == nil || s.Overall == nil || s.Overall.Requests == 0 {
		return
	}
	n := float64(s.Overall.Requests)
	c := SQLStats{Source: SQLSourceCounter, Requests: s.Overall.Requests, Statements: l.Statements,
		PerRequest: float64(l.Statements) / n, DBTimePerRequest: durMs(l.Total) / n}
	for _, f := range l.Fingerprints {
		if f.Count <= 0 {
			continue
		}
		c.Fingerprints = append(c.Fingerprints, FingerprintStats{
			Fingerprint:      f.Fingerprint,
			Count:            f.Count,
			PerRequest:       float64(f.Count) / n,
			DBTimePerRequest: durMs(f.Total) / n,
			PerCall:          durMs(f.Total) / float64(f.Count),
		})
	}
	sortFingerprints(c.Fingerprints)
	s.LoadCounter = c

	// The explain figure, weighted by the load's requests per endpoint;
	// no check when a loaded endpoint had no explain figures.
	var sum, weight float64
	for _, e := range s.Endpoints {
		if e.Requests == 0 {
			continue
		}
		if !e.ExplainSQL.Counted() {
			return
		}
		sum += float64(e.Requests) * e.ExplainSQL.PerRequest
		weight += float64(e.Requests)
	}
	if weight == 0 {
		return
	}
	ck := &SQLCheck{ExplainPerRequest: sum / weight, LoadPerRequest: c.PerRequest, LoadStatements: l.Statements, LoadRequests: s.Overall.Requests}
	ck.Agree = sqlAgree(ck.ExplainPerRequest, ck.LoadPerRequest)
	s.SQLCheck = ck
}

// SQLUnwired reports whether the run had a SQL counter that saw no
// connection (FaultSQLUnused): the build did not reach its database
// through it, so its SQL was not counted, whatever the results say.
func SQLUnwired(info snapshots.RunInfo) bool {
	w := info.Wiring
	return w != nil && w.SQLAddr != "" && w.SQLConnections == 0
}

// dropSQL forgets every SQL figure of s: none was counted.
func (s *Summary) dropSQL() {
	for _, e := range append([]*EndpointSummary{s.Overall}, s.Endpoints...) {
		if e != nil {
			e.SQL, e.EstimatedSQL, e.LoadSQL, e.ExplainSQL, e.loadAll = SQLStats{}, SQLStats{}, SQLStats{}, SQLStats{}, SQLStats{}
		}
	}
}

// sqlAgree reports whether explain and load statements per request agree:
// within SQLCheckTolerance of the load's figure, or less than 0.05
// statements per request apart.
func sqlAgree(explain, load float64) bool {
	d := math.Abs(explain - load)
	return d < 0.05 || d <= SQLCheckTolerance*load
}

// SQLTrusted reports whether the explain phase's figures of the run may be
// called exact: no self-check, or one that agrees.
func (s *Summary) SQLTrusted() bool { return s.SQLCheck == nil || s.SQLCheck.Agree }

// loadDBTime returns the database time per request under load of both
// sides from the SQL counter, and whether both sides have it.
func loadDBTime(c *Comparison) (b, k *SQLStats, ok bool) {
	if c.Baseline == nil || c.Candidate == nil {
		return nil, nil, false
	}
	b, k = &c.Baseline.LoadCounter, &c.Candidate.LoadCounter
	return b, k, b.Counted() && k.Counted()
}

// loadedEndpoints counts the endpoints with load requests in s.
func loadedEndpoints(s *Summary) int {
	n := 0
	for _, e := range s.Endpoints {
		if e.Requests > 0 {
			n++
		}
	}
	return n
}

// SQLCheckNote is the sentence a report prints when the run's self-check
// failed, naming the run (e.g. "candidate"; "" for a run alone); "" when
// the check agreed or could not be made.
func SQLCheckNote(name string, s *Summary) string {
	ck := s.SQLCheck
	if ck == nil || ck.Agree {
		return ""
	}
	who := "the explain phase"
	if name != "" {
		who = "the " + name + "'s explain phase"
	}
	return fmt.Sprintf("SQL self-check failed: %s gives %s statements per request, but the SQL counter saw %s during the load (%d statements / %d requests), off by more than %s; the explain figures are not exact: trust the load's",
		who, FormatCount(ck.ExplainPerRequest), FormatCount(ck.LoadPerRequest), ck.LoadStatements, ck.LoadRequests, FormatPercent(100*SQLCheckTolerance))
}

// loadCause explains a latency regression from the SQL counter's view of
// each side's load, when both runs have one: database time per request
// under load, and the statement whose time per call grew, whether or not
// the explain phase met it. For a run of several endpoints the counter's
// statements cannot be told apart by endpoint, so the endpoint's own
// statements per request (explain) are costed at each fingerprint's time
// per call under load. ok is false when the load's figures are missing.
func loadCause(c *Comparison, e *EndpointComparison, lat string) (cause, text string, ok bool) {
	lb, lk, ok := loadDBTime(c)
	if !ok {
		return "", "", false
	}
	tb, tk := lb, lk
	if loadedEndpoints(c.Baseline) > 1 || loadedEndpoints(c.Candidate) > 1 {
		tb, tk = costAtLoad(&e.Baseline.SQL, lb), costAtLoad(&e.Candidate.SQL, lk)
	}
	latDelta := e.Candidate.Latency.Avg - e.Baseline.Latency.Avg
	dbDelta := tk.DBTimePerRequest - tb.DBTimePerRequest
	if dbDelta < 1 || dbDelta < 0.5*latDelta {
		return CauseApp, fmt.Sprintf("%s; database time per request under load %s → %s (%s) accounts for little of it: the slowdown is in the app",
			lat, FormatMs(tb.DBTimePerRequest), FormatMs(tk.DBTimePerRequest), signedMs(dbDelta)), true
	}
	dbClause := fmt.Sprintf("database time per request %s → %s under load", FormatMs(tb.DBTimePerRequest), FormatMs(tk.DBTimePerRequest))
	var best *FingerprintStats
	bestDelta := 0.0
	for i := range tk.Fingerprints {
		f := &tk.Fingerprints[i]
		d := f.DBTimePerRequest
		if o := tb.Fingerprint(f.Fingerprint); o != nil {
			d -= o.DBTimePerRequest
		}
		if best == nil || d > bestDelta {
			best, bestDelta = f, d
		}
	}
	if best != nil {
		if o := tb.Fingerprint(best.Fingerprint); o != nil && o.PerCall > 0 && best.PerCall >= 1.5*o.PerCall &&
			best.PerRequest <= 1.25*o.PerRequest+0.5 {
			e.Fingerprint = best.Fingerprint
			return CauseSlowerSQL, fmt.Sprintf("`%s` slower: %s → %s per call, %s; %s",
				c.StatementName(best.Fingerprint), FormatMs(o.PerCall), FormatMs(best.PerCall), dbClause, lat), true
		}
		if o := tb.Fingerprint(best.Fingerprint); o == nil || best.PerRequest > 1.25*o.PerRequest+0.5 {
			e.Fingerprint = best.Fingerprint
			before := 0.0
			if o != nil {
				before = o.PerRequest
			}
			return CauseSQL, fmt.Sprintf("`%s` runs more often: %s → %s per request, %s; %s",
				c.StatementName(best.Fingerprint), FormatCount(before), FormatCount(best.PerRequest), dbClause, lat), true
		}
	}
	return CauseSlowerSQL, dbClause + "; " + lat, true
}

// costAtLoad returns an endpoint's statements per request (s) with each
// fingerprint's database time per call taken from the load's counter (load),
// when the load ran it.
func costAtLoad(s, load *SQLStats) *SQLStats {
	out := &SQLStats{Source: SQLSourceCounter, Requests: s.Requests, Statements: s.Statements, PerRequest: s.PerRequest}
	for _, f := range s.Fingerprints {
		if l := load.Fingerprint(f.Fingerprint); l != nil {
			f.PerCall = l.PerCall
		}
		f.DBTimePerRequest = f.PerRequest * f.PerCall
		out.DBTimePerRequest += f.DBTimePerRequest
		out.Fingerprints = append(out.Fingerprints, f)
	}
	return out
}

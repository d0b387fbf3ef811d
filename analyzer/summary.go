package analyzer

import (
	"fmt"
	"net/http"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Where the SQL figures of an SQLStats come from.
const (
	// SQLSourceExplain: requests replayed one at a time, every statement
	// attributed exactly.
	SQLSourceExplain = "explain"
	// SQLSourceLoad: requests of the load phase whose statements the counter
	// could attribute (SQLCounted); exact with sqlcommenter, else a lower bound.
	SQLSourceLoad = "load"
	// SQLSourceLoadEstimate: every request of the load phase, the statements
	// the counter could not attribute shared out by least squares
	// (EstimateSQL); Method and Margin say how sure the figure is.
	SQLSourceLoadEstimate = "load-estimate"
)

// Summary is what one run measured, overall and per endpoint. Build it with
// Summarize; render it with package report.
type Summary struct {
	// Info describes the run (name, snapshot, target, settings, mock misses).
	Info snapshots.RunInfo
	// Overall covers every endpoint; its Endpoint is "".
	Overall *EndpointSummary
	// Endpoints are the endpoints seen, busiest (most load requests) first,
	// then by name.
	Endpoints []*EndpointSummary
	// Duration is the span of the load phase: from the earliest intended
	// start to the last response, widened to the load's window when the
	// run recorded one (RunInfo.LoadStarted, LoadEnded: a ramp from 0
	// virtual users runs before its first request); for a sliced run whose
	// slices cover less than 90% of that (an interleaved comparison runs
	// the other side in between), the sum of its slices' spans; zero when
	// there was no load phase.
	Duration time.Duration
	// Slices lists the distinct interleaving slices of the load phase in
	// ascending order; empty when the run was not sliced.
	Slices []int
	// Sliced reports whether every load-phase result had a Slice > 0.
	Sliced bool
	// LoadCounter holds what the SQL counter saw during the load, every
	// statement attributed or not, over the load's requests (Source
	// SQLSourceCounter); not Counted when the run file has no such totals.
	LoadCounter SQLStats
	// SQLCheck compares the explain phase's statements per request with
	// the load's; nil when the run lacks either.
	SQLCheck *SQLCheck
	// Responses are the answers the run captured (SummarizeRun reads them
	// through ResponseSource); nil when it kept none.
	Responses *RunResponses
	// CPU is the build's CPU time per request over the load, when replay
	// started the build (see CPUUsage).
	CPU CPUUsage
}

// SpanLoad records the load's window, start to end (RunInfo.LoadStarted,
// LoadEnded), in a summary made while the load ran, as Summarize does from a
// run file that holds it: Duration then covers the whole load, the time
// before its first request and after its last included (a ramp from 0
// virtual users, a last stage of 0), and the request rates follow. A zero
// start, or a sliced run, keeps the span of the results.
func (s *Summary) SpanLoad(start, end time.Time) {
	s.Info.LoadStarted, s.Info.LoadEnded = start, end
	d := end.Sub(start)
	if start.IsZero() || s.Sliced || s.Overall == nil || d <= s.Duration {
		return
	}
	s.Duration = d
	for _, e := range append([]*EndpointSummary{s.Overall}, s.Endpoints...) {
		e.TPS = float64(e.Requests) / d.Seconds()
	}
}

// Endpoint returns the summary of the named endpoint, or nil when the run
// has none.
func (s *Summary) Endpoint(name string) *EndpointSummary {
	for _, e := range s.Endpoints {
		if e.Endpoint == name {
			return e
		}
	}
	return nil
}

// EndpointSummary holds the figures of one endpoint (or of the whole run).
// Request counts, rates and latencies come from the load phase; SQL figures
// from the explain phase when there was one.
type EndpointSummary struct {
	// Endpoint is the method and path template, e.g. "GET /orders/{id}"; ""
	// for the whole run.
	Endpoint string
	// Requests counts load-phase results.
	Requests int64
	// Failed counts failed load-phase results (snapshots.Result.Failed).
	Failed int64
	// ExplainRequests and ExplainFailed count explain-phase results.
	ExplainRequests, ExplainFailed int64
	// SuccessRate is the percentage of load-phase requests that did not
	// fail; zero when there were none.
	SuccessRate float64
	// TPS is load-phase requests per second over the run's load span.
	TPS float64
	// Latency runs from each request's intended start (snapshots.Result.Latency),
	// so a stalled target cannot hide its slowness. It is over the answered
	// requests alone (those that did not fail, snapshots.Result.Failed):
	// Latency.Count counts them, and is zero, with no figure, when every
	// request failed.
	Latency LatencyStats
	// ServiceTime runs from the actual send (snapshots.Result.ServiceTime),
	// over the answered requests too.
	ServiceTime LatencyStats
	// Histogram bins the latency of every answered load-phase request
	// (Latency's values), for charts.
	Histogram Histogram
	// Series is the load's latency over time, for charts: one point per
	// interleaving slice when the run was sliced (Summary.Sliced), else one
	// per window of time (1 s, doubled as often as needed to keep at most
	// 120 windows).
	Series []SeriesPoint
	// Statuses counts load-phase responses by class: "2xx", "3xx", "4xx",
	// "5xx", "1xx" and "none" (no response).
	Statuses map[string]int64
	// Failures lists why load-phase requests failed, most frequent first (at
	// most 10 kinds).
	Failures []FailureCount
	// SQL is the preferred SQL view: ExplainSQL when the run had an explain
	// phase for this endpoint, else EstimatedSQL when LoadSQL did not count
	// every request, else LoadSQL.
	SQL SQLStats
	// EstimatedSQL covers every load-phase request when the counter kept
	// the statements it could not attribute (snapshots.RunInfo.UnattributedSQL):
	// exact (Source SQLSourceLoad) when none ran while the endpoint's
	// requests were in flight, else estimated (SQLSourceLoadEstimate, no
	// fingerprints). SQL prefers it to a LoadSQL that counted only some
	// requests.
	EstimatedSQL SQLStats
	// LoadSQL and ExplainSQL are the SQL figures of each phase; their
	// Requests is zero when the phase counted none.
	LoadSQL, ExplainSQL SQLStats
	// Upstream are the calls to mocked services per request: from the
	// explain phase when there was one, else the load's (UpstreamStats).
	Upstream UpstreamStats

	// sample is a bounded uniform sample of the load-phase latencies, for
	// the bootstrap of Compare.
	sample *sample
	// loadAll is EstimatedSQL before statements were shared out.
	loadAll SQLStats
	// spans are the run's load results, for ShareUnattributedSQL; kept by
	// the overall summary only.
	spans []snapshots.SQLSpan
}

// DBTime returns the SQL figures that best describe database time under
// load: LoadSQL when it counted requests, else ExplainSQL.
func (e *EndpointSummary) DBTime() *SQLStats {
	if e.LoadSQL.Requests > 0 {
		return &e.LoadSQL
	}
	return &e.ExplainSQL
}

// FailureRate is the percentage of load-phase requests that failed.
func (e *EndpointSummary) FailureRate() float64 {
	if e.Requests == 0 {
		return 0
	}
	return 100 * float64(e.Failed) / float64(e.Requests)
}

// LatencyStats summarises a latency distribution. Values are milliseconds;
// all zero when Count is zero. Percentiles are nearest-rank: exact while the
// endpoint's sample holds every value, else from an HdrHistogram with three
// significant digits (at most 0.1% high).
type LatencyStats struct {
	// Count is the number of values.
	Count int64
	Avg   float64
	Min   float64
	P50   float64
	P90   float64
	P95   float64
	P99   float64
	Max   float64
}

// SQLStats describes the SQL statements attributed to an endpoint's requests.
type SQLStats struct {
	// Source is SQLSourceExplain or SQLSourceLoad; "" when no request had its
	// statements counted.
	Source string
	// Requests counts the requests the figures come from (SQLCounted).
	Requests int64
	// Statements counts statements in total (those that completed without
	// error).
	Statements int64
	// PerRequest is statements per request.
	PerRequest float64
	// Errors counts the statements the server rejected, and ErrorsPerRequest
	// is their number per request; they are in no other figure.
	Errors           int64
	ErrorsPerRequest float64
	// DBTimePerRequest is database time per request, in milliseconds.
	DBTimePerRequest float64
	// Fingerprints break the figures down, most statements first.
	Fingerprints []FingerprintStats
	// Method is SQLMethodExact or SQLMethodEstimated for figures over every
	// load request (EndpointSummary.EstimatedSQL); "" for the others.
	Method string
	// Margin is the half-width of PerRequest's 95% interval when Method is
	// SQLMethodEstimated; zero otherwise.
	Margin float64
}

// Estimated reports whether PerRequest is an estimate.
func (s *SQLStats) Estimated() bool { return s.Method == SQLMethodEstimated }

// Counted reports whether any request had its statements counted.
func (s *SQLStats) Counted() bool { return s.Requests > 0 }

// Fingerprint returns the figures of one fingerprint, or nil.
func (s *SQLStats) Fingerprint(fp string) *FingerprintStats {
	for i := range s.Fingerprints {
		if s.Fingerprints[i].Fingerprint == fp {
			return &s.Fingerprints[i]
		}
	}
	return nil
}

// FingerprintStats describes one statement fingerprint within an SQLStats.
type FingerprintStats struct {
	// Fingerprint is the folded statement text.
	Fingerprint string
	// Count is the number of statements in total (those that completed
	// without error).
	Count int64
	// Errors is the number the server rejected, and ErrorsPerRequest their
	// number per request (over all counted requests); they are in no other
	// figure.
	Errors           int64
	ErrorsPerRequest float64
	// PerRequest is statements per request (over all counted requests).
	PerRequest float64
	// MinPerRequest and MaxPerRequest bound the count in one request (zero
	// when some request had none).
	MinPerRequest, MaxPerRequest int
	// DBTimePerRequest is database time per request in milliseconds.
	DBTimePerRequest float64
	// PerCall is the mean database time of one statement, in milliseconds.
	PerCall float64
}

// FailureCount is one reason requests failed and how often.
type FailureCount struct {
	// Status is the response status; zero for a transport error.
	Status int
	// Error is the transport error (shortened); empty when a response came.
	Error string
	// GRPC names the grpc-status ("UNAVAILABLE") a gRPC call ended with
	// instead of the recorded one; empty for any other failure.
	GRPC string
	// Count is the number of load-phase requests that failed this way.
	Count int64
}

// String describes the failure, e.g. "503 Service Unavailable", "gRPC
// UNAVAILABLE" or "dial tcp: connection refused".
func (f FailureCount) String() string {
	if f.Error != "" {
		return f.Error
	}
	if f.GRPC != "" {
		return "gRPC " + f.GRPC
	}
	if t := http.StatusText(f.Status); t != "" {
		return fmt.Sprintf("%d %s", f.Status, t)
	}
	return fmt.Sprintf("status %d", f.Status)
}

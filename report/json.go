package report

import (
	"encoding/json"
	"io"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// JSONSchemaVersion is the version of the JSON documents of this package
// (RunDocument, ComparisonDocument, InventoryDocument): each carries it as
// schema_version, and docs/schema/ holds their JSON Schemas. Adding a key
// keeps it; renaming or removing one, or changing its type, raises it.
const JSONSchemaVersion = 1

// RunDocument is the JSON of a run report (replay run --format json). Keys
// may be added, never renamed: checks outside the repository read them.
type RunDocument struct {
	// SchemaVersion is the version of the document's JSON Schema
	// (docs/schema/run.json), JSONSchemaVersion.
	SchemaVersion int  `json:"schema_version"`
	Passed        bool `json:"passed"`
	// Result is "passed", "failed" or "interrupted" (never passed).
	Result string `json:"result"`
	// Interrupted: the run was stopped before its load ended; its figures
	// are of the requests completed until then.
	Interrupted bool    `json:"interrupted"`
	Requests    int64   `json:"requests"`
	Failed      int64   `json:"failed"`
	SuccessRate float64 `json:"success_rate"`
	TPS         float64 `json:"tps"`
	DurationS   float64 `json:"duration_s"`
	LatencyDocument
	SQLPerRequest float64            `json:"sql_per_request"`
	SQLSource     string             `json:"sql_source"`
	SQLMethod     string             `json:"sql_method,omitempty"` // exact, estimated or unknown: set for load-phase figures over every request
	SQLMargin     float64            `json:"sql_margin,omitempty"` // ± of an estimated sql_per_request (95%)
	MockMisses    int64              `json:"mock_misses"`
	Run           RunInfoDocument    `json:"run"`
	Goals         []GoalDocument     `json:"goals"`
	Endpoints     []EndpointDocument `json:"endpoints"`
	Artifacts     []ArtifactDocument `json:"artifacts"`
	// Wiring lists the run's wiring faults (analyzer.RunFaults); absent
	// when there are none.
	Wiring []FaultDocument `json:"wiring,omitempty"`
	// Undecided says why the run could not be decided
	// (RunReport.Undecided: wiring faults, goals not evaluated; replay
	// exits 1 with it); absent when it could.
	Undecided string `json:"undecided,omitempty"`
	// MaxFailed is the largest share of failed requests that passes, a
	// fraction; absent when not checked.
	MaxFailed *float64 `json:"max_failed,omitempty"`
	// FailedWhy says why the run failed on its failed requests; absent
	// when it did not.
	FailedWhy string `json:"failed_why,omitempty"`
	// FailureCauses are the main causes of the failed requests, most
	// requests first, then the mock's misses and the database's errors;
	// absent when no request failed.
	FailureCauses []FailureCauseDocument `json:"failure_causes,omitempty"`
	// Responses totals the comparison of the build's answers with the
	// recording (--check-responses; each endpoint's is in its responses,
	// the recording as baseline); absent when not checked.
	Responses *CheckTotalsDocument `json:"responses,omitempty"`
	// CPU is the build's CPU time per request over the load (its process
	// tree, every endpoint); measured false, with a reason, for a build
	// replay did not start.
	CPU *CPURunDocument `json:"cpu"`
}

// LatencyDocument holds latency figures in milliseconds: from the intended
// start, and from the actual send ("_from_send"). They are over the
// answered requests alone (Answered: those that did not fail, as k6's
// expected_response:true); every figure is null when none was answered.
type LatencyDocument struct {
	Answered      int64    `json:"answered"`
	AvgMs         *float64 `json:"avg_ms"`
	P50Ms         *float64 `json:"p50_ms"`
	P90Ms         *float64 `json:"p90_ms"`
	P95Ms         *float64 `json:"p95_ms"`
	P99Ms         *float64 `json:"p99_ms"`
	MaxMs         *float64 `json:"max_ms"`
	AvgMsFromSend *float64 `json:"avg_ms_from_send"`
	P50MsFromSend *float64 `json:"p50_ms_from_send"`
	P95MsFromSend *float64 `json:"p95_ms_from_send"`
	P99MsFromSend *float64 `json:"p99_ms_from_send"`
}

// RunInfoDocument describes a run.
type RunInfoDocument struct {
	Name       string            `json:"name"`
	Snapshot   string            `json:"snapshot"`
	Target     string            `json:"target"`
	Started    *time.Time        `json:"started,omitempty"`
	Ended      *time.Time        `json:"ended,omitempty"`
	Settings   map[string]string `json:"settings"`
	Statements int64             `json:"statements"`
	MockMisses int64             `json:"mock_misses"`
	// Wiring is what the run's mock and SQL counter saw of the builds
	// (snapshots.Wiring); absent in run files that did not record it.
	Wiring *snapshots.Wiring `json:"wiring,omitempty"`
	// LoadSQL is what the SQL counter saw during the load and how it
	// compares with the explain phase; absent when not measured.
	LoadSQL *LoadSQLDocument `json:"load_sql,omitempty"`
	// Truncated counts, per endpoint, the recorded requests replayed with a
	// body cut at recording (--allow-truncated); absent when none was.
	Truncated map[string]int64 `json:"truncated,omitempty"`
	// Notes say what was cut at recording, requests and the mock's
	// responses, one sentence each; absent when nothing was.
	Notes []string `json:"notes,omitempty"`
}

// LoadSQLDocument is the SQL counter's view of a run's load, and the
// self-check of the explain phase against it.
type LoadSQLDocument struct {
	Statements        int64   `json:"statements"`
	Requests          int64   `json:"requests"`
	PerRequest        float64 `json:"per_request"`
	DBMsPerRequest    float64 `json:"db_ms_per_request"`
	ExplainPerRequest float64 `json:"explain_per_request,omitempty"`
	// Agree is the self-check: explain and load within 10%; absent when
	// there was no explain phase to check.
	Agree *bool `json:"agree,omitempty"`
}

// GoalDocument is one goal's outcome.
type GoalDocument struct {
	Goal     string  `json:"goal"`
	Endpoint string  `json:"endpoint,omitempty"`
	Metric   string  `json:"metric"`
	Passed   bool    `json:"passed"`
	Expected string  `json:"expected"`
	Actual   float64 `json:"actual"`
	Unit     string  `json:"unit"`
	Reason   string  `json:"reason,omitempty"`
	// NotEvaluated says the goal was not evaluated (Reason says why): it
	// neither passed nor was missed; absent when it was evaluated.
	NotEvaluated bool `json:"not_evaluated,omitempty"`
}

// EndpointDocument is one endpoint of a run report.
type EndpointDocument struct {
	Endpoint        string  `json:"endpoint"`
	Requests        int64   `json:"requests"`
	Failed          int64   `json:"failed"`
	SuccessRate     float64 `json:"success_rate"`
	TPS             float64 `json:"tps"`
	ExplainRequests int64   `json:"explain_requests"`
	LatencyDocument
	SQLPerRequest     float64               `json:"sql_per_request"`
	SQLSource         string                `json:"sql_source"`
	SQLMethod         string                `json:"sql_method,omitempty"`
	SQLMargin         float64               `json:"sql_margin,omitempty"`
	DBMsPerRequest    float64               `json:"db_ms_per_request"`
	Statuses          map[string]int64      `json:"statuses"`
	Failures          []FailureDocument     `json:"failures"`
	SQL               []FingerprintDocument `json:"sql"`
	LoadSQLPerRequest float64               `json:"load_sql_per_request"`
	// Responses compares the endpoint's answers with the recording
	// (--check-responses); absent when not checked.
	Responses *ResponsesDocument `json:"responses,omitempty"`
	*UpstreamRunFields
}

// FailureDocument is one reason requests failed.
type FailureDocument struct {
	Reason string `json:"reason"`
	Status int    `json:"status"`
	Count  int64  `json:"count"`
}

// FingerprintDocument is one statement fingerprint of an endpoint.
type FingerprintDocument struct {
	Fingerprint    string  `json:"fingerprint"`
	PerRequest     float64 `json:"per_request"`
	MinPerRequest  int     `json:"min_per_request"`
	MaxPerRequest  int     `json:"max_per_request"`
	PerCallMs      float64 `json:"per_call_ms"`
	DBMsPerRequest float64 `json:"db_ms_per_request"`
	// ErrorsPerRequest counts the statements the server rejected, per
	// request; they are in no other figure.
	ErrorsPerRequest float64 `json:"errors_per_request,omitempty"`
}

// ArtifactDocument is a file the report points at.
type ArtifactDocument struct {
	Name string `json:"name"`
	Path string `json:"path"`
}

// NewRunDocument builds the JSON document of a run report.
func NewRunDocument(r *RunReport) RunDocument {
	s := r.Summary
	o := s.Overall
	d := RunDocument{
		SchemaVersion:   JSONSchemaVersion,
		Passed:          r.Passed(),
		Result:          r.Outcome(),
		Interrupted:     r.Interrupted(),
		Requests:        o.Requests,
		Failed:          o.Failed,
		SuccessRate:     round(o.SuccessRate, 3),
		TPS:             round(o.TPS, 3),
		DurationS:       round(s.Duration.Seconds(), 3),
		LatencyDocument: latencyDoc(o),
		SQLPerRequest:   round(o.SQL.PerRequest, 3),
		SQLSource:       o.SQL.Source,
		SQLMethod:       o.SQL.Method,
		SQLMargin:       round(o.SQL.Margin, 3),
		MockMisses:      s.Info.MockMisses,
		Run:             runInfoDoc(s),
		Goals:           goalDocs(r.Goals),
		Endpoints:       []EndpointDocument{},
		Artifacts:       artifactDocs(r.Artifacts),
		Wiring:          faultDocs(r.Faults()),
		Undecided:       r.Undecided(),
		CPU:             cpuRunDoc(s),
	}
	for _, e := range s.Endpoints {
		ed := endpointDoc(e)
		ed.Responses = checkedDoc(r.Responses, e.Endpoint)
		d.Endpoints = append(d.Endpoints, ed)
	}
	d.Responses = checkTotalsDoc(r.Responses)
	if f := r.Failures; f != nil {
		m := f.MaxFailed
		d.MaxFailed, d.FailedWhy, d.FailureCauses = &m, f.Why(), failureCauseDocs(r)
	}
	return d
}

// RunJSON writes a run report as JSON (RunDocument), indented.
func RunJSON(w io.Writer, r *RunReport) error { return writeJSON(w, NewRunDocument(r)) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func latencyDoc(e *analyzer.EndpointSummary) LatencyDocument {
	l, s := e.Latency, e.ServiceTime
	if l.Count == 0 {
		return LatencyDocument{}
	}
	ms := func(v float64) *float64 { r := round(v, 3); return &r }
	return LatencyDocument{Answered: l.Count,
		AvgMs: ms(l.Avg), P50Ms: ms(l.P50), P90Ms: ms(l.P90), P95Ms: ms(l.P95), P99Ms: ms(l.P99), MaxMs: ms(l.Max),
		AvgMsFromSend: ms(s.Avg), P50MsFromSend: ms(s.P50), P95MsFromSend: ms(s.P95), P99MsFromSend: ms(s.P99),
	}
}

func runInfoDoc(s *analyzer.Summary) RunInfoDocument {
	i := s.Info
	d := RunInfoDocument{Name: i.Name, Snapshot: i.Snapshot, Target: i.Target, Settings: i.Settings, Statements: i.Statements, MockMisses: i.MockMisses, Wiring: i.Wiring,
		Truncated: i.Truncated, Notes: append(analyzer.TruncatedNotes(i, ""), analyzer.StateNotes(i, "")...)}
	if d.Settings == nil {
		d.Settings = map[string]string{}
	}
	if c := s.LoadCounter; c.Counted() {
		d.LoadSQL = &LoadSQLDocument{Statements: c.Statements, Requests: c.Requests, PerRequest: round(c.PerRequest, 3), DBMsPerRequest: round(c.DBTimePerRequest, 3)}
		if ck := s.SQLCheck; ck != nil {
			d.LoadSQL.ExplainPerRequest = round(ck.ExplainPerRequest, 3)
			d.LoadSQL.Agree = &ck.Agree
		}
	}
	if !i.Started.IsZero() {
		t := i.Started.UTC()
		d.Started = &t
	}
	if !i.Ended.IsZero() {
		t := i.Ended.UTC()
		d.Ended = &t
	}
	return d
}

func goalDocs(goals []analyzer.GoalResult) []GoalDocument {
	out := []GoalDocument{}
	for _, g := range goals {
		out = append(out, GoalDocument{Goal: g.Goal, Endpoint: g.Endpoint, Metric: g.Metric, Passed: g.Passed,
			Expected: g.Expected, Actual: round(g.Actual, 3), Unit: g.Unit, Reason: g.Reason, NotEvaluated: g.NotEvaluated})
	}
	return out
}

func artifactDocs(as []Artifact) []ArtifactDocument {
	out := []ArtifactDocument{}
	for _, a := range as {
		out = append(out, ArtifactDocument(a))
	}
	return out
}

func endpointDoc(e *analyzer.EndpointSummary) EndpointDocument {
	d := EndpointDocument{
		Endpoint:          e.Endpoint,
		Requests:          e.Requests,
		Failed:            e.Failed,
		SuccessRate:       round(e.SuccessRate, 3),
		TPS:               round(e.TPS, 3),
		ExplainRequests:   e.ExplainRequests,
		LatencyDocument:   latencyDoc(e),
		SQLPerRequest:     round(e.SQL.PerRequest, 3),
		SQLSource:         e.SQL.Source,
		SQLMethod:         e.SQL.Method,
		SQLMargin:         round(e.SQL.Margin, 3),
		DBMsPerRequest:    round(e.DBTime().DBTimePerRequest, 3),
		Statuses:          e.Statuses,
		Failures:          []FailureDocument{},
		SQL:               []FingerprintDocument{},
		LoadSQLPerRequest: round(e.LoadSQL.PerRequest, 3),
		UpstreamRunFields: upstreamRunDoc(e),
	}
	if d.Statuses == nil {
		d.Statuses = map[string]int64{}
	}
	for _, f := range e.Failures {
		d.Failures = append(d.Failures, FailureDocument{Reason: f.String(), Status: f.Status, Count: f.Count})
	}
	db := e.DBTime()
	for _, f := range e.SQL.Fingerprints {
		fd := FingerprintDocument{Fingerprint: f.Fingerprint, PerRequest: round(f.PerRequest, 3),
			MinPerRequest: f.MinPerRequest, MaxPerRequest: f.MaxPerRequest, PerCallMs: round(f.PerCall, 3), DBMsPerRequest: round(f.DBTimePerRequest, 3),
			ErrorsPerRequest: round(f.ErrorsPerRequest, 3)}
		if t := db.Fingerprint(f.Fingerprint); t != nil {
			fd.PerCallMs, fd.DBMsPerRequest = round(t.PerCall, 3), round(t.DBTimePerRequest, 3)
		}
		d.SQL = append(d.SQL, fd)
	}
	return d
}

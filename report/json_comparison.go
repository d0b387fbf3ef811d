package report

import (
	"io"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/analyzer/respdiff"
)

// ComparisonDocument is the JSON of a comparison (replay compare --format
// json). Keys may be added, never renamed.
type ComparisonDocument struct {
	// SchemaVersion is the version of the document's JSON Schema
	// (docs/schema/comparison.json), JSONSchemaVersion.
	SchemaVersion int              `json:"schema_version"`
	Verdict       analyzer.Verdict `json:"verdict"`
	Passed        bool             `json:"passed"`
	Outcome       string           `json:"outcome"`
	// Result is "passed", "failed" or "interrupted" (either run stopped
	// before its load ended: no verdict, never passed).
	Result      string                       `json:"result"`
	Interrupted bool                         `json:"interrupted"`
	Counts      map[analyzer.Verdict]int     `json:"counts"`
	Endpoints   []EndpointComparisonDocument `json:"endpoints"`
	Goals       []GoalDocument               `json:"goals"`
	Notes       []string                     `json:"notes"`
	Next        []string                     `json:"next"`
	MockMisses  MockMissesDocument           `json:"mock_misses"`
	Method      string                       `json:"method"`
	SlicePairs  int                          `json:"slice_pairs"`
	Settings    ComparisonSettingsDocument   `json:"settings"`
	Baseline    RunInfoDocument              `json:"baseline_run"`
	Candidate   RunInfoDocument              `json:"candidate_run"`
	Artifacts   []ArtifactDocument           `json:"artifacts"`
	// Load describes the load the verdict rests on, e.g. "open model,
	// 212/s (fair load: 50% of the baseline's 424/s under 4 VUs in warmup),
	// 20s per side".
	Load string `json:"load"`
	// SetAside lists the slice pairs left out of the p95 and p99 changes
	// (their figures and intervals; basis kept-pairs): a
	// burst of load on the machine made one of their slices far slower than
	// its run's others (analyzer.Comparison.SetAside); absent when none.
	SetAside []SetAsideDocument `json:"set_aside,omitempty"`
	// RunUntil, for a comparison that ran until it knew (--max-duration),
	// says how long it ran and why it stopped; absent otherwise.
	RunUntil *RunUntilDocument `json:"run_until,omitempty"`
	// Wiring lists the comparison's wiring faults (analyzer.Comparison.Faults);
	// absent when there are none. With any, the verdict is inconclusive.
	Wiring []FaultDocument `json:"wiring,omitempty"`
	// Undecided says why the comparison could not decide the gate
	// (ComparisonReport.Undecided: wiring faults, goals not evaluated, no
	// endpoint judged; replay exits 1 with it); absent when it could.
	Undecided string `json:"undecided,omitempty"`
	// CPU compares the builds' CPU time per request, whole run (see
	// CPUComparisonDocument); each endpoint repeats it, scope "build".
	CPU *CPUComparisonDocument `json:"cpu"`
	// LongerRun, when most endpoints were inconclusive, estimates how long
	// a run would likely settle them; absent otherwise.
	LongerRun *LongerRunDocument `json:"longer_run,omitempty"`
}

// MockMissesDocument counts the mock's misses on each side.
type MockMissesDocument struct {
	Baseline  int64 `json:"baseline"`
	Candidate int64 `json:"candidate"`
}

// ComparisonSettingsDocument records the statistical settings used.
type ComparisonSettingsDocument struct {
	Confidence            float64 `json:"confidence"`
	Resamples             int     `json:"resamples"`
	Seed                  uint64  `json:"seed"`
	MinSamples            int     `json:"min_samples"`
	MinSamplesP99         int     `json:"min_samples_p99"`
	MinChangeMs           float64 `json:"min_change_ms"`
	MinChangeP99Ms        float64 `json:"min_change_p99_ms"`
	MinRelative           float64 `json:"min_relative"`
	MinRelativeP99        float64 `json:"min_relative_p99"`
	MinRelativeSequential float64 `json:"min_relative_sequential"`
	MinCPURelative        float64 `json:"min_cpu_relative"`
	MinSQLIncrease        float64 `json:"min_sql_increase"`
	MinFailureIncrease    float64 `json:"min_failure_increase_pp"`
	// FailOnInconclusive: any inconclusive endpoint fails the gate
	// (--fail-on inconclusive); absent when only regressions do.
	FailOnInconclusive bool `json:"fail_on_inconclusive,omitempty"`
	// Responses are the rules of the comparison of answers (--ignore,
	// --unordered, --accept-diff…); absent when none was given.
	Responses *respdiff.Rules `json:"responses,omitempty"`
}

// EndpointComparisonDocument is one endpoint of a comparison.
type EndpointComparisonDocument struct {
	Endpoint       string              `json:"endpoint"`
	Baseline       StatsDocument       `json:"baseline"`
	Candidate      StatsDocument       `json:"candidate"`
	Verdict        analyzer.Verdict    `json:"verdict"`
	Cause          string              `json:"cause"`
	Explanation    string              `json:"explanation"`
	Fingerprint    string              `json:"fingerprint,omitempty"`
	P95            ChangeDocument      `json:"p95"`
	P99            ChangeDocument      `json:"p99"`
	SQLVerdict     analyzer.Verdict    `json:"sql_verdict"`
	SQLExact       bool                `json:"sql_exact"`
	FailureVerdict analyzer.Verdict    `json:"failure_verdict"`
	SQL            []SQLChangeDocument `json:"sql"`
	// MinDetectableChange is the smallest p95 rise this run could have
	// reported for the endpoint (analyzer.Change.MinDetectable); absent when
	// the latency was not judged.
	MinDetectableChange *DetectableDocument `json:"min_detectable_change,omitempty"`
	// Responses compares the builds' answers; absent when either run kept
	// none.
	Responses *ResponsesDocument `json:"responses,omitempty"`
	*UpstreamComparisonFields
	// CPU is the comparison's CPU time per request (ComparisonDocument.CPU),
	// the build's over every endpoint (scope "build"): a process tree's
	// CPU time is not told apart per endpoint.
	CPU *CPUComparisonDocument `json:"cpu"`
}

// StatsDocument is one side's figures for an endpoint, over all its
// requests: when slice pairs were set aside its p95_ms and p99_ms differ
// from the change's (ChangeDocument, basis kept-pairs), which the verdict
// rests on.
type StatsDocument struct {
	Requests        int64   `json:"requests"`
	Failed          int64   `json:"failed"`
	SuccessRate     float64 `json:"success_rate"`
	TPS             float64 `json:"tps"`
	ExplainRequests int64   `json:"explain_requests"`
	LatencyDocument
	SQLPerRequest  float64 `json:"sql_per_request"`
	SQLSource      string  `json:"sql_source"`
	SQLMethod      string  `json:"sql_method,omitempty"`
	SQLMargin      float64 `json:"sql_margin,omitempty"`
	DBMsPerRequest float64 `json:"db_ms_per_request"`
	*UpstreamStatsFields
}

// SQLChangeDocument compares one fingerprint.
type SQLChangeDocument struct {
	Fingerprint             string  `json:"fingerprint"`
	BaselinePerRequest      float64 `json:"baseline_per_request"`
	CandidatePerRequest     float64 `json:"candidate_per_request"`
	BaselinePerCallMs       float64 `json:"baseline_per_call_ms"`
	CandidatePerCallMs      float64 `json:"candidate_per_call_ms"`
	BaselineDBMsPerRequest  float64 `json:"baseline_db_ms_per_request"`
	CandidateDBMsPerRequest float64 `json:"candidate_db_ms_per_request"`
	// The statements per request the server rejected; in no other figure.
	BaselineErrorsPerRequest  float64 `json:"baseline_errors_per_request,omitempty"`
	CandidateErrorsPerRequest float64 `json:"candidate_errors_per_request,omitempty"`
}

// NewComparisonDocument builds the JSON document of a comparison.
func NewComparisonDocument(r *ComparisonReport) ComparisonDocument {
	c := r.Comparison
	o := c.Options
	d := ComparisonDocument{
		SchemaVersion: JSONSchemaVersion,
		Verdict:       c.Verdict,
		Passed:        r.Passed(),
		Outcome:       trimEmoji(comparisonOutcome(r, plain)),
		Result:        r.Outcome(),
		Interrupted:   r.Interrupted(),
		Counts:        map[analyzer.Verdict]int{},
		Endpoints:     []EndpointComparisonDocument{},
		Goals:         goalDocs(r.Goals),
		Notes:         append([]string{}, c.Notes...),
		Next:          comparisonNext(r, plain),
		MockMisses:    MockMissesDocument{Baseline: c.MockMisses[0], Candidate: c.MockMisses[1]},
		Method:        c.Method,
		SlicePairs:    c.SlicePairs,
		Settings: ComparisonSettingsDocument{
			Confidence: o.Confidence, Resamples: o.Resamples, Seed: o.Seed, MinSamples: o.MinSamples, MinSamplesP99: o.MinSamplesP99,
			MinChangeMs: durMs(o.MinChange), MinChangeP99Ms: durMs(o.MinChangeP99), MinRelative: o.MinRelative, MinRelativeP99: o.MinRelativeP99,
			MinRelativeSequential: o.MinRelativeSequential, MinCPURelative: o.MinCPURelative, MinSQLIncrease: o.MinSQLIncrease, MinFailureIncrease: o.MinFailureIncrease,
			FailOnInconclusive: o.FailOnInconclusive,
		},
		Baseline:  runInfoDoc(c.Baseline),
		Candidate: runInfoDoc(c.Candidate),
		Artifacts: artifactDocs(r.Artifacts),
		Wiring:    faultDocs(c.Faults),
		Undecided: r.Undecided(),
		Load:      loadText(c.Baseline.Info.Settings),
		RunUntil:  runUntil(c.Baseline.Info.Settings),
		CPU:       cpuComparisonDoc(c),
		LongerRun: longerRunDoc(c),
	}
	if rules := o.Responses; !rules.IsZero() {
		d.Settings.Responses = &rules
	}
	for _, a := range c.SetAside {
		d.SetAside = append(d.SetAside, SetAsideDocument{Pair: a.Pair, Side: a.Side, Slice: a.Slice, Factor: a.Factor})
	}
	for k, v := range c.Counts {
		d.Counts[k] = v
	}
	for _, e := range c.Endpoints {
		ed := EndpointComparisonDocument{
			Endpoint: e.Endpoint, Baseline: statsDoc(e.Baseline), Candidate: statsDoc(e.Candidate),
			Verdict: e.Verdict, Cause: e.Cause, Explanation: e.Explanation, Fingerprint: e.Fingerprint,
			P95: changeDoc(e.P95), P99: changeDoc(e.P99), SQLVerdict: e.SQLVerdict, SQLExact: e.SQLExact, FailureVerdict: e.FailureVerdict,
			SQL:                 []SQLChangeDocument{},
			MinDetectableChange: detectableDoc(e.P95), UpstreamComparisonFields: upstreamComparisonDoc(e),
			CPU: d.CPU,
		}
		for _, f := range e.SQL {
			ed.SQL = append(ed.SQL, SQLChangeDocument{
				Fingerprint: f.Fingerprint, BaselinePerRequest: round(f.BaselinePerRequest, 3), CandidatePerRequest: round(f.CandidatePerRequest, 3),
				BaselinePerCallMs: round(f.BaselinePerCall, 3), CandidatePerCallMs: round(f.CandidatePerCall, 3),
				BaselineDBMsPerRequest: round(f.BaselineDBTimePerRequest, 3), CandidateDBMsPerRequest: round(f.CandidateDBTimePerRequest, 3),
				BaselineErrorsPerRequest: round(f.BaselineErrorsPerRequest, 3), CandidateErrorsPerRequest: round(f.CandidateErrorsPerRequest, 3),
			})
		}
		ed.Responses = responsesDoc(e.Responses)
		d.Endpoints = append(d.Endpoints, ed)
	}
	return d
}

// ComparisonJSON writes a comparison as JSON (ComparisonDocument), indented.
func ComparisonJSON(w io.Writer, r *ComparisonReport) error {
	return writeJSON(w, NewComparisonDocument(r))
}

func statsDoc(e *analyzer.EndpointSummary) StatsDocument {
	return StatsDocument{
		Requests: e.Requests, Failed: e.Failed, SuccessRate: round(e.SuccessRate, 3), TPS: round(e.TPS, 3), ExplainRequests: e.ExplainRequests,
		LatencyDocument: latencyDoc(e), SQLPerRequest: round(e.SQL.PerRequest, 3), SQLSource: e.SQL.Source,
		SQLMethod: e.SQL.Method, SQLMargin: round(e.SQL.Margin, 3),
		DBMsPerRequest: round(e.DBTime().DBTimePerRequest, 3), UpstreamStatsFields: upstreamStatsDoc(e),
	}
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

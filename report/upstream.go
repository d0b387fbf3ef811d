package report

import (
	"fmt"
	"math"

	"github.com/replaykit/replay/analyzer"
)

// maxUpstreamRows bounds the upstream endpoints a text or Markdown report
// lists per endpoint (the JSON has them all).
const maxUpstreamRows = 5

// UpstreamRunFields are the calls to mocked services of an endpoint of a
// run report (analyzer.UpstreamStats); absent when the run had no mock.
type UpstreamRunFields struct {
	UpstreamPerRequest   float64            `json:"upstream_per_request"`
	UpstreamMsPerRequest float64            `json:"upstream_ms_per_request"`
	UpstreamSource       string             `json:"upstream_source"`
	Upstream             []UpstreamDocument `json:"upstream"`
}

// UpstreamDocument is one endpoint of a mocked service an endpoint calls.
type UpstreamDocument struct {
	Service       string  `json:"service"`
	Endpoint      string  `json:"endpoint"`
	PerRequest    float64 `json:"per_request"`
	MinPerRequest int     `json:"min_per_request"`
	MaxPerRequest int     `json:"max_per_request"`
	MsPerRequest  float64 `json:"ms_per_request"`
	PerCallMs     float64 `json:"per_call_ms"`
	// Misses counts the calls the recording had no answer for.
	Misses int64 `json:"misses,omitempty"`
}

func upstreamRunDoc(e *analyzer.EndpointSummary) *UpstreamRunFields {
	u := &e.Upstream
	if !u.Counted() {
		return nil
	}
	d := &UpstreamRunFields{UpstreamPerRequest: round(u.PerRequest, 3), UpstreamMsPerRequest: round(u.TimePerRequest, 3),
		UpstreamSource: u.Source, Upstream: []UpstreamDocument{}}
	for _, x := range u.Endpoints {
		d.Upstream = append(d.Upstream, UpstreamDocument{Service: x.Service, Endpoint: x.Endpoint, PerRequest: round(x.PerRequest, 3),
			MinPerRequest: x.MinPerRequest, MaxPerRequest: x.MaxPerRequest, MsPerRequest: round(x.TimePerRequest, 3),
			PerCallMs: round(x.PerCall, 3), Misses: x.Misses})
	}
	return d
}

// UpstreamStatsFields are one side's calls to mocked services for an
// endpoint of a comparison; absent when the side had no mock.
type UpstreamStatsFields struct {
	UpstreamPerRequest   float64 `json:"upstream_per_request"`
	UpstreamMsPerRequest float64 `json:"upstream_ms_per_request"`
	UpstreamSource       string  `json:"upstream_source"`
}

func upstreamStatsDoc(e *analyzer.EndpointSummary) *UpstreamStatsFields {
	if u := &e.Upstream; u.Counted() {
		return &UpstreamStatsFields{UpstreamPerRequest: round(u.PerRequest, 3), UpstreamMsPerRequest: round(u.TimePerRequest, 3), UpstreamSource: u.Source}
	}
	return nil
}

// UpstreamComparisonFields compare the calls to mocked services of an
// endpoint (analyzer.EndpointComparison); absent unless both sides counted
// them.
type UpstreamComparisonFields struct {
	// UpstreamVerdict judges calls per request on their own.
	UpstreamVerdict analyzer.Verdict `json:"upstream_verdict"`
	// UpstreamExact: both sides' counts come from the explain phase.
	UpstreamExact bool `json:"upstream_exact"`
	// UpstreamCall names the upstream endpoint of an HTTP N+1 explanation.
	UpstreamCall string                   `json:"upstream_call,omitempty"`
	Upstream     []UpstreamChangeDocument `json:"upstream"`
}

// UpstreamChangeDocument compares the calls to one upstream endpoint.
type UpstreamChangeDocument struct {
	Service               string  `json:"service"`
	Endpoint              string  `json:"endpoint"`
	BaselinePerRequest    float64 `json:"baseline_per_request"`
	CandidatePerRequest   float64 `json:"candidate_per_request"`
	BaselineMsPerRequest  float64 `json:"baseline_ms_per_request"`
	CandidateMsPerRequest float64 `json:"candidate_ms_per_request"`
}

func upstreamComparisonDoc(e *analyzer.EndpointComparison) *UpstreamComparisonFields {
	if e.UpstreamVerdict == "" {
		return nil
	}
	d := &UpstreamComparisonFields{UpstreamVerdict: e.UpstreamVerdict, UpstreamExact: e.UpstreamExact, UpstreamCall: e.UpstreamCall,
		Upstream: []UpstreamChangeDocument{}}
	for _, u := range e.Upstream {
		d.Upstream = append(d.Upstream, UpstreamChangeDocument{Service: u.Service, Endpoint: u.Endpoint,
			BaselinePerRequest: round(u.BaselinePerRequest, 3), CandidatePerRequest: round(u.CandidatePerRequest, 3),
			BaselineMsPerRequest: round(u.BaselineTimePerRequest, 3), CandidateMsPerRequest: round(u.CandidateTimePerRequest, 3)})
	}
	return d
}

// writeUpstreamRunText lists the calls to mocked services per endpoint of
// a run; nothing when the run had no mock.
func writeUpstreamRunText(e *errWriter, s *analyzer.Summary) {
	t := newTable([]string{"ENDPOINT", "UPSTREAM", "CALLS/REQ", "MIN–MAX", "ms/REQ"}, 2, 3, 4)
	for _, x := range s.Endpoints {
		for i, u := range x.Upstream.Endpoints {
			if i == maxUpstreamRows {
				t.add(x.Endpoint, fmt.Sprintf("(%d more)", len(x.Upstream.Endpoints)-i), "", "", "")
				break
			}
			t.add(x.Endpoint, u.Name(), analyzer.FormatCount(u.PerRequest), fmt.Sprintf("%d–%d", u.MinPerRequest, u.MaxPerRequest), num(u.TimePerRequest))
		}
	}
	if len(t.rows) > 1 {
		e.println("")
		e.println("Upstream calls per request (mocked services)")
		t.write(e, "  ")
	}
}

// writeUpstreamText lists, per endpoint whose calls to mocked services were
// counted on both sides, the calls per request of each side; nothing when
// neither side had a mock.
func writeUpstreamText(e *errWriter, c *analyzer.Comparison) {
	t := newTable([]string{"ENDPOINT", "UPSTREAM", "CALLS/REQ", "ms/REQ"}, 2, 3)
	for _, x := range c.Endpoints {
		for i, u := range x.Upstream {
			if i == maxUpstreamRows {
				t.add(x.Endpoint, fmt.Sprintf("(%d more)", len(x.Upstream)-i), "", "")
				break
			}
			t.add(x.Endpoint, u.Name(), analyzer.FormatCount(u.BaselinePerRequest)+" → "+analyzer.FormatCount(u.CandidatePerRequest),
				num(u.BaselineTimePerRequest)+" → "+num(u.CandidateTimePerRequest))
		}
	}
	if len(t.rows) > 1 {
		e.println("")
		e.println("Upstream calls per request (mocked services)")
		t.write(e, "  ")
	}
}

// endpointUpstream is one upstream endpoint's change within an endpoint.
type endpointUpstream struct {
	endpoint string
	u        analyzer.UpstreamChange
}

// changedUpstream lists the upstream endpoints whose calls per request
// changed by at least half a call.
func changedUpstream(c *analyzer.Comparison) []endpointUpstream {
	var out []endpointUpstream
	for _, e := range c.Endpoints {
		for _, u := range e.Upstream {
			if math.Abs(u.Delta()) >= 0.5 {
				out = append(out, endpointUpstream{e.Endpoint, u})
			}
		}
	}
	return out
}

// writeUpstreamMarkdown writes a collapsed table of the upstream calls per
// request that changed; nothing when none did.
func writeUpstreamMarkdown(e *errWriter, c *analyzer.Comparison) {
	var rows [][]string
	for _, r := range changedUpstream(c) {
		rows = append(rows, []string{cell(r.endpoint), cell(backticks(r.u.Name())),
			analyzer.FormatCount(r.u.BaselinePerRequest), analyzer.FormatCount(r.u.CandidatePerRequest)})
	}
	writeDetailsTable(e, "Upstream calls per request that changed", []string{"Endpoint", "Upstream", "Baseline", "Candidate"}, rows)
}

// writeUpstreamRunMarkdown writes a collapsed table of a run's calls to
// mocked services per request; nothing when the run had no mock.
func writeUpstreamRunMarkdown(e *errWriter, s *analyzer.Summary) {
	var rows [][]string
	for _, r := range htmlUpstreamRun(s) {
		rows = append(rows, []string{cell(r["Endpoint"]), cell(backticks(r["Upstream"])), r["Cand"]})
	}
	writeDetailsTable(e, "Upstream calls per request (mocked services)", []string{"Endpoint", "Upstream", "Calls/req"}, rows)
}

// htmlUpstream is the rows of the HTML comparison's upstream table: the
// calls that changed.
func htmlUpstream(c *analyzer.Comparison) []map[string]string {
	var out []map[string]string
	for _, r := range changedUpstream(c) {
		out = append(out, map[string]string{"Endpoint": r.endpoint, "Upstream": r.u.Name(),
			"Base": analyzer.FormatCount(r.u.BaselinePerRequest), "Cand": analyzer.FormatCount(r.u.CandidatePerRequest)})
	}
	return out
}

// htmlUpstreamRun is the rows of a run's upstream table: every upstream
// endpoint of every endpoint ("Cand" the calls per request, no "Base").
func htmlUpstreamRun(s *analyzer.Summary) []map[string]string {
	var out []map[string]string
	for _, x := range s.Endpoints {
		for _, u := range x.Upstream.Endpoints {
			out = append(out, map[string]string{"Endpoint": x.Endpoint, "Upstream": u.Name(), "Cand": analyzer.FormatCount(u.PerRequest)})
		}
	}
	return out
}

// upstreamHTML is the HTML reports' table of upstream calls: of a
// comparison (the page with a Method), those that changed, baseline and
// candidate; of a run, all.
const upstreamHTML = `{{define "upstream"}}{{if .Upstream}}
<h2>Upstream calls per request{{if .Method}} that changed{{else}} (mocked services){{end}}</h2>
<table><tr><th>Endpoint</th><th>Upstream</th>{{if .Method}}<th class="n">Baseline</th><th class="n">Candidate</th>{{else}}<th class="n">Calls/req</th>{{end}}</tr>
{{range .Upstream}}<tr><td>{{.Endpoint}}</td><td><code>{{.Upstream}}</code></td>{{if .Base}}<td class="n">{{.Base}}</td>{{end}}<td class="n">{{.Cand}}</td></tr>
{{end}}</table>{{end}}{{end}}`

// upstreamAdvice is the next step for a regression caused by the calls to
// mocked services.
func upstreamAdvice(e *analyzer.EndpointComparison, q quoter) string {
	if e.Cause == analyzer.CauseUpstreamNPlusOne {
		return fmt.Sprintf("Fix the HTTP N+1 in %s: fetch what %s returns for all items in one call (a batch endpoint, or the list's own data) instead of once per item, then re-run the comparison.",
			e.Endpoint, q(e.UpstreamCall))
	}
	return fmt.Sprintf("Remove, batch or cache the extra upstream calls of %s (see the upstream calls per request), then re-run the comparison.", e.Endpoint)
}

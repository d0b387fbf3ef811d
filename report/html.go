package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/replaykit/replay/analyzer"
)

// htmlStyle is the page's only styling: no external assets.
const htmlStyle = `
body{font:14px/1.45 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em;color:#1f2328}
h1{font-size:1.4em;margin-bottom:.2em}h2{font-size:1.1em;margin-top:1.6em}
.ran{color:#59636e}
.outcome{padding:.7em 1em;border-radius:6px;font-weight:600;margin:1em 0}
.good{background:#dafbe1;border:1px solid #4ac26b}.bad{background:#ffebe9;border:1px solid #ff8182}.meh{background:#fff8c5;border:1px solid #d4a72c}
table{border-collapse:collapse;width:100%;margin:.5em 0}
th,td{padding:.35em .6em;border-bottom:1px solid #d1d9e0;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:.1em .3em;border-radius:4px}
.bar{height:.55em;border-radius:3px;margin-top:2px}.b{background:#e36209}.c{background:#0969da}
.regression{color:#cf222e;font-weight:600}.improvement{color:#1a7f37;font-weight:600}.inconclusive{color:#9a6700}.unchanged{color:#59636e}
.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
ul{padding-left:1.3em}small{color:#59636e}
svg.chart{max-width:100%;height:auto;margin:.3em 0}svg.chart text{font:11px -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,sans-serif;fill:#1f2328}
svg.chart .ctitle{font-weight:600;font-size:12px}svg.chart .tick,svg.chart .axis{fill:#59636e}svg.chart .qlabel{font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:0 20px}section.ep{border-top:1px solid #d1d9e0;margin-top:1em}section.ep h3{font-size:1em;margin:.6em 0 .2em}
pre.diff{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:.5em;overflow:auto}.del{color:#cf222e}.add{color:#1a7f37}
`

const runHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>replay run: {{plain .Outcome}}</title><style>{{.Style}}</style></head><body>
<h1>replay run</h1>
<p class="ran">{{.Ran}}</p>
<div class="outcome {{.Class}}">{{code .Outcome}}</div>
{{if .Goals}}<h2>Goals</h2>
<table><tr><th>Goal</th><th>Expected</th><th class="n">Actual</th><th>Result</th></tr>
{{range .Goals}}<tr><td><code>{{.Goal}}</code></td><td>{{.Expected}}</td><td class="n">{{.Actual}}</td><td class="{{.Class}}">{{code .Result}}</td></tr>
{{end}}</table>{{end}}
<h2>Endpoints</h2>
<table><tr><th>Endpoint</th><th class="n">Requests</th><th class="n">Failed</th><th class="n">Avg ms</th><th class="n">p50 ms</th><th class="n">p95 ms</th><th class="n">p99 ms</th><th class="n">Max ms</th><th class="n">SQL/req</th></tr>
{{range .Endpoints}}<tr><td>{{.Name}}<div class="bar c" style="width:{{.Bar}}%"></div></td><td class="n">{{.Requests}}</td><td class="n">{{.Failed}}</td><td class="n">{{.Avg}}</td><td class="n">{{.P50}}</td><td class="n">{{.P95}}</td><td class="n">{{.P99}}</td><td class="n">{{.Max}}</td><td class="n">{{.SQL}}</td></tr>
{{end}}</table>{{template "charts" .}}{{template "upstream" .}}{{template "responses" .}}
{{range .Notes}}<small>{{code .}}</small><br>{{end}}
{{template "tail" .}}
</body></html>`

const comparisonHTML = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>replay compare: {{plain .Outcome}}</title><style>{{.Style}}</style></head><body>
<h1>replay compare</h1>
<p class="ran">{{.Ran}}</p>
<div class="outcome {{.Class}}">{{code .Outcome}}</div>
<h2>Endpoints</h2>
<table><tr><th>Endpoint</th><th class="n">Requests</th><th class="n">p95 ms</th><th class="n">p99 ms</th><th class="n">p95 change</th><th class="n">SQL/req</th><th>Verdict</th></tr>
{{range .Endpoints}}<tr><td>{{.Name}}<div class="bar b" style="width:{{.BarBase}}%"></div><div class="bar c" style="width:{{.BarCand}}%"></div></td>
<td class="n">{{.Requests}}</td><td class="n">{{.P95}}</td><td class="n">{{.P99}}</td><td class="n">{{.Change}}</td><td class="n">{{.SQL}}</td><td class="{{.Verdict}}">{{.Verdict}}</td></tr>
<tr><td colspan="7"><small>{{code .Explanation}}</small></td></tr>
{{end}}</table>
<small>Bars: p95 of the baseline (orange) and the candidate (blue). {{.Method}}</small>{{if .CPU}}
<p>{{code .CPU}}</p>{{end}}
{{template "charts" .}}
{{if .SQL}}<h2>SQL statements per request that changed</h2>
<table><tr><th>Endpoint</th><th>Statement</th><th class="n">Baseline</th><th class="n">Candidate</th></tr>
{{range .SQL}}<tr><td>{{.Endpoint}}</td><td><code>{{.Fingerprint}}</code></td><td class="n">{{.Base}}</td><td class="n">{{.Cand}}</td></tr>
{{end}}</table>{{end}}{{template "upstream" .}}{{template "responses" .}}
{{if .Goals}}<h2>Goals (candidate)</h2>
<table><tr><th>Goal</th><th>Expected</th><th class="n">Actual</th><th>Result</th></tr>
{{range .Goals}}<tr><td><code>{{.Goal}}</code></td><td>{{.Expected}}</td><td class="n">{{.Actual}}</td><td class="{{.Class}}">{{code .Result}}</td></tr>
{{end}}</table>{{end}}
{{range .Notes}}<p><small>Note: {{code .}}</small></p>{{end}}
{{template "tail" .}}
</body></html>`

const chartsHTML = `{{define "charts"}}<h2>Latency over time</h2>
{{.Charts.Timeline}}
<h2>Endpoints in detail</h2>
{{range .Charts.Detail}}<section class="ep"><h3>{{.Name}}{{if .Verdict}} <span class="{{.Verdict}}">{{.Verdict}}</span>{{end}}</h3>
{{if .Explanation}}<p><small>{{code .Explanation}}</small></p>{{end}}{{if .Scope}}<p><small>{{.Scope}}</small></p>{{end}}
<div class="charts">{{.Dist}}{{.Series}}</div>{{.SQL}}</section>
{{end}}{{if .Charts.Omitted}}<p><small>{{.Charts.Omitted}} more endpoints are in the table above, not drawn.</small></p>{{end}}
<p><small>{{.Charts.Legend}}</small></p>
<h2>Failures</h2>
{{if .Charts.Failures}}{{.Charts.Failures}}<ul>{{range .Charts.FailureReasons}}<li>{{.}}</li>{{end}}</ul>{{else}}<p>No request failed{{if .Method}} in either build{{end}}.</p>{{end}}{{end}}`

const tailHTML = `{{define "tail"}}<h2>Artifacts</h2>
{{if .Artifacts}}<ul>{{range .Artifacts}}<li>{{.Name}}: <code>{{.Path}}</code></li>{{end}}</ul>{{else}}<p>None written.</p>{{end}}
<h2>Next</h2>
<ul>{{range .Next}}<li>{{code .}}</li>{{end}}</ul>{{end}}`

type htmlGoal struct{ Goal, Expected, Actual, Result, Class string }

type htmlPage struct {
	Style     template.CSS
	Ran       string
	Outcome   string
	Class     string
	Goals     []htmlGoal
	Notes     []string
	Artifacts []Artifact
	Next      []string
	Method    string
	Endpoints []map[string]any
	SQL       []map[string]string
	Responses []map[string]any
	Upstream  []map[string]string
	Charts    htmlCharts
	// CPU is the comparison's CPU line (cpuSentence); empty when not shown.
	CPU string
}

func htmlGoals(goals []analyzer.GoalResult) []htmlGoal {
	var out []htmlGoal
	for _, g := range goals {
		h := htmlGoal{Goal: g.Goal, Expected: g.Expected, Actual: actual(g), Result: "PASS", Class: "pass"}
		if !g.Passed {
			h.Result, h.Class = g.Status(), "fail"
			if g.Reason != "" {
				h.Result += ": " + g.Reason
			}
		}
		out = append(out, h)
	}
	return out
}

func renderHTML(w io.Writer, page string, data htmlPage) error {
	t, err := template.New("page").Funcs(template.FuncMap{"code": codeSpans, "plain": func(s string) string { return strings.ReplaceAll(s, "`", "") }}).Parse(page)
	for _, def := range []string{tailHTML, chartsHTML} {
		if err == nil {
			_, err = t.Parse(def)
		}
	}
	if err == nil {
		_, err = t.Parse(responsesHTML)
	}
	if err == nil {
		_, err = t.Parse(upstreamHTML)
	}
	if err != nil {
		return fmt.Errorf("html template: %w", err)
	}
	return t.Execute(w, data)
}

// bar is a width in percent of v against the largest value.
func bar(v, largest float64) string {
	if largest <= 0 {
		return "0"
	}
	return fmt.Sprintf("%.1f", math.Max(100*v/largest, 0.5))
}

// RunHTML writes a run report as a self-contained HTML page.
func RunHTML(w io.Writer, r *RunReport) error {
	s := r.Summary
	p := htmlPage{Style: template.CSS(htmlStyle), Ran: "Ran: " + runRan(s, plain), Outcome: trimEmoji(runOutcome(r, plain)),
		Class: "good", Goals: htmlGoals(r.Goals), Notes: append(append(faultNotes(r.Faults()), failureNotes(r)...), runNotes(s)...), Artifacts: r.Artifacts, Next: runNext(r, plain)}
	if !r.Passed() {
		p.Class = "bad"
	}
	largest := 0.0
	for _, x := range s.Endpoints {
		largest = max(largest, x.Latency.P95)
	}
	for _, x := range s.Endpoints {
		p.Endpoints = append(p.Endpoints, map[string]any{
			"Name": x.Endpoint, "Bar": bar(x.Latency.P95, largest), "Requests": count(x.Requests), "Failed": count(x.Failed),
			"Avg": latNum(x.Latency, x.Latency.Avg), "P50": latNum(x.Latency, x.Latency.P50), "P95": latNum(x.Latency, x.Latency.P95),
			"P99": latNum(x.Latency, x.Latency.P99), "Max": latNum(x.Latency, x.Latency.Max), "SQL": perRequest(&x.SQL),
		})
	}
	p.Responses = htmlResponses(checkedResponses(r.Responses))
	p.Upstream = htmlUpstreamRun(s)
	p.Charts = runCharts(s)
	return renderHTML(w, runHTML, p)
}

// ComparisonHTML writes a comparison as a self-contained HTML page.
func ComparisonHTML(w io.Writer, r *ComparisonReport) error {
	c := r.Comparison
	p := htmlPage{Style: template.CSS(htmlStyle), Ran: "Ran: " + comparisonRan(c, plain), Outcome: trimEmoji(comparisonOutcome(r, plain)),
		Goals: htmlGoals(r.Goals), Notes: append(faultNotes(c.Faults), c.Notes...), Artifacts: r.Artifacts, Next: comparisonNext(r, plain),
		Method: fmt.Sprintf("Intervals: %s%% bootstrap, %s.", analyzer.FormatCount(100*c.Options.Confidence), method(c))}
	switch {
	case !r.Passed():
		p.Class = "bad"
	case c.Verdict == analyzer.Inconclusive:
		p.Class = "meh"
	default:
		p.Class = "good"
	}
	largest := 0.0
	for _, x := range c.Endpoints {
		largest = max(largest, x.P95.Baseline, x.P95.Candidate)
	}
	for _, x := range c.Endpoints {
		p.Endpoints = append(p.Endpoints, map[string]any{
			"Name": x.Endpoint, "BarBase": bar(x.P95.Baseline, largest), "BarCand": bar(x.P95.Candidate, largest),
			"Requests": count(x.Baseline.Requests) + " → " + count(x.Candidate.Requests),
			"P95":      latNum(x.Baseline.Latency, x.P95.Baseline) + " → " + latNum(x.Candidate.Latency, x.P95.Candidate),
			"P99":      latNum(x.Baseline.Latency, x.P99.Baseline) + " → " + latNum(x.Candidate.Latency, x.P99.Candidate),
			"Change":   latChange(x, x.P95, change), "SQL": perRequest(&x.Baseline.SQL) + " → " + perRequest(&x.Candidate.SQL),
			"Verdict": string(x.Verdict), "Explanation": x.Explanation,
		})
	}
	for _, s := range changedSQL(c) {
		p.SQL = append(p.SQL, map[string]string{"Endpoint": s.endpoint, "Fingerprint": s.f.Fingerprint,
			"Base": analyzer.FormatCount(s.f.BaselinePerRequest), "Cand": analyzer.FormatCount(s.f.CandidatePerRequest)})
	}
	p.Responses = htmlResponses(comparedResponses(c))
	p.Upstream = htmlUpstream(c)
	p.Charts = comparisonCharts(c)
	if cpuShown(c) {
		p.CPU = cpuSentence(c)
	}
	return renderHTML(w, comparisonHTML, p)
}

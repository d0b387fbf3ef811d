package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/replaykit/replay/analyzer"
)

// maxChartEndpoints bounds the endpoints drawn in detail; the table lists
// every one.
const maxChartEndpoints = 40

// maxChartStatements bounds the statements of an endpoint's SQL chart.
const maxChartStatements = 10

// htmlCharts are a page's charts.
type htmlCharts struct {
	// Timeline is the whole run's latency over time.
	Timeline template.HTML
	// Detail is one section per endpoint (the busiest or most changed
	// first), and Omitted the number not drawn.
	Detail  []htmlDetail
	Omitted int
	// Failures draws the failure rate per endpoint; FailureReasons say
	// why, per endpoint and build; both empty when nothing failed.
	Failures       template.HTML
	FailureReasons []string
	// Legend explains how to read the charts.
	Legend string
}

// htmlDetail is one endpoint's charts. Scope, when not empty, says that
// the distribution is of all requests while the figures above it leave the
// slice pairs set aside out.
type htmlDetail struct {
	Name, Verdict, Explanation, Scope string
	Dist, Series, SQL                 template.HTML
}

// chartsLegend is how to read the charts, for both pages.
const chartsLegend = "Distributions: the share of the load's requests per latency bin, on a log scale; " +
	"the lines mark p50, p95 and p99%s. Over time: each slice (or window of time) is a segment over its span, " +
	"at its p95 (thick) and p50 (thin); its percentiles come from bins 4.4%% wide (within 2.2%%)."

// comparisonCharts draws a comparison.
func comparisonCharts(c *analyzer.Comparison) htmlCharts {
	ch := htmlCharts{Legend: fmt.Sprintf(chartsLegend, " (dashed: baseline)") + " Shaded: where the candidate's p95 lies by the change's " +
		analyzer.FormatCount(100*c.Options.Confidence) + "% interval (the baseline's p95 times the interval of the ratio)."}
	aside := [2]map[int]bool{{}, {}}
	for _, a := range c.SetAside {
		aside[min(sideIndex(a.Side), 1)][a.Slice] = true
	}
	timeline := func(b, k []analyzer.SeriesPoint) []seriesSide {
		return []seriesSide{{"baseline", colorBase, b, aside[0]}, {"candidate", colorCand, k, aside[1]}}
	}
	ch.Timeline = seriesSVG(allEndpoints, timeline(c.Baseline.Overall.Series, c.Candidate.Overall.Series), chartWide)
	for i, e := range c.Endpoints {
		if i == maxChartEndpoints {
			ch.Omitted = len(c.Endpoints) - i
			break
		}
		d := htmlDetail{Name: e.Endpoint, Verdict: string(e.Verdict), Explanation: e.Explanation}
		if e.P95.WithoutSetAside {
			d.Scope = distributionScope
		}
		var band *distBand
		if e.P95.CIHigh > 0 && e.P95.Baseline > 0 {
			band = &distBand{lo: e.P95.Baseline * e.P95.CILow, hi: e.P95.Baseline * e.P95.CIHigh,
				label: fmt.Sprintf("candidate p95 by the change's interval (×%s–×%s)", ratioText(e.P95.CILow), ratioText(e.P95.CIHigh))}
		}
		d.Dist = distributionSVG(e.Endpoint, []distSide{
			{"baseline", colorBase, e.Baseline.Histogram, e.Baseline.Latency},
			{"candidate", colorCand, e.Candidate.Histogram, e.Candidate.Latency}}, band)
		d.Series = seriesSVG(e.Endpoint, timeline(e.Baseline.Series, e.Candidate.Series), chartW)
		if len(e.SQL) > 0 {
			var rows []barRow
			for _, f := range e.SQL[:min(len(e.SQL), maxChartStatements)] {
				rows = append(rows, barRow{label: c.StatementName(f.Fingerprint), tip: f.Fingerprint,
					values: []float64{f.BaselinePerRequest, f.CandidatePerRequest}})
			}
			d.SQL = barsSVG("sql", "SQL statements per request by statement", e.Endpoint+": SQL statements per request", "statements per request",
				[]distSide{{name: "baseline", color: colorBase}, {name: "candidate", color: colorCand}}, rows)
		}
		ch.Detail = append(ch.Detail, d)
	}
	var rows []barRow
	for _, e := range c.Endpoints {
		if e.Baseline.Failed+e.Candidate.Failed == 0 {
			continue
		}
		rows = append(rows, failureRow(e.Endpoint, e.Baseline, e.Candidate))
		ch.FailureReasons = append(ch.FailureReasons, failureReasons(e.Endpoint, "baseline", e.Baseline)...)
		ch.FailureReasons = append(ch.FailureReasons, failureReasons(e.Endpoint, "candidate", e.Candidate)...)
	}
	if len(rows) > 0 {
		rows = capRows(rows, &ch)
		ch.Failures = barsSVG("failures", "Failed requests per endpoint", "Failed requests per endpoint", "% of the endpoint's load requests that failed",
			[]distSide{{name: "baseline", color: colorBase}, {name: "candidate", color: colorCand}}, rows)
	}
	return ch
}

// runCharts draws one run.
func runCharts(s *analyzer.Summary) htmlCharts {
	name := s.Info.Name
	if name == "" {
		name = "this run"
	}
	ch := htmlCharts{Legend: fmt.Sprintf(chartsLegend, "")}
	ch.Timeline = seriesSVG(allEndpoints, []seriesSide{{name, colorCand, s.Overall.Series, nil}}, chartWide)
	var fps []string
	for _, e := range s.Endpoints {
		for _, f := range e.SQL.Fingerprints {
			fps = append(fps, f.Fingerprint)
		}
	}
	names := analyzer.StatementNames(fps, analyzer.FingerprintWidth)
	side := []distSide{{name: name, color: colorCand}}
	var fails []barRow
	for i, e := range s.Endpoints {
		if e.Failed > 0 {
			fails = append(fails, failureRow(e.Endpoint, e))
			ch.FailureReasons = append(ch.FailureReasons, failureReasons(e.Endpoint, "", e)...)
		}
		if i >= maxChartEndpoints {
			ch.Omitted++
			continue
		}
		d := htmlDetail{Name: e.Endpoint,
			Dist:   distributionSVG(e.Endpoint, []distSide{{name, colorCand, e.Histogram, e.Latency}}, nil),
			Series: seriesSVG(e.Endpoint, []seriesSide{{name, colorCand, e.Series, nil}}, chartW)}
		if f := e.SQL.Fingerprints; len(f) > 0 {
			var rows []barRow
			for _, x := range f[:min(len(f), maxChartStatements)] {
				rows = append(rows, barRow{label: names[x.Fingerprint], tip: x.Fingerprint, values: []float64{x.PerRequest}})
			}
			d.SQL = barsSVG("sql", "SQL statements per request by statement", e.Endpoint+": SQL statements per request", "statements per request", side, rows)
		}
		ch.Detail = append(ch.Detail, d)
	}
	if len(fails) > 0 {
		fails = capRows(fails, &ch)
		ch.Failures = barsSVG("failures", "Failed requests per endpoint", "Failed requests per endpoint", "% of the endpoint's load requests that failed", side, fails)
	}
	return ch
}

// capRows keeps the first maxChartEndpoints rows of the failures chart,
// saying how many more there are.
func capRows(rows []barRow, ch *htmlCharts) []barRow {
	if len(rows) <= maxChartEndpoints {
		return rows
	}
	ch.FailureReasons = append(ch.FailureReasons, fmt.Sprintf("%d more endpoints with failed requests are in the table, not drawn.", len(rows)-maxChartEndpoints))
	return rows[:maxChartEndpoints]
}

// failureRow is an endpoint's failure rate on each side.
func failureRow(name string, sides ...*analyzer.EndpointSummary) barRow {
	r := barRow{label: name, tip: name}
	for _, e := range sides {
		if e.Requests == 0 {
			r.values = append(r.values, math.NaN())
			r.notes = append(r.notes, "")
			continue
		}
		r.values = append(r.values, e.FailureRate())
		r.notes = append(r.notes, fmt.Sprintf("%s%% (%s of %s)", analyzer.FormatCount(math.Round(e.FailureRate()*10)/10), count(e.Failed), count(e.Requests)))
	}
	return r
}

// failureReasons says why an endpoint's requests failed on one side.
func failureReasons(name, side string, e *analyzer.EndpointSummary) []string {
	if e.Failed == 0 {
		return nil
	}
	var parts []string
	for _, f := range e.Failures {
		parts = append(parts, fmt.Sprintf("%s × %s", count(f.Count), f.String()))
	}
	if side != "" {
		name += " (" + side + ")"
	}
	return []string{name + ": " + strings.Join(parts, "; ")}
}

// sideIndex is 0 for the baseline, 1 for the candidate.
func sideIndex(side string) int {
	if side == "baseline" {
		return 0
	}
	return 1
}

// ratioText formats a ratio of the change's interval: 1.04, 0.98.
func ratioText(r float64) string { return fmt.Sprintf("%.2f", r) }

// codeSpans renders text whose `quoted` parts are code: escaped, the
// quoted parts in <code>; a lone backtick stays as it is.
func codeSpans(s string) template.HTML {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i, p := range parts {
		switch {
		case i%2 == 0:
			b.WriteString(template.HTMLEscapeString(p))
		case i == len(parts)-1: // unclosed
			b.WriteString("`" + template.HTMLEscapeString(p))
		default:
			b.WriteString("<code>" + template.HTMLEscapeString(p) + "</code>")
		}
	}
	return template.HTML(b.String()) // every part escaped
}

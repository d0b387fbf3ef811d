package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// svgNode is an element of a parsed SVG.
type svgNode struct {
	name  string
	attrs map[string]string
	text  string
}

// parseSVG parses one chart (it must be well-formed XML) into its
// elements, the root first.
func parseSVG(t *testing.T, h template.HTML) []svgNode {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(string(h)))
	var out []svgNode
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return out
			}
			t.Fatalf("not well-formed: %v\n%s", err, h)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			n := svgNode{name: x.Name.Local, attrs: map[string]string{}}
			for _, a := range x.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			out = append(out, n)
		case xml.CharData:
			if len(out) > 0 {
				out[len(out)-1].text += string(x)
			}
		}
	}
}

// nodes returns the elements with the given name and class.
func nodes(all []svgNode, name, class string) []svgNode {
	var out []svgNode
	for _, n := range all {
		if n.name == name && n.attrs["class"] == class {
			out = append(out, n)
		}
	}
	return out
}

func attrF(t *testing.T, n svgNode, a string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attrs[a], 64)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", n.name, a, n.attrs[a], err)
	}
	return v
}

// summaryOf summarizes one endpoint's load results with the given
// latencies (ms), 10 per slice in slices first, first+2, …
func summaryOf(t *testing.T, latencies []float64, first int, start time.Time) *analyzer.Summary {
	var rs []*snapshots.Result
	for i, l := range latencies {
		at := start.Add(time.Duration(i/10) * 2 * time.Second).Add(time.Duration(i%10) * 50 * time.Millisecond)
		rs = append(rs, &snapshots.Result{Phase: snapshots.PhaseLoad, Slice: first + 2*(i/10), Endpoint: "GET /a", Method: "GET", URL: "/a",
			Intended: at, Sent: at, Done: at.Add(time.Duration(l * float64(time.Millisecond))), Status: 200})
	}
	return fixtureSummary(t, snapshots.RunInfo{Name: "x"}, rs)
}

// TestDistributionSVGMarkers: the distribution chart of known latencies
// marks each side's p50, p95 and p99 where the log axis puts them, shades
// the band, and draws each side's bins, whose shares add up to 100%.
func TestDistributionSVGMarkers(t *testing.T) {
	var base, cand []float64
	for i := 1; i <= 1000; i++ {
		base = append(base, float64(i)/10) // 0.1 to 100 ms
		cand = append(cand, float64(i)/5)  // 0.2 to 200 ms
	}
	b := summaryOf(t, base, 1, t0).Endpoint("GET /a")
	k := summaryOf(t, cand, 2, t0.Add(time.Second)).Endpoint("GET /a")
	if b.Latency.P50 != 50 || b.Latency.P95 != 95 || k.Latency.P99 != 198 {
		t.Fatalf("fixture: p50 %g p95 %g, candidate p99 %g", b.Latency.P50, b.Latency.P95, k.Latency.P99)
	}
	svg := distributionSVG("GET /a", []distSide{{"baseline", colorBase, b.Histogram, b.Latency}, {"candidate", colorCand, k.Histogram, k.Latency}},
		&distBand{lo: 95 * 1.8, hi: 95 * 2.2, label: "band"})
	all := parseSVG(t, svg)
	root := all[0]
	if root.name != "svg" || root.attrs["class"] != "chart dist" {
		t.Fatalf("root %s class %q", root.name, root.attrs["class"])
	}
	lo, hi, x0, x1 := attrF(t, root, "data-lo"), attrF(t, root, "data-hi"), attrF(t, root, "data-x0"), attrF(t, root, "data-x1")
	if lo > 0.1 || hi < 200 {
		t.Errorf("axis %g to %g ms does not hold 0.1 to 200 ms", lo, hi)
	}
	xOf := func(ms float64) float64 { return x0 + (x1-x0)*math.Log(ms/lo)/math.Log(hi/lo) }
	want := map[string]float64{"baseline p50": 50, "baseline p95": 95, "baseline p99": 99, "candidate p50": 100, "candidate p95": 190, "candidate p99": 198}
	markers := nodes(all, "line", "q")
	if len(markers) != len(want) {
		t.Fatalf("%d quantile markers, want %d", len(markers), len(want))
	}
	for _, m := range markers {
		key := m.attrs["data-side"] + " " + m.attrs["data-q"]
		ms, ok := want[key]
		if !ok {
			t.Errorf("unexpected marker %q", key)
			continue
		}
		if x := attrF(t, m, "x1"); math.Abs(x-xOf(ms)) > 0.06 || attrF(t, m, "x2") != x {
			t.Errorf("%s at x %g, want %.2f (%g ms)", key, x, xOf(ms), ms)
		}
		if (m.attrs["data-side"] == "baseline") != (m.attrs["stroke-dasharray"] != "") {
			t.Errorf("%s: dashed %q; the baseline's markers are dashed, the candidate's solid", key, m.attrs["stroke-dasharray"])
		}
	}
	// Every marker is labelled with its value.
	var labels []string
	for _, n := range nodes(all, "text", "qlabel") {
		labels = append(labels, n.text)
	}
	for _, l := range []string{"p50 50", "p95 95", "p99 99", "p50 100", "p95 190", "p99 198"} {
		if !strings.Contains(strings.Join(labels, "|"), l) {
			t.Errorf("no label %q in %q", l, labels)
		}
	}
	band := nodes(all, "rect", "ci")
	if len(band) != 1 || math.Abs(attrF(t, band[0], "x")-xOf(171)) > 0.06 || math.Abs(attrF(t, band[0], "x")+attrF(t, band[0], "width")-xOf(209)) > 0.11 {
		t.Errorf("band %v, want x %.1f to %.1f", band, xOf(171), xOf(209))
	}
	// Each side's bins: in its colour, their heights (shares) add up to
	// 100% on the y axis, and the bin holding the p95 lies under its
	// marker.
	for side, color := range map[string]string{"baseline": colorBase, "candidate": colorCand} {
		var total float64
		var ticks []svgNode
		for _, n := range all {
			if n.name == "text" && n.attrs["class"] == "tick" && n.attrs["text-anchor"] == "end" {
				ticks = append(ticks, n)
			}
		}
		// y of the 0 and of the top tick give the scale.
		y0, yTop := attrF(t, ticks[0], "y")-3.5, attrF(t, ticks[len(ticks)-1], "y")-3.5
		top, _ := strconv.ParseFloat(ticks[len(ticks)-1].text, 64)
		n := 0
		for _, r := range nodes(all, "rect", "bin") {
			if r.attrs["fill"] != color {
				continue
			}
			n++
			total += attrF(t, r, "height") / (y0 - yTop) * top
		}
		if n < 10 || math.Abs(total-100) > 1.5 {
			t.Errorf("%s: %d bins adding up to %.1f%%, want 10 or more adding up to 100%%", side, n, total)
		}
	}
}

// TestSeriesSVGInterleaved: the series chart draws each side's slices
// over their spans, where the time axis puts them, alternating.
func TestSeriesSVGInterleaved(t *testing.T) {
	lat := func(ms float64) []float64 {
		var out []float64
		for range 40 {
			out = append(out, ms)
		}
		return out
	}
	// Baseline slices 1, 3, 5, 7 start at 0, 2, 4, 6 s; the candidate's
	// 2, 4, 6, 8 a second later and twice as slow.
	b := summaryOf(t, lat(10), 1, t0).Endpoint("GET /a")
	k := summaryOf(t, lat(20), 2, t0.Add(time.Second)).Endpoint("GET /a")
	all := parseSVG(t, seriesSVG("GET /a", []seriesSide{{"baseline", colorBase, b.Series, map[int]bool{3: true}}, {"candidate", colorCand, k.Series, nil}}, chartW))
	root := all[0]
	x0, x1, xmax := attrF(t, root, "data-x0"), attrF(t, root, "data-x1"), attrF(t, root, "data-xmax")
	xOf := func(s float64) float64 { return x0 + (x1-x0)*s/xmax }
	segs := nodes(all, "line", "seg")
	if len(segs) != 16 {
		t.Fatalf("%d segments, want 16 (4 slices × 2 sides × p50 and p95)", len(segs))
	}
	var p95 []svgNode
	for _, s := range segs {
		if s.attrs["data-q"] == "p95" {
			p95 = append(p95, s)
		}
	}
	slices := map[string]bool{}
	for _, s := range p95 {
		side, slice := s.attrs["data-side"], s.attrs["data-slice"]
		slices[side+slice] = true
		n, _ := strconv.Atoi(slice)
		start := float64(n - 1) // slice n starts at n-1 seconds
		if x := attrF(t, s, "x1"); math.Abs(x-xOf(start)) > 0.06 {
			t.Errorf("%s slice %s starts at x %g, want %.1f (%g s)", side, slice, x, xOf(start), start)
		}
		// 10 requests 50 ms apart, the last done after its latency.
		ms := map[string]float64{"baseline": 10, "candidate": 20}[side]
		if x := attrF(t, s, "x2"); math.Abs(x-xOf(start+0.45+ms/1000)) > 0.06 {
			t.Errorf("%s slice %s ends at x %g, want %.1f", side, slice, x, xOf(start+0.45+ms/1000))
		}
		if got := attrF(t, s, "data-ms"); math.Abs(got-ms) > ms*0.023 {
			t.Errorf("%s slice %s p95 %g ms, want %g", side, slice, got, ms)
		}
	}
	for _, want := range []string{"baseline1", "baseline3", "baseline5", "baseline7", "candidate2", "candidate4", "candidate6", "candidate8"} {
		if !slices[want] {
			t.Errorf("no segment for %s in %v", want, slices)
		}
	}
	// The slice set aside is shaded over its span.
	if aside := nodes(all, "rect", "aside"); len(aside) != 1 || aside[0].attrs["data-slice"] != "3" || math.Abs(attrF(t, aside[0], "x")-xOf(2)) > 0.06 {
		t.Errorf("set aside %v, want baseline slice 3 shaded from x %.1f", aside, xOf(2))
	}
	// The candidate's segments lie above (smaller y) the baseline's.
	y := map[string]float64{}
	for _, s := range p95 {
		y[s.attrs["data-side"]] = attrF(t, s, "y1")
	}
	if y["candidate"] >= y["baseline"] {
		t.Errorf("candidate p95 at y %g, baseline at %g: the slower build is not higher", y["candidate"], y["baseline"])
	}
}

// TestComparisonCharts: the comparison's page draws every endpoint, the
// N+1's statements per request, and no failures where none failed.
func TestComparisonCharts(t *testing.T) {
	r := comparisonFixture(t)
	ch := comparisonCharts(r.Comparison)
	if len(ch.Detail) != len(r.Comparison.Endpoints) || ch.Timeline == "" || ch.Failures != "" {
		t.Fatalf("%d details for %d endpoints, timeline %d bytes, failures %q", len(ch.Detail), len(r.Comparison.Endpoints), len(ch.Timeline), ch.Failures)
	}
	d := ch.Detail[0]
	if d.Name != "GET /orders" || d.Verdict != "regression" || d.SQL == "" {
		t.Fatalf("first detail %s %s, SQL chart %d bytes", d.Name, d.Verdict, len(d.SQL))
	}
	bars := map[string]float64{}
	all := parseSVG(t, d.SQL)
	var title string
	for _, n := range all {
		if n.name == "title" {
			title = n.text
		}
		if n.name == "rect" && n.attrs["class"] == "bar" && title == itemsSQL.Fingerprint {
			bars[n.attrs["data-side"]] = attrF(t, n, "data-value")
		}
	}
	if bars["baseline"] != 0 || bars["candidate"] != 50 {
		t.Errorf("order_items statements per request %v, want baseline 0, candidate 50", bars)
	}
	// The band: the candidate's p95 by the interval of the change.
	band := nodes(parseSVG(t, d.Dist), "rect", "ci")
	e := r.Comparison.Endpoints[0]
	if len(band) != 1 || attrF(t, band[0], "data-lo") != e.P95.Baseline*e.P95.CILow || attrF(t, band[0], "data-hi") != e.P95.Baseline*e.P95.CIHigh {
		t.Errorf("band %v, want %g to %g ms", band, e.P95.Baseline*e.P95.CILow, e.P95.Baseline*e.P95.CIHigh)
	}
	if e.P95.Candidate < e.P95.Baseline*e.P95.CILow || e.P95.Candidate > e.P95.Baseline*e.P95.CIHigh {
		t.Logf("the candidate's p95 %g lies outside the band (possible with a paired bootstrap)", e.P95.Candidate)
	}

	// A run with failures: a chart of failure rates and the reasons.
	run := runFixture(t)
	rc := runCharts(run.Summary)
	if rc.Failures == "" || len(rc.FailureReasons) != 1 || !strings.Contains(rc.FailureReasons[0], "POST /orders: 10 × 503 Service Unavailable") {
		t.Fatalf("run failures: %d bytes of chart, reasons %q", len(rc.Failures), rc.FailureReasons)
	}
	for _, n := range parseSVG(t, rc.Failures) {
		if n.name == "rect" && n.attrs["class"] == "bar" {
			if v := attrF(t, n, "data-value"); math.Abs(v-100*10/float64(run.Summary.Endpoint("POST /orders").Requests)) > 1e-9 {
				t.Errorf("failure rate bar %g%%", v)
			}
		}
	}
}

// TestHTMLChartsOffline: the pages have charts, no script, nothing fetched
// from the network, and no raw backtick.
func TestHTMLChartsOffline(t *testing.T) {
	var pages []string
	for _, r := range []*ComparisonReport{comparisonFixture(t), behaviourFixture(t), upstreamFixture(t)} {
		var b bytes.Buffer
		if err := ComparisonHTML(&b, r); err != nil {
			t.Fatal(err)
		}
		pages = append(pages, b.String())
	}
	var b bytes.Buffer
	if err := RunHTML(&b, runFixture(t)); err != nil {
		t.Fatal(err)
	}
	pages = append(pages, b.String())
	for i, p := range pages {
		if n := strings.Count(p, `<svg xmlns="http://www.w3.org/2000/svg" class="chart`); n < 5 {
			t.Errorf("page %d: %d charts", i, n)
		}
		for _, bad := range []string{"<script", " src=", "href=\"http", "url(", "@import", "`"} {
			if strings.Contains(p, bad) {
				t.Errorf("page %d contains %q", i, bad)
			}
		}
	}
}

func TestCodeSpans(t *testing.T) {
	for in, want := range map[string]template.HTML{
		"N+1: `SELECT a<b` runs": "N+1: <code>SELECT a&lt;b</code> runs",
		"`a` and `b`":            "<code>a</code> and <code>b</code>",
		"a lone ` stays":         "a lone ` stays",
		"plain":                  "plain",
	} {
		if got := codeSpans(in); got != want {
			t.Errorf("codeSpans(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestChartsEdgeCases: an endpoint in one run only, a run without load
// and failures without latencies still give well-formed charts with no
// NaN or infinity in them.
func TestChartsEdgeCases(t *testing.T) {
	eps := baseEndpoints()
	base := fixtureSummary(t, info("baseline", "http://127.0.0.1:41001", 0), fixtureResults(400, 11, true, eps))
	cand := fixtureSummary(t, info("candidate", "http://127.0.0.1:41002", 0), fixtureResults(400, 12, false, eps[:2]))
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Explain only: no load at all; and a run whose every request failed
	// without an answer.
	empty := fixtureSummary(t, info("empty", "http://127.0.0.1:41003", 0), fixtureResults(0, 1, false, eps))
	dead := fixtureSummary(t, info("dead", "http://127.0.0.1:41004", 0), []*snapshots.Result{
		{Phase: snapshots.PhaseLoad, Endpoint: "GET /a", Intended: t0, Sent: t0, Error: "connection refused"},
		{Phase: snapshots.PhaseLoad, Endpoint: "GET /a", Intended: t0.Add(ms), Sent: t0.Add(ms), Error: "connection refused"}})
	var all []template.HTML
	for _, ch := range []htmlCharts{comparisonCharts(c), runCharts(empty), runCharts(dead)} {
		all = append(all, ch.Timeline, ch.Failures)
		for _, d := range ch.Detail {
			all = append(all, d.Dist, d.Series, d.SQL)
		}
	}
	for _, h := range all {
		if h == "" {
			continue
		}
		parseSVG(t, h)
		if s := string(h); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
			t.Errorf("chart with NaN or Inf: %s", s)
		}
	}
	if ch := runCharts(dead); ch.Failures == "" || len(ch.FailureReasons) != 1 || !strings.Contains(ch.FailureReasons[0], "2 × connection refused") {
		t.Errorf("dead run: failures chart %d bytes, reasons %q", len(ch.Failures), ch.FailureReasons)
	}
}

// TestChartsManyEndpoints: past 40 endpoints the page draws the first 40
// and says how many more the table lists.
func TestChartsManyEndpoints(t *testing.T) {
	var eps []fixEndpoint
	for i := range 45 {
		eps = append(eps, fixEndpoint{name: fmt.Sprintf("GET /e%02d", i), weight: 1, median: 2 * ms, failures: 2})
	}
	s := fixtureSummary(t, info("many", "http://127.0.0.1:41005", 0), fixtureResults(900, 3, false, eps))
	ch := runCharts(s)
	if len(ch.Detail) != maxChartEndpoints || ch.Omitted != 5 {
		t.Errorf("%d endpoints drawn, %d omitted; want 40 and 5", len(ch.Detail), ch.Omitted)
	}
	if n := strings.Count(string(ch.Failures), `class="bar"`); n != maxChartEndpoints || !strings.Contains(strings.Join(ch.FailureReasons, "\n"), "5 more endpoints with failed requests") {
		t.Errorf("%d failure bars, reasons end %q", n, ch.FailureReasons[len(ch.FailureReasons)-1])
	}
	var b bytes.Buffer
	if err := RunHTML(&b, &RunReport{Summary: s}); err != nil || !strings.Contains(b.String(), "5 more endpoints are in the table above, not drawn.") {
		t.Errorf("page: %v, note of the endpoints not drawn: %v", err, strings.Contains(b.String(), "5 more endpoints"))
	}
}

// TestChartsEscapeText: endpoint names and statements come from recorded
// traffic; in the charts they are text, never markup.
func TestChartsEscapeText(t *testing.T) {
	evil := "GET /<script>alert(1)</script>"
	sql := snapshots.SQLCount{Fingerprint: `SELECT '</title><script>x()</script>' FROM "a&b"`, Count: 1, Duration: ms}
	eps := []fixEndpoint{{name: evil, weight: 1, median: 2 * ms, sql: []snapshots.SQLCount{sql}, failures: 3}}
	s := fixtureSummary(t, info("x", "http://127.0.0.1:41006", 0), fixtureResults(200, 5, false, eps))
	var b bytes.Buffer
	if err := RunHTML(&b, &RunReport{Summary: s}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script") || !strings.Contains(b.String(), "&lt;script&gt;") {
		t.Errorf("the page holds the names as markup, or not at all")
	}
	ch := runCharts(s)
	for _, h := range []template.HTML{ch.Timeline, ch.Failures, ch.Detail[0].Dist, ch.Detail[0].Series, ch.Detail[0].SQL} {
		parseSVG(t, h) // well-formed: nothing broke out of its element
	}
}

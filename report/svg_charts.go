package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"
)

// Chart sizes in pixels: two charts side by side fill the page's width.
const (
	chartW     = 520
	chartWide  = 1060
	distH      = 240
	seriesH    = 220
	maxDistBin = 40 // display bins of a distribution at most
)

// distSide is one build's latency distribution.
type distSide struct {
	name, color string
	hist        analyzer.Histogram
	lat         analyzer.LatencyStats
}

// distBand is the interval drawn on a distribution, in milliseconds: where
// the candidate's p95 lies given the baseline's and the change's interval.
type distBand struct {
	lo, hi float64
	label  string
}

// distDomain returns the latencies the x axis spans: every side's
// non-empty bins and the band, a little beyond, at least a factor 4 wide.
func distDomain(sides []distSide, band *distBand) (lo, hi float64) {
	lo, hi = math.Inf(1), 0
	for _, s := range sides {
		if len(s.hist.Counts) == 0 {
			continue
		}
		l, _ := analyzer.HistogramBin(s.hist.First)
		_, h := analyzer.HistogramBin(s.hist.First + len(s.hist.Counts) - 1)
		lo, hi = min(lo, max(l, 0.001)), max(hi, h)
	}
	if band != nil && band.hi > 0 {
		lo, hi = min(lo, band.lo), max(hi, band.hi)
	}
	if hi == 0 {
		return 0.1, 10
	}
	lo, hi = lo/1.15, hi*1.15
	if r := hi / lo; r < 4 {
		mid := math.Sqrt(lo * hi)
		lo, hi = mid/2, mid*2
	}
	return lo, hi
}

// distBins groups the histogram bins in [lo, hi] k at a time and returns
// each group's share of the side's latencies in percent, by first bin.
func distBins(h analyzer.Histogram, k int) map[int]float64 {
	total := h.Total()
	out := map[int]float64{}
	if total == 0 {
		return out
	}
	for j, n := range h.Counts {
		if n > 0 {
			i := h.First + j
			g := i - ((i%k)+k)%k
			out[g] += 100 * float64(n) / float64(total)
		}
	}
	return out
}

// distributionSVG draws the sides' latency distributions on a log scale,
// with p50, p95 and p99 marked for each and the band shaded.
func distributionSVG(title string, sides []distSide, band *distBand) template.HTML {
	lo, hi := distDomain(sides, band)
	n := int(math.Ceil(analyzer.HistogramBinsPerDoubling * math.Log2(hi/lo)))
	k := max(1, (n+maxDistBin-1)/maxDistBin)
	groups := make([]map[int]float64, len(sides))
	ymax := 0.0
	var keys []legendKey
	for i, sd := range sides {
		groups[i] = distBins(sd.hist, k)
		for _, v := range groups[i] {
			ymax = max(ymax, v)
		}
		if sd.lat.Count > 0 {
			keys = append(keys, legendKey{label: fmt.Sprintf("%s (%s)", sd.name, counted(sd.lat.Count, "request")), color: sd.color})
		}
	}
	hasBand := band != nil && band.hi > 0
	if hasBand {
		keys = append(keys, legendKey{label: band.label, color: "#cfe2fb"})
	}
	p := plot{left: 48, right: chartW - 12}
	p.x = scale{lo: lo, hi: hi, p0: p.left, p1: p.right, log: true}
	labels, rows := quantileLabels(p, sides)
	legendY := legend(&svgDoc{}, 0, 29, chartW, keys...)
	p.top = legendY + 10 + 11*float64(rows)
	p.bottom = p.top + 150
	yticks, ytop := linearTicks(0, max(ymax, 1), 4)
	p.y = scale{lo: 0, hi: ytop, p0: p.bottom, p1: p.top}
	s := newSVG(chartW, p.bottom+34, "dist", title+": latency distribution",
		"lo", fmt.Sprint(lo), "hi", fmt.Sprint(hi), "x0", fmt.Sprint(p.left), "x1", fmt.Sprint(p.right))
	s.text(0, 13, "start", `class="ctitle"`, "Latency distribution")
	legend(s, 0, 29, chartW, keys...)
	binWidth := 100 * (math.Exp2(float64(k)/analyzer.HistogramBinsPerDoubling) - 1)
	p.axes(s, logTicks(lo, hi), yticks, fmt.Sprintf("latency (ms, log scale; each bin %.0f%% wider than the one before)", binWidth), "% of requests per bin")
	if hasBand {
		x0, x1 := p.x.at(band.lo), p.x.at(band.hi)
		s.rect(x0, p.top, max(x1-x0, 1.5), p.bottom-p.top, fmt.Sprintf(`class="ci" fill="%s" fill-opacity=".13" stroke="%s" stroke-opacity=".5" stroke-dasharray="3 2" data-lo="%g" data-hi="%g"`, colorCand, colorCand, band.lo, band.hi))
	}
	for i, sd := range sides {
		distPath(s, p, groups[i], k, sd.color)
	}
	for _, sd := range sides {
		if sd.lat.Count == 0 {
			continue
		}
		dash := ""
		if sd.color == colorBase {
			dash = ` stroke-dasharray="5 3"`
		}
		for _, q := range quantilesOf(sd.lat) {
			x := p.x.at(q.v)
			s.line(x, p.top, x, p.bottom, fmt.Sprintf(`class="q" data-side="%s" data-q="%s" data-ms="%g" stroke="%s" stroke-width="1.5"%s`, sd.name, q.name, q.v, sd.color, dash))
		}
	}
	for _, l := range labels {
		y := p.top - 4 - 11*float64(rows-1-l.row)
		s.line(l.at, y+2, l.at, p.top, fmt.Sprintf(`stroke="%s" stroke-opacity=".45" stroke-width="1"`, l.color))
		s.text(l.x, y, "middle", fmt.Sprintf(`class="qlabel" fill="%s"`, l.color), l.text)
	}
	return s.html()
}

type quantile struct {
	name string
	v    float64
}

func quantilesOf(l analyzer.LatencyStats) []quantile {
	return []quantile{{"p50", l.P50}, {"p95", l.P95}, {"p99", l.P99}}
}

// qLabel is a quantile marker's label: its text centred on x, over the
// marker at `at`, in row (0 nearest the title).
type qLabel struct {
	x, at       float64
	row         int
	text, color string
}

// quantileLabels places the labels of every side's p50, p95 and p99 in
// rows above the plot, none overlapping another; it returns them and the
// number of rows.
func quantileLabels(p plot, sides []distSide) ([]qLabel, int) {
	var labels []qLabel
	for _, sd := range sides {
		if sd.lat.Count == 0 {
			continue
		}
		for _, q := range quantilesOf(sd.lat) {
			at := p.x.at(q.v)
			labels = append(labels, qLabel{at: at, x: at, text: q.name + " " + num(q.v), color: sd.color})
		}
	}
	slices.SortStableFunc(labels, func(a, b qLabel) int { return cmpFloat(a.at, b.at) })
	var rowEnd []float64
	for i := range labels {
		l := &labels[i]
		w := 5.8 * float64(len(l.text))
		l.x = min(max(l.at, p.left+w/2-40), p.right-w/2+10)
		row := 0
		for row < len(rowEnd) && rowEnd[row] > l.x-w/2 {
			row++
		}
		if row == len(rowEnd) {
			rowEnd = append(rowEnd, 0)
		}
		rowEnd[row] = l.x + w/2 + 4
		l.row = row
	}
	return labels, len(rowEnd)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// distPath draws one side's grouped bins as outlined bars.
func distPath(s *svgDoc, p plot, groups map[int]float64, k int, color string) {
	starts := make([]int, 0, len(groups))
	for g := range groups {
		starts = append(starts, g)
	}
	slices.Sort(starts)
	for _, g := range starts {
		l, _ := analyzer.HistogramBin(g)
		_, h := analyzer.HistogramBin(g + k - 1)
		x0, x1 := p.x.at(max(l, p.x.lo)), p.x.at(min(h, p.x.hi))
		y := p.y.at(groups[g])
		s.rect(x0, y, x1-x0, p.bottom-y, fmt.Sprintf(`class="bin" data-lo="%g" data-hi="%g" fill="%s" fill-opacity=".28" stroke="%s" stroke-width="1"`, l, h, color, color))
	}
}

// seriesSide is one build's latency over time.
type seriesSide struct {
	name, color string
	points      []analyzer.SeriesPoint
	// aside are the slices the comparison set aside (a burst of load on
	// the machine), shaded.
	aside map[int]bool
}

// allEndpoints titles the whole run's timeline.
const allEndpoints = "All endpoints"

// seriesSVG draws each side's p50 and p95 per slice (or window) against
// the time since the first one began: the slices of an interleaved
// comparison alternate, and a drift shows as a slope.
func seriesSVG(title string, sides []seriesSide, width float64) template.HTML {
	var t0, t1 time.Time
	ymax := 0.0
	for _, sd := range sides {
		for _, pt := range sd.points {
			if t0.IsZero() || pt.Start.Before(t0) {
				t0 = pt.Start
			}
			t1 = maxTime(t1, pt.End)
			ymax = max(ymax, pt.P95)
		}
	}
	span := max(t1.Sub(t0).Seconds(), 0.001)
	xticks, xmax := linearTicks(0, span, int(width/90))
	yticks, ytop := linearTicks(0, max(ymax, 0.001), 4)
	p := plot{left: 52, top: 40, right: width - 12, bottom: seriesH - 34}
	p.x = scale{lo: 0, hi: xmax, p0: p.left, p1: p.right}
	p.y = scale{lo: 0, hi: ytop, p0: p.bottom, p1: p.top}
	s := newSVG(width, seriesH, "series", title+": latency over time",
		"t0", t0.Format(time.RFC3339Nano), "xmax", fmt.Sprint(xmax), "x0", fmt.Sprint(p.left), "x1", fmt.Sprint(p.right))
	heading := "Latency over time, " + seriesUnit(sides)
	if title == allEndpoints {
		heading += ", all endpoints together"
	}
	s.text(0, 13, "start", `class="ctitle"`, heading)
	p.axes(s, xticks, yticks, "seconds since the load began", "latency (ms)")
	var keys []legendKey
	failed, aside := false, false
	for _, sd := range sides {
		aside = seriesAside(s, p, sd, t0) || aside
	}
	for _, sd := range sides {
		keys = append(keys, legendKey{label: sd.name, color: sd.color})
		failed = seriesLines(s, p, sd, t0) || failed
	}
	keys = append(keys, legendKey{label: "p95", color: "#59636e", line: 3}, legendKey{label: "p50", color: "#59636e", line: 1.2})
	if failed {
		keys = append(keys, legendKey{label: "slice with failed requests", color: colorFail})
	}
	if aside {
		keys = append(keys, legendKey{label: "slice set aside (a burst of load)", color: colorAside})
	}
	legend(s, 0, 29, width, keys...)
	return s.html()
}

// seriesUnit says what a point of the sides is: "per slice", or "per 2s
// window".
func seriesUnit(sides []seriesSide) string {
	for _, sd := range sides {
		for _, pt := range sd.points {
			switch {
			case pt.Slice > 0:
				return "per slice"
			case pt.Window > 0:
				return "per " + pt.Window.String() + " window"
			}
		}
	}
	return "per window of time"
}

// seriesAside shades the side's slices set aside over the plot's height;
// it reports whether it shaded any.
func seriesAside(s *svgDoc, p plot, sd seriesSide, t0 time.Time) bool {
	shaded := false
	for _, pt := range sd.points {
		if pt.Slice > 0 && sd.aside[pt.Slice] {
			shaded = true
			x0, x1 := p.x.at(pt.Start.Sub(t0).Seconds()), p.x.at(pt.End.Sub(t0).Seconds())
			s.rect(x0, p.top, max(x1-x0, 2), p.bottom-p.top, fmt.Sprintf(`class="aside" data-side="%s" data-slice="%d" fill="%s"`, sd.name, pt.Slice, colorAside))
		}
	}
	return shaded
}

// seriesLines draws one side's points: a segment over each point's span
// at its p95 (thick) and p50 (thin), a faint line joining the p95s, and
// a red tick under a point with failures; it reports whether any point
// had failures.
func seriesLines(s *svgDoc, p plot, sd seriesSide, t0 time.Time) bool {
	var join []string
	failed := false
	for _, pt := range sd.points {
		if pt.Requests == 0 {
			continue
		}
		x0, x1 := p.x.at(pt.Start.Sub(t0).Seconds()), p.x.at(pt.End.Sub(t0).Seconds())
		if x1-x0 < 2 {
			x0, x1 = (x0+x1)/2-1, (x0+x1)/2+1
		}
		id := fmt.Sprintf(`data-side="%s" data-slice="%d" data-start="%g"`, sd.name, pt.Slice, pt.Start.Sub(t0).Seconds())
		if pt.P95 > 0 || pt.P50 > 0 {
			join = append(join, f1((x0+x1)/2)+","+f1(p.y.at(pt.P95)))
			s.raw(`<g>`)
			s.raw(`<title>%s</title>`, template.HTMLEscapeString(seriesTip(sd.name, pt)))
			s.line(x0, p.y.at(pt.P95), x1, p.y.at(pt.P95), fmt.Sprintf(`class="seg" data-q="p95" data-ms="%g" %s stroke="%s" stroke-width="3"`, pt.P95, id, sd.color))
			s.line(x0, p.y.at(pt.P50), x1, p.y.at(pt.P50), fmt.Sprintf(`class="seg" data-q="p50" data-ms="%g" %s stroke="%s" stroke-width="1.2"`, pt.P50, id, sd.color))
			s.raw(`</g>`)
		}
		if pt.Failed > 0 {
			failed = true
			s.rect(x0+0.5, p.bottom-5, x1-x0-1, 5, fmt.Sprintf(`class="fail" data-failed="%d" %s fill="%s"`, pt.Failed, id, colorFail))
		}
	}
	if len(join) > 1 {
		s.raw(`<polyline points="%s" fill="none" stroke="%s" stroke-opacity=".35" stroke-width="1"/>`, strings.Join(join, " "), sd.color)
	}
	return failed
}

func seriesTip(side string, pt analyzer.SeriesPoint) string {
	what := "window"
	if pt.Slice > 0 {
		what = fmt.Sprintf("slice %d", pt.Slice)
	}
	return fmt.Sprintf("%s %s: %s, %s failed, p50 %s ms, p95 %s ms, p99 %s ms", side, what,
		counted(pt.Requests, "request"), count(pt.Failed), num(pt.P50), num(pt.P95), num(pt.P99))
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// barRow is one row of a bar chart: a label and a value per side (NaN:
// the side has none).
type barRow struct {
	label, tip string
	values     []float64
	notes      []string // the text after each bar; its value when empty
}

// barsSVG draws horizontal bars, one per side in each row, against a
// shared linear axis titled unit.
// label names the chart for screen readers (and tests).
func barsSVG(class, title, label, unit string, sides []distSide, rows []barRow) template.HTML {
	const labelW, rowGap, barH = 250, 8, 9
	vmax := 0.0
	for _, r := range rows {
		for _, v := range r.values {
			if !math.IsNaN(v) {
				vmax = max(vmax, v)
			}
		}
	}
	rowH := float64(len(sides))*(barH+2) + rowGap
	xticks, xtop := linearTicks(0, max(vmax, 0.001), 5)
	p := plot{left: labelW + 8, top: 38, right: chartWide - 120}
	p.bottom = p.top + rowH*float64(len(rows)) + 4
	p.x = scale{lo: 0, hi: xtop, p0: p.left, p1: p.right}
	s := newSVG(chartWide, p.bottom+34, class, label)
	s.text(0, 13, "start", `class="ctitle"`, title)
	var keys []legendKey
	for _, sd := range sides {
		keys = append(keys, legendKey{label: sd.name, color: sd.color})
	}
	legend(s, 0, 29, chartWide, keys...)
	for _, v := range xticks {
		x := p.x.at(v)
		s.line(x, p.top, x, p.bottom, `stroke="`+colorGrid+`" stroke-dasharray="2 3"`)
		s.text(x, p.bottom+13, "middle", `class="tick"`, tickLabel(v))
	}
	s.line(p.left, p.top, p.left, p.bottom, `stroke="#59636e"`)
	s.text((p.left+p.right)/2, p.bottom+27, "middle", `class="axis"`, unit)
	p.area(s)
	for i, r := range rows {
		y := p.top + 4 + rowH*float64(i)
		s.raw(`<g><title>%s</title>`, template.HTMLEscapeString(r.tip))
		s.text(labelW, y+rowH/2, "end", `class="rowlabel"`, shortLabel(r.label, 40))
		for j, v := range r.values {
			if math.IsNaN(v) || j >= len(sides) {
				continue
			}
			by := y + float64(j)*(barH+2)
			w := p.x.at(v) - p.left
			s.rect(p.left, by, max(w, 1), barH, fmt.Sprintf(`class="bar" data-side="%s" data-value="%g" fill="%s"`, sides[j].name, v, sides[j].color))
			note := tickLabel(v)
			if j < len(r.notes) && r.notes[j] != "" {
				note = r.notes[j]
			}
			s.text(p.left+max(w, 1)+4, by+barH-1, "start", `class="tick"`, note)
		}
		s.raw(`</g>`)
	}
	return s.html()
}

// shortLabel cuts s to n runes with "…".
func shortLabel(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

package report

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The HTML report's charts are inline SVG written here: no script, no
// external asset. Colours: the baseline orange, the candidate (or a run's
// one build) blue, failures red.
const (
	colorBase = "#e36209"
	colorCand = "#0969da"
	colorFail = "#cf222e"
	colorGrid = "#d1d9e0"
	// colorAside shades the slices a comparison set aside.
	colorAside = "#eaeef2"
)

// svgDoc builds one <svg> element.
type svgDoc struct {
	b strings.Builder
}

// newSVG starts an SVG of w×h pixels (it scales down with the page);
// class names the chart's kind and label describes it for screen readers.
func newSVG(w, h float64, class, label string, data ...string) *svgDoc {
	s := &svgDoc{}
	fmt.Fprintf(&s.b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart %s" viewBox="0 0 %s %s" width="%s" height="%s" role="img" aria-label="%s"`,
		class, f1(w), f1(h), f1(w), f1(h), html.EscapeString(label))
	for i := 0; i+1 < len(data); i += 2 {
		fmt.Fprintf(&s.b, ` data-%s="%s"`, data[i], html.EscapeString(data[i+1]))
	}
	s.b.WriteString(">")
	fmt.Fprintf(&s.b, `<title>%s</title>`, html.EscapeString(label))
	return s
}

// f1 formats a coordinate with at most one decimal.
func f1(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// raw appends markup as is.
func (s *svgDoc) raw(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

func (s *svgDoc) line(x1, y1, x2, y2 float64, attrs string) {
	s.raw(`<line x1="%s" y1="%s" x2="%s" y2="%s" %s/>`, f1(x1), f1(y1), f1(x2), f1(y2), attrs)
}

func (s *svgDoc) rect(x, y, w, h float64, attrs string) {
	s.raw(`<rect x="%s" y="%s" width="%s" height="%s" %s/>`, f1(x), f1(y), f1(max(w, 0)), f1(max(h, 0)), attrs)
}

// text writes an escaped label; anchor is start, middle or end.
func (s *svgDoc) text(x, y float64, anchor, attrs, txt string) {
	s.raw(`<text x="%s" y="%s" text-anchor="%s" %s>%s</text>`, f1(x), f1(y), anchor, attrs, html.EscapeString(txt))
}

// html closes the SVG and returns it for a template.
func (s *svgDoc) html() template.HTML {
	s.b.WriteString("</svg>")
	return template.HTML(s.b.String()) // built only from escaped text and numbers
}

// scale maps a domain [lo, hi] onto pixels [p0, p1], linearly or (log) on
// a logarithmic axis.
type scale struct {
	lo, hi, p0, p1 float64
	log            bool
}

func (sc scale) at(v float64) float64 {
	lo, hi := sc.lo, sc.hi
	if sc.log {
		v, lo, hi = math.Log(max(v, sc.lo)), math.Log(lo), math.Log(hi)
	}
	if hi <= lo {
		return sc.p0
	}
	return sc.p0 + (sc.p1-sc.p0)*(v-lo)/(hi-lo)
}

// niceStep returns a step of 1, 2 or 5 × 10^k that cuts span into at most
// n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks returns ticks from lo (rounded down to a step) to the
// first at or above hi, and that last tick.
func linearTicks(lo, hi float64, n int) ([]float64, float64) {
	step := niceStep(hi-lo, n)
	var ticks []float64
	for i := math.Floor(lo / step); ; i++ {
		v := i * step
		ticks = append(ticks, v)
		if v >= hi*(1-1e-9) {
			break
		}
	}
	return ticks, ticks[len(ticks)-1]
}

// logTicks returns the 1-2-5 values within [lo, hi], every digit's when
// that gives fewer than 4, and only powers of ten when it gives more
// than 8.
func logTicks(lo, hi float64) []float64 {
	in := func(ms []float64) []float64 {
		var ticks []float64
		for p := math.Pow(10, math.Floor(math.Log10(lo))); p <= hi; p *= 10 {
			for _, m := range ms {
				if v := m * p; v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
					ticks = append(ticks, v)
				}
			}
		}
		return ticks
	}
	ticks := in([]float64{1, 2, 5})
	switch {
	case len(ticks) < 4:
		ticks = in([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9})
	case len(ticks) > 8:
		ticks = in([]float64{1})
	}
	return ticks
}

// tickLabel formats an axis value: 0.5, 2, 1,000, 1.5k.
func tickLabel(v float64) string {
	if v >= 10000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// plot is the drawing area of a chart and its axes.
type plot struct {
	left, top, right, bottom float64 // pixels
	x, y                     scale
}

// axes draws the grid lines and labels of both axes, with their titles.
func (p plot) axes(s *svgDoc, xticks, yticks []float64, xtitle, ytitle string) {
	p.area(s)
	for _, v := range yticks {
		y := p.y.at(v)
		s.line(p.left, y, p.right, y, `stroke="`+colorGrid+`"`)
		s.text(p.left-4, y+3.5, "end", `class="tick"`, tickLabel(v))
	}
	for _, v := range xticks {
		x := p.x.at(v)
		s.line(x, p.top, x, p.bottom, `stroke="`+colorGrid+`" stroke-dasharray="2 3"`)
		s.text(x, p.bottom+13, "middle", `class="tick"`, tickLabel(v))
	}
	s.line(p.left, p.bottom, p.right, p.bottom, `stroke="#59636e"`)
	s.line(p.left, p.top, p.left, p.bottom, `stroke="#59636e"`)
	s.text((p.left+p.right)/2, p.bottom+27, "middle", `class="axis"`, xtitle)
	s.raw(`<text transform="translate(11 %s) rotate(-90)" text-anchor="middle" class="axis">%s</text>`, f1((p.top+p.bottom)/2), html.EscapeString(ytitle))
}

// area marks the drawing area (invisible), for tests that look at it.
func (p plot) area(s *svgDoc) {
	s.rect(p.left, p.top, p.right-p.left, p.bottom-p.top, `class="area" fill="none"`)
}

// legendKey is one key of a legend: a label and its colour; a line key
// is drawn as a line of that width instead of a swatch.
type legendKey struct {
	label, color string
	line         float64
}

// legend draws keys left to right from (x, y), wrapping at width; it
// returns the y of its last row.
func legend(s *svgDoc, x, y, width float64, keys ...legendKey) float64 {
	x0 := x
	for _, k := range keys {
		w := 22 + 6.2*float64(len([]rune(k.label)))
		if x > x0 && x+w > width {
			x, y = x0, y+15
		}
		if k.line > 0 {
			s.line(x, y-3, x+12, y-3, fmt.Sprintf(`stroke="%s" stroke-width="%g"`, k.color, k.line))
		} else {
			s.rect(x, y-8, 10, 10, `fill="`+k.color+`"`)
		}
		s.text(x+16, y+1, "start", `class="legend"`, k.label)
		x += w
	}
	return y
}

package report

import (
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/replaykit/replay/analyzer"
)

// num formats milliseconds for a table: "0.42", "4.1", "54.3", "1234".
func num(ms float64) string { return strings.TrimSuffix(analyzer.FormatMs(ms), " ms") }

// counted is count(n) things: "1 request", "12,345 requests".
func counted(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return count(n) + " " + thing + "s"
}

// latNum is num of a latency figure of l: "-" when no request was answered
// (latency is over answered requests alone), never a 0 that reads as fast.
func latNum(l analyzer.LatencyStats, ms float64) string {
	if l.Count == 0 {
		return "-"
	}
	return num(ms)
}

// count formats an integer with thousands separators: "12,345".
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// perRequest formats statements per request, or "-" when not counted.
func perRequest(s *analyzer.SQLStats) string {
	switch {
	case !s.Counted():
		return "-"
	case s.Estimated():
		return "~" + analyzer.FormatCount(s.PerRequest) + " ±" + analyzer.FormatCount(s.Margin)
	case s.Method == analyzer.SQLMethodUnknown:
		return "≥" + analyzer.FormatCount(s.PerRequest)
	}
	return analyzer.FormatCount(s.PerRequest)
}

// seconds formats a duration for a sentence: "30.0 s", "2m 5s".
func seconds(d time.Duration) string {
	if d >= 100*time.Second {
		return d.Round(time.Second).String()
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
}

// rate formats requests per second: "411.5".
func rate(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// actual formats a goal's actual value in its unit.
func actual(g analyzer.GoalResult) string {
	if g.Reason != "" {
		return "-"
	}
	if s, ok := cpuGoalActual(g); ok {
		return s
	}
	switch g.Unit {
	case "ms":
		return analyzer.FormatMs(g.Actual)
	case "µs":
		return analyzer.FormatMicros(g.Actual)
	case "%":
		return analyzer.FormatPercent(g.Actual)
	case "req/s":
		return rate(g.Actual) + " req/s"
	}
	return analyzer.FormatCount(g.Actual)
}

// round rounds v to digits decimals for JSON (and maps NaN and ±Inf, which
// JSON cannot carry, to 0).
func round(v float64, digits int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	p := math.Pow10(digits)
	return math.Round(v*p) / p
}

// table renders rows as aligned columns; right lists right-aligned columns.
type table struct {
	rows  [][]string
	right map[int]bool
}

func newTable(header []string, right ...int) *table {
	t := &table{right: map[int]bool{}}
	for _, c := range right {
		t.right[c] = true
	}
	t.rows = append(t.rows, header)
	return t
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// Table is an aligned text table as the text reports print them: text
// columns padded on the left, figure columns on the right, two spaces
// between columns.
type Table struct{ t *table }

// NewTable starts a table with its header; right lists the columns (from
// 0) that are aligned to the right.
func NewTable(header []string, right ...int) *Table {
	return &Table{newTable(header, right...)}
}

// Add adds a row.
func (t *Table) Add(cells ...string) { t.t.add(cells...) }

// Write writes the table to w.
func (t *Table) Write(w io.Writer) error {
	e := &errWriter{w: w}
	t.t.write(e, "")
	return e.err
}

// write writes the table, each line indented by indent.
func (t *table) write(e *errWriter, indent string) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if t.right[i] {
				b.WriteString(pad + c)
			} else if i < len(r)-1 {
				b.WriteString(c + pad)
			} else {
				b.WriteString(c)
			}
		}
		e.println(b.String())
	}
}

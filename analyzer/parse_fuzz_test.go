package analyzer

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// oneLineError fails t unless err is a non-empty message on one line that
// quotes the input it is about.
func oneLineError(t *testing.T, in string, err error) {
	t.Helper()
	msg := err.Error()
	if msg == "" || strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("%q: error is not one line: %q", in, msg)
	}
	if !strings.Contains(msg, strconv.Quote(strings.TrimSpace(in))) && !strings.Contains(msg, strconv.Quote(in)) {
		t.Fatalf("%q: error does not quote the input: %q", in, msg)
	}
}

// canonicalGoal renders a parsed goal from its fields alone: endpoint,
// canonical metric name, operator, the value as a plain number, "%" when
// the unit is a percentage (a bare number would be a fraction or a count).
func canonicalGoal(g Goal) string {
	s := g.Metric + g.Op + formatNumber(g.Value)
	if g.Unit == "%" {
		s += "%"
	}
	if g.Endpoint != "" {
		s = g.Endpoint + ": " + s
	}
	return s
}

// FuzzParseGoal feeds arbitrary text to ParseGoal (and ParseGoals). A goal
// that parses renders back with String() and parses again to the same goal;
// its fields alone, rendered canonically, parse to the same fields; the
// value is a non-negative number and the unit fits the metric. Text that
// does not parse gives a one-line error quoting it.
func FuzzParseGoal(f *testing.F) {
	for _, s := range []string{
		"p95<500ms", "p99<1s", "avg<200ms", "tps>50", "success>99%", "failed<1%",
		"errors<5", "sql<=5", "GET /orders: p95<20ms", "GET /orders: sql<=5",
		"POST /graphql {allBooks}: sql<=3", "success>0.99", "rps>=50/s", "mean<250us",
		"failures<=2", "med<1.5", "GET  /a:b: p50 > 3ms", "p95=>1", "p95!<1", ": p95<1",
		"p95<", "<1", "p95<inf", "p95<-1", "success>101%", "p95<1e400", "x<1",
	} {
		f.Add(s)
	}
	units := map[string]string{"avg": "ms", "min": "ms", "p50": "ms", "p90": "ms", "p95": "ms", "p99": "ms", "max": "ms", "tps": "req/s", "success": "%", "sql": ""}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGoal(s)
		gs, errs := ParseGoals([]string{"p95<1s", s})
		if (err == nil) != (errs == nil) {
			t.Fatalf("%q: ParseGoal error %v, ParseGoals error %v", s, err, errs)
		}
		if err != nil {
			oneLineError(t, s, err)
			if errs.Error() != err.Error() {
				t.Fatalf("%q: ParseGoals says %q, ParseGoal %q", s, errs, err)
			}
			return
		}
		if len(gs) != 2 || gs[1] != g {
			t.Fatalf("%q: ParseGoals gave %+v, ParseGoal %+v", s, gs, g)
		}
		switch {
		case g.Op != "<" && g.Op != "<=" && g.Op != ">" && g.Op != ">=":
			t.Fatalf("%q: operator %q", s, g.Op)
		case g.Value < 0 || math.IsNaN(g.Value):
			t.Fatalf("%q: value %v", s, g.Value)
		case g.Unit == "%" && g.Value > 100:
			t.Fatalf("%q: percentage %v above 100", s, g.Value)
		}
		if want, ok := units[g.Metric]; ok && g.Unit != want {
			t.Fatalf("%q: metric %s with unit %q, want %q", s, g.Metric, g.Unit, want)
		} else if !ok && (g.Metric != "failed" && g.Metric != "errors" || g.Unit != "" && g.Unit != "%") {
			t.Fatalf("%q: metric %q with unit %q", s, g.Metric, g.Unit)
		}
		if g.Endpoint != strings.Join(strings.Fields(g.Endpoint), " ") {
			t.Fatalf("%q: endpoint %q not normalised", s, g.Endpoint)
		}
		again, err := ParseGoal(g.String())
		if err != nil || again != g {
			t.Fatalf("%q: String() %q parses to %+v, %v; want %+v", s, g.String(), again, err, g)
		}
		c := canonicalGoal(g)
		cg, err := ParseGoal(c)
		if err != nil || cg.Endpoint != g.Endpoint || cg.Metric != g.Metric || cg.Op != g.Op || cg.Value != g.Value || cg.Unit != g.Unit {
			t.Fatalf("%q: canonical form %q parses to %+v, %v; want the fields of %+v", s, c, cg, err, g)
		}
		_ = g.Expected()
	})
}

// FuzzParseMinChange feeds arbitrary text to ParseMinChange: what parses
// has a relative part in (0, 10) and a non-negative absolute part, and its
// parts rendered back parse to the same options; what does not gives a
// one-line error quoting the input.
func FuzzParseMinChange(f *testing.F) {
	for _, s := range []string{DefaultMinChange, "5ms,10%", "10%", "5ms", "", ",", "10%,20%", "5ms,5ms", "0%", "999.9%,1h", "1e3%", "1ns", " 10 % , 5ms ", "-5ms", "10%,5ms,1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseMinChange(s)
		if err != nil {
			oneLineError(t, s, err)
			return
		}
		if o.MinRelative < 0 || o.MinRelative >= 10 || math.IsNaN(o.MinRelative) || o.MinChange < 0 {
			t.Fatalf("%q: parsed to %v and %v", s, o.MinRelative, o.MinChange)
		}
		if o.MinRelative == 0 && o.MinChange == 0 {
			t.Fatalf("%q: parsed to nothing", s)
		}
		var parts []string
		if o.MinRelative > 0 {
			parts = append(parts, strconv.FormatFloat(o.MinRelative*100, 'g', -1, 64)+"%")
		}
		if o.MinChange > 0 {
			parts = append(parts, o.MinChange.String())
		}
		back := strings.Join(parts, ",")
		again, err := ParseMinChange(back)
		if err != nil || again.MinChange != o.MinChange || math.Abs(again.MinRelative-o.MinRelative) > 1e-12*o.MinRelative {
			t.Fatalf("%q: rendered %q parses to %v, %v, %v; want %v, %v", s, back, again.MinRelative, again.MinChange, err, o.MinRelative, o.MinChange)
		}
	})
}

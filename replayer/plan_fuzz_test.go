package replayer

import (
	"strconv"
	"strings"
	"testing"
)

// loadPlanError fails t unless err is one line that quotes the input.
func loadPlanError(t *testing.T, in string, err error) {
	t.Helper()
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") || !strings.Contains(msg, strconv.Quote(in)) {
		t.Fatalf("%q: error not one line quoting the input: %q", in, msg)
	}
}

// FuzzParseRate feeds arbitrary text to ParseRate: a rate that parses has a
// positive count and period, and String() gives text that parses to the
// same rate; text that does not parse gives a one-line error quoting it.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"200/s", "50/1s", "1000/m", "10/100ms", "200", "1/h", " 7 / 2h3m ", "0/s", "-1/s", "5/0s", "5/-1s", "5/x", "/s", "5/", "99999999999999999999/s", "1/1ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err != nil {
			loadPlanError(t, s, err)
			return
		}
		if r.Count <= 0 || r.Per <= 0 {
			t.Fatalf("%q: parsed to %+v", s, r)
		}
		if r.PerSecond() <= 0 || r.Interval() < 0 {
			t.Fatalf("%q: %v/s, interval %v", s, r.PerSecond(), r.Interval())
		}
		again, err := ParseRate(r.String())
		if err != nil || again != r {
			t.Fatalf("%q: String() %q parses to %+v, %v; want %+v", s, r.String(), again, err, r)
		}
	})
}

// FuzzParseStage feeds arbitrary text to ParseStage, as FuzzParseRate does
// ParseRate.
func FuzzParseStage(f *testing.F) {
	for _, s := range []string{"30s:10", "1m:0", " 1h2m3s : 7 ", "0s:1", "1s:-1", "1s", ":5", "1s:", "1s:1:1", "1x:1", "2562047h:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseStage(s)
		if err != nil {
			loadPlanError(t, s, err)
			return
		}
		if st.Duration <= 0 || st.Target < 0 {
			t.Fatalf("%q: parsed to %+v", s, st)
		}
		again, err := ParseStage(st.String())
		if err != nil || again != st {
			t.Fatalf("%q: String() %q parses to %+v, %v; want %+v", s, st.String(), again, err, st)
		}
		p := LoadPlan{Stages: []Stage{st}}
		if err := p.Validate(); err != nil {
			t.Fatalf("%q: a plan of the stage alone: %v", s, err)
		}
	})
}

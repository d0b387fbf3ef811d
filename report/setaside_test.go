package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/golden"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// burst slows every load result of a slice factor times, as a burst of
// load on the machine would.
func burst(rs []*snapshots.Result, slice int, factor float64) []*snapshots.Result {
	for _, r := range rs {
		if r.Phase == snapshots.PhaseLoad && r.Slice == slice {
			r.Done = r.Sent.Add(time.Duration(float64(r.Done.Sub(r.Sent)) * factor))
		}
	}
	return rs
}

// setAsideFixture is the demo's comparison (comparisonFixture) in which a
// burst of load slowed one baseline slice and one candidate slice twenty
// times: both pairs are set aside, so the figures the verdict rests on
// (over the pairs kept) differ from each side's p95 over all its requests.
func setAsideFixture(t testing.TB) *ComparisonReport {
	base := fixtureSummary(t, info("baseline", "http://127.0.0.1:41001", 0), burst(fixtureResults(2000, 11, true, baseEndpoints()), 5, 20))
	slow := baseEndpoints()
	slow[0].sql = []snapshots.SQLCount{listSQL, itemsSQL}
	slow[0].extra = 10 * ms
	cand := fixtureSummary(t, info("candidate", "http://127.0.0.1:41002", 0), burst(fixtureResults(2000, 12, false, slow), 14, 20))
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.SetAside) != 2 {
		t.Fatalf("set aside %+v, want the 2 pairs of the bursts", c.SetAside)
	}
	return &ComparisonReport{Comparison: c}
}

// TestGoldenSetAside renders a comparison with slice pairs set aside in
// every format.
func TestGoldenSetAside(t *testing.T) {
	r := setAsideFixture(t)
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteComparison(&b, f, r); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "compare-setaside"+f.Ext()+".golden", b.Bytes())
		})
	}
}

// figures are an endpoint's p95 and p99 as a format shows them:
// baseline p95, candidate p95, baseline p99, candidate p99.
type figures [4]string

// TestSetAsideFiguresAgree: with slice pairs set aside, every format shows
// the same p95 and p99 per endpoint, those the verdict and its sentence
// rest on; the sides' figures over all requests appear only labelled so.
func TestSetAsideFiguresAgree(t *testing.T) {
	r := setAsideFixture(t)
	c := r.Comparison
	out := map[Format]string{}
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := WriteComparison(&b, f, r); err != nil {
			t.Fatal(err)
		}
		out[f] = b.String()
	}
	differs := false
	sentence := regexp.MustCompile(`p95 (?:rose |fell )?([0-9.]+) ms → ([0-9.]+) ms`)
	for _, x := range c.Endpoints {
		want := figures{num(x.P95.Baseline), num(x.P95.Candidate), num(x.P99.Baseline), num(x.P99.Candidate)}
		if !x.P95.WithoutSetAside {
			t.Errorf("%s: p95 %+v does not leave the pairs set aside out", x.Endpoint, x.P95)
		}
		differs = differs || num(x.Baseline.Latency.P95) != want[0] || num(x.Candidate.Latency.P95) != want[1]
		if m := sentence.FindStringSubmatch(x.Explanation); strings.Contains(x.Explanation, "p95") && (m == nil || m[1] != want[0] || m[2] != want[1]) {
			t.Errorf("%s: explanation %q, want p95 %s ms → %s ms", x.Endpoint, x.Explanation, want[0], want[1])
		}
		for f, got := range map[Format]func(string, string) (figures, bool){
			Text: textFigures, Markdown: markdownFigures, HTML: htmlFigures, JUnit: junitFigures, JSON: jsonFigures,
		} {
			fig, ok := got(out[f], x.Endpoint)
			if !ok && !(f == Markdown && x.Verdict == analyzer.Unchanged) { // Markdown folds unchanged endpoints away
				t.Errorf("%s: no p95/p99 figures for %s", f, x.Endpoint)
			}
			if ok && fig != want {
				t.Errorf("%s shows %s at p95 %s → %s, p99 %s → %s; the verdict rests on %s → %s, %s → %s",
					f, x.Endpoint, fig[0], fig[1], fig[2], fig[3], want[0], want[1], want[2], want[3])
			}
		}
	}
	if !differs {
		t.Fatal("the fixture's figures over all requests equal those over the pairs kept: it tells nothing")
	}
	for _, s := range []string{allRequestsHeader, "p95 and p99 leave out the 2 slice pairs set aside"} {
		if !strings.Contains(out[Text], s) {
			t.Errorf("text lacks %q (the label of the figures over all requests)", s)
		}
	}
	for _, line := range strings.Split(out[JUnit], "\n") {
		if strings.Contains(line, "requests ") && strings.Contains(line, ", p95 ") && !strings.Contains(line, ", all requests:") {
			t.Errorf("JUnit shows figures over all requests without saying so: %q", line)
		}
	}
	for _, s := range []string{`"basis": "kept-pairs"`, "their intervals rest on the other 8"} {
		if !strings.Contains(out[JSON], s) {
			t.Errorf("JSON lacks %q", s)
		}
	}
}

// textFigures reads an endpoint's row of the text table.
func textFigures(out, name string) (figures, bool) {
	for _, line := range strings.Split(out, "\n") {
		cols := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
		if len(cols) < 3 || cols[0] != name {
			continue
		}
		b95, b99, ok1 := strings.Cut(cols[1], " / ")
		c95, c99, ok2 := strings.Cut(cols[2], " / ")
		return figures{b95, c95, b99, c99}, ok1 && ok2
	}
	return figures{}, false
}

// markdownFigures reads an endpoint's row of the Markdown table.
func markdownFigures(out, name string) (figures, bool) {
	re := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(cell(name)) + ` \| [^|]* \| (\S+) → (\S+) \([^|]*\) \| (\S+) → (\S+) \(`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		return figures{}, false
	}
	return figures{m[1], m[2], m[3], m[4]}, true
}

// htmlFigures reads an endpoint's row of the HTML table.
func htmlFigures(out, name string) (figures, bool) {
	re := regexp.MustCompile(`<tr><td>` + regexp.QuoteMeta(html.EscapeString(name)) + `<div[^\n]*\n<td class="n">[^<]*</td><td class="n">(\S+) → (\S+)</td><td class="n">(\S+) → (\S+)</td>`)
	m := re.FindStringSubmatch(out)
	if m == nil {
		return figures{}, false
	}
	return figures{m[1], m[2], m[3], m[4]}, true
}

// junitFigures reads the p95 and p99 of an endpoint's test case's
// system-out, and checks its failure message agrees.
func junitFigures(out, name string) (figures, bool) {
	var doc struct {
		Suites []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				SystemOut string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil {
		return figures{}, false
	}
	re := regexp.MustCompile(`(?m)^p95 (\S+) ms → (\S+) ms \(.*\), p99 (\S+) ms → (\S+) ms`)
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Name != name {
				continue
			}
			m := re.FindStringSubmatch(c.SystemOut)
			if m == nil {
				return figures{}, false
			}
			f := figures{m[1], m[2], m[3], m[4]}
			if c.Failure != nil && !strings.Contains(c.Failure.Message, f[0]+" ms → "+f[1]+" ms") {
				return figures{"message", c.Failure.Message}, true
			}
			return f, true
		}
	}
	return figures{}, false
}

// jsonFigures reads an endpoint's p95 and p99 changes from the JSON.
func jsonFigures(out, name string) (figures, bool) {
	var doc ComparisonDocument
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return figures{}, false
	}
	for _, e := range doc.Endpoints {
		if e.Endpoint == name {
			return figures{num(e.P95.BaselineMs), num(e.P95.CandidateMs), num(e.P99.BaselineMs), num(e.P99.CandidateMs)}, true
		}
	}
	return figures{}, false
}

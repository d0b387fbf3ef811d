package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"maps"
	"regexp"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/golden"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/analyzer"
)

func TestGolden(t *testing.T) {
	run := runFixture(t)
	cmpReport := comparisonFixture(t)
	same := unchangedFixture(t)
	miswired := miswiredFixture(t)
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteRun(&b, f, run); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "run"+f.Ext()+".golden", b.Bytes())
			b.Reset()
			if err := WriteComparison(&b, f, cmpReport); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, "compare"+f.Ext()+".golden", b.Bytes())
			if f == Text || f == JSON || f == Markdown {
				b.Reset()
				if err := WriteComparison(&b, f, same); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, "compare-unchanged"+f.Ext()+".golden", b.Bytes())
				b.Reset()
				if err := WriteComparison(&b, f, miswired); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, "compare-miswired"+f.Ext()+".golden", b.Bytes())
			}
		})
	}
}

// TestMiswiredFixture: a comparison with wiring faults has no clean
// verdict, does not pass, and every format names each fault.
func TestMiswiredFixture(t *testing.T) {
	r := miswiredFixture(t)
	c := r.Comparison
	if c.Verdict != analyzer.Inconclusive || r.Passed() || len(c.Faults) != 3 {
		t.Fatalf("verdict %s, passed %v, faults %q; want inconclusive, not passed, 3 faults", c.Verdict, r.Passed(), c.Faults)
	}
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := WriteComparison(&b, f, r); err != nil {
			t.Fatal(err)
		}
		for _, x := range c.Faults {
			// HTML and XML escape the apostrophes; the address is enough.
			if want := x.Text[strings.Index(x.Text, "("):strings.Index(x.Text, ")")]; !strings.Contains(b.String(), want) {
				t.Errorf("%s lacks fault %q", f, x.Text)
			}
		}
	}
}

// TestComparisonFixture checks the facts the goldens show.
func TestComparisonFixture(t *testing.T) {
	r := comparisonFixture(t)
	c := r.Comparison
	if c.Verdict != analyzer.Regression || r.Passed() {
		t.Fatalf("verdict %s passed %v, want a regression", c.Verdict, r.Passed())
	}
	want := map[string]analyzer.Verdict{"GET /orders": analyzer.Regression, "GET /orders/{id}/status": analyzer.Unchanged,
		"POST /orders": analyzer.Unchanged, "GET /catalog": analyzer.Inconclusive}
	for name, v := range want {
		if e := c.Endpoint(name); e == nil || e.Verdict != v {
			t.Errorf("%s: %+v, want %s", name, e, v)
		}
	}
	if e := c.Endpoint("GET /orders"); !strings.HasPrefix(e.Explanation, "N+1: `SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?` runs 50 times per request (baseline 0)") {
		t.Errorf("explanation %q", e.Explanation)
	}
	if s := unchangedFixture(t); s.Comparison.Verdict != analyzer.Unchanged || !s.Passed() {
		t.Errorf("A/A fixture: %s", s.Comparison.Verdict)
	}
}

// TestRunJSONContract checks the keys DESIGN.md promises for
// replay run --format json.
func TestRunJSONContract(t *testing.T) {
	var b bytes.Buffer
	if err := RunJSON(&b, runFixture(t)); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	hasKeys(t, "run", doc, map[string]string{"passed": "bool", "requests": "number", "failed": "number", "goals": "array", "endpoints": "array"})
	if doc["passed"] != false {
		t.Errorf("passed = %v, want false (goals missed)", doc["passed"])
	}
	for _, g := range doc["goals"].([]any) {
		hasKeys(t, "goal", g.(map[string]any), map[string]string{"goal": "string", "passed": "bool", "actual": "number", "expected": "string"})
	}
	eps := doc["endpoints"].([]any)
	if len(eps) != 4 {
		t.Fatalf("%d endpoints, want 4", len(eps))
	}
	for _, e := range eps {
		hasKeys(t, "endpoint", e.(map[string]any), map[string]string{"endpoint": "string", "requests": "number", "failed": "number",
			"avg_ms": "number", "p50_ms": "number", "p95_ms": "number", "p99_ms": "number", "sql_per_request": "number"})
	}
	first := eps[0].(map[string]any)
	if first["endpoint"] != "GET /orders" || first["sql_per_request"] != 1.0 || first["sql_source"] != "explain" {
		t.Errorf("first endpoint = %v", first)
	}
}

// TestComparisonJSONContract checks the keys DESIGN.md promises for
// replay compare --format json.
func TestComparisonJSONContract(t *testing.T) {
	var b bytes.Buffer
	if err := ComparisonJSON(&b, comparisonFixture(t)); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	hasKeys(t, "comparison", doc, map[string]string{"verdict": "string", "endpoints": "array"})
	if doc["verdict"] != "regression" {
		t.Errorf("verdict = %v", doc["verdict"])
	}
	stats := map[string]string{"requests": "number", "failed": "number", "avg_ms": "number", "p50_ms": "number", "p95_ms": "number", "p99_ms": "number", "sql_per_request": "number"}
	for _, e := range doc["endpoints"].([]any) {
		m := e.(map[string]any)
		hasKeys(t, "endpoint", m, map[string]string{"endpoint": "string", "baseline": "object", "candidate": "object", "verdict": "string", "explanation": "string", "sql": "array"})
		hasKeys(t, "baseline", m["baseline"].(map[string]any), stats)
		hasKeys(t, "candidate", m["candidate"].(map[string]any), stats)
		for _, s := range m["sql"].([]any) {
			hasKeys(t, "sql", s.(map[string]any), map[string]string{"fingerprint": "string", "baseline_per_request": "number", "candidate_per_request": "number"})
		}
	}
	first := doc["endpoints"].([]any)[0].(map[string]any)
	sql := first["sql"].([]any)[0].(map[string]any)
	if first["endpoint"] != "GET /orders" || first["verdict"] != "regression" ||
		sql["fingerprint"] != "SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?" || sql["baseline_per_request"] != 0.0 || sql["candidate_per_request"] != 50.0 {
		t.Errorf("first endpoint = %v", first)
	}
}

func hasKeys(t *testing.T, what string, m map[string]any, keys map[string]string) {
	t.Helper()
	for k, typ := range keys {
		v, ok := m[k]
		if !ok {
			t.Errorf("%s: no key %q", what, k)
			continue
		}
		var got string
		switch v.(type) {
		case bool:
			got = "bool"
		case float64:
			got = "number"
		case string:
			got = "string"
		case []any:
			got = "array"
		case map[string]any:
			got = "object"
		default:
			got = "null"
		}
		if got != typ {
			t.Errorf("%s: %q is %s, want %s", what, k, got, typ)
		}
	}
}

// TestMarkdownResultBlock: the Result block has its sections in order and
// says what to do.
func TestMarkdownResultBlock(t *testing.T) {
	var b bytes.Buffer
	if err := ComparisonMarkdown(&b, comparisonFixture(t)); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	last := -1
	for _, s := range []string{"### Result", "**Ran:** snapshot `demo.snap`", "**Outcome:** ❌ Regression in GET /orders", "**Numbers:**", "**Artifacts:**", "**Next:**"} {
		i := strings.Index(md, s)
		if i <= last {
			t.Errorf("%q missing or out of order", s)
		}
		last = i
	}
	for _, s := range []string{"Fix the N+1 in GET /orders", "`out/baseline.run`", "Re-run with a longer --duration: 1 endpoint inconclusive (GET /catalog)"} {
		if !strings.Contains(md, s) {
			t.Errorf("no %q in:\n%s", s, md)
		}
	}
	b.Reset()
	if err := ComparisonMarkdown(&b, unchangedFixture(t)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "**Outcome:** ✅ No regression") {
		t.Errorf("A/A outcome:\n%s", b.String())
	}
}

func TestJUnit(t *testing.T) {
	type tc struct {
		Name    string    `xml:"name,attr"`
		Failure *struct{} `xml:"failure"`
		Skipped *struct{} `xml:"skipped"`
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []tc   `xml:"testcase"`
		} `xml:"testsuite"`
	}
	var b bytes.Buffer
	if err := ComparisonJUnit(&b, comparisonFixture(t)); err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// 4 endpoints (1 regression) and 2 goals (1 missed: GET /orders: sql<=5).
	if doc.Tests != 6 || doc.Failures != 2 || len(doc.Suites) != 2 {
		t.Fatalf("tests %d failures %d suites %d", doc.Tests, doc.Failures, len(doc.Suites))
	}
	got := map[string]string{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			state := "pass"
			if c.Failure != nil {
				state = "fail"
			} else if c.Skipped != nil {
				state = "skip"
			}
			got[s.Name+"/"+c.Name] = state
		}
	}
	want := map[string]string{"replay.compare/GET /orders": "fail", "replay.compare/GET /catalog": "skip", "replay.compare/POST /orders": "pass",
		"replay.compare/GET /orders/{id}/status": "pass", "replay.goals/p95<500ms": "pass", "replay.goals/GET /orders: sql<=5": "fail"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	b.Reset()
	if err := RunJUnit(&b, runFixture(t)); err != nil {
		t.Fatal(err)
	}
	doc.Suites = nil
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	// 6 goals (2 missed) and 4 endpoints (GET /orders failed: a goal on it was missed).
	if doc.Tests != 10 || doc.Failures != 3 {
		t.Errorf("run: tests %d failures %d, want 10 and 3", doc.Tests, doc.Failures)
	}
}

// TestHTMLSelfContained: the pages load nothing from elsewhere.
func TestHTMLSelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i)(src|href)\s*=|@import|url\(|<script|<link`)
	for name, render := range map[string]func(*bytes.Buffer) error{
		"run":     func(b *bytes.Buffer) error { return RunHTML(b, runFixture(t)) },
		"compare": func(b *bytes.Buffer) error { return ComparisonHTML(b, comparisonFixture(t)) },
	} {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatal(err)
		}
		if m := external.FindString(b.String()); m != "" {
			t.Errorf("%s: page refers to something external: %q", name, m)
		}
		if !strings.HasPrefix(b.String(), "<!DOCTYPE html>") || !strings.Contains(b.String(), "</html>") {
			t.Errorf("%s: not a whole page", name)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{"text": Text, "JSON": JSON, "md": Markdown, "markdown": Markdown, "junit": JUnit, "xml": JUnit, " html ": HTML} {
		if got, err := ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseFormat("pdf"); err == nil || err.Error() != `unknown format "pdf": want text, json, markdown, junit or html` {
		t.Errorf("err = %v", err)
	}
	if err := WriteRun(&bytes.Buffer{}, "pdf", runFixture(t)); err == nil {
		t.Error("WriteRun with an unknown format: no error")
	}
	if err := WriteRun(&bytes.Buffer{}, Text, &RunReport{}); err == nil {
		t.Error("WriteRun without a summary: no error")
	}
	if err := WriteComparison(&bytes.Buffer{}, Text, nil); err == nil {
		t.Error("WriteComparison without a comparison: no error")
	}
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// TestWriteErrors: a writer that fails makes every renderer return the error.
func TestWriteErrors(t *testing.T) {
	run, c := runFixture(t), comparisonFixture(t)
	for _, f := range Formats() {
		for _, n := range []int{0, 2} {
			if (f == JSON || f == Markdown) && n > 0 {
				continue // one write
			}
			if err := WriteRun(&failingWriter{n: n}, f, run); err == nil || err.Error() != "disk full" && !strings.Contains(err.Error(), "disk full") {
				t.Errorf("%s run after %d writes: err = %v", f, n, err)
			}
			if err := WriteComparison(&failingWriter{n: n}, f, c); err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Errorf("%s comparison after %d writes: err = %v", f, n, err)
			}
		}
	}
}

func BenchmarkReports(b *testing.B) {
	run, c := runFixture(b), comparisonFixture(b)
	for _, f := range Formats() {
		b.Run("run/"+string(f), func(b *testing.B) {
			for b.Loop() {
				if err := WriteRun(&bytes.Buffer{}, f, run); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("compare/"+string(f), func(b *testing.B) {
			for b.Loop() {
				if err := WriteComparison(&bytes.Buffer{}, f, c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestShardInRan: a shard's run and a merged run say so on their Ran line,
// in every format that has one; a whole run by one process says nothing.
func TestShardInRan(t *testing.T) {
	for _, c := range []struct {
		tags map[string]string
		want string
	}{
		{map[string]string{"shard": "1", "shards": "3", "shard_plan": "ab12"}, "shard 1 of 3"},
		{map[string]string{"merged_shards": "0-2 of 3", "shards": "3", "shard_plan": "ab12"}, "merged from shards 0-2 of 3"},
		{nil, ""},
	} {
		run := runFixture(t)
		cmp := comparisonFixture(t)
		for _, s := range []*analyzer.Summary{run.Summary, cmp.Comparison.Baseline, cmp.Comparison.Candidate} {
			maps.Copy(s.Info.Settings, c.tags)
		}
		for _, f := range []Format{Text, Markdown, HTML} {
			var rb, cb bytes.Buffer
			if err := WriteRun(&rb, f, run); err != nil {
				t.Fatal(err)
			}
			if err := WriteComparison(&cb, f, cmp); err != nil {
				t.Fatal(err)
			}
			for name, out := range map[string]string{"run": rb.String(), "comparison": cb.String()} {
				if c.want != "" && !strings.Contains(out, "; "+c.want+";") {
					t.Errorf("%s %s: no %q in its Ran line:\n%.600s", name, f, c.want, out)
				}
				if c.want == "" && (strings.Contains(out, "merged from shards") || strings.Contains(out, " of 3;")) {
					t.Errorf("%s %s: a shard named for a whole run", name, f)
				}
			}
		}
	}
}

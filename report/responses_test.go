package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/internal/golden"
	"github.com/replaykit/replay/snapshots"
)

// fixtureAnswers is a side's answers to 20 exchanges of each endpoint,
// each answered twice, by body(endpoint, id, k) with header.
func fixtureAnswers(target string, body func(ep string, id int64, k int) (string, http.Header)) *analyzer.RunResponses {
	rr := &analyzer.RunResponses{Endpoints: map[string]*respdiff.Side{}}
	for _, ep := range []string{"GET /orders", "GET /orders/{id}/status", "POST /orders", "GET /catalog"} {
		s := &respdiff.Side{Host: target}
		for id := int64(1); id <= 20; id++ {
			for k := range 2 {
				b, h := body(ep, id, k)
				s.Add(id, respdiff.Answer{Status: 200, Header: h, Body: []byte(b)})
			}
		}
		rr.Endpoints[ep] = s
	}
	return rr
}

// behaviourFixture is the demo's comparison with the builds' answers: the
// N+1 in GET /orders answers the same (its timestamps are noise), GET
// /orders/{id}/status sends its id as a string, POST /orders drops a field
// and changes its Content-Type, GET /catalog reorders its list.
func behaviourFixture(t testing.TB) *ComparisonReport {
	base := fixtureSummary(t, info("baseline", "http://127.0.0.1:41001", 0), fixtureResults(2000, 11, true, baseEndpoints()))
	slow := baseEndpoints()
	slow[0].sql = []snapshots.SQLCount{listSQL, itemsSQL}
	slow[0].extra = 10 * ms
	cand := fixtureSummary(t, info("candidate", "http://127.0.0.1:41002", 0), fixtureResults(2000, 12, false, slow))
	stamp := 0
	answer := func(candidate bool) func(string, int64, int) (string, http.Header) {
		return func(ep string, id int64, k int) (string, http.Header) {
			stamp++
			h := http.Header{"Content-Type": {"application/json"}}
			at := fmt.Sprintf("2025-03-01T12:00:%02d.%03dZ", stamp%60, stamp)
			switch ep {
			case "GET /orders":
				return fmt.Sprintf(`{"orders":[{"id":%d,"items":3}],"generated_at":%q}`, id, at), h
			case "GET /orders/{id}/status":
				if candidate {
					return fmt.Sprintf(`{"id":"%d","status":"paid"}`, id), h
				}
				return fmt.Sprintf(`{"id":%d,"status":"paid"}`, id), h
			case "POST /orders":
				h.Set("Location", fmt.Sprintf("http://127.0.0.1:4100%d/orders/%d", map[bool]int{false: 1, true: 2}[candidate], id))
				if candidate {
					h.Set("Content-Type", "application/json; charset=utf-8")
					return fmt.Sprintf(`{"id":%d,"status":"new"}`, id), h
				}
				return fmt.Sprintf(`{"id":%d,"status":"new","customer_email":"c%d@example.com"}`, id, id), h
			}
			if candidate && id%4 == 0 {
				return `{"products":[{"sku":"b"},{"sku":"a"}]}`, h
			}
			return `{"products":[{"sku":"a"},{"sku":"b"}]}`, h
		}
	}
	base.Responses = fixtureAnswers(base.Info.Target, answer(false))
	cand.Responses = fixtureAnswers(cand.Info.Target, answer(true))
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &ComparisonReport{Comparison: c, Artifacts: []Artifact{{Name: "baseline run", Path: "out/baseline.run"}, {Name: "candidate run", Path: "out/candidate.run"}}}
}

func TestBehaviourGolden(t *testing.T) {
	r := behaviourFixture(t)
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := WriteComparison(&b, f, r); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "compare-behaviour"+f.Ext()+".golden", b.Bytes())
	}
}

// TestBehaviourFixture checks the facts the behaviour goldens show, and
// the JSON keys of endpoints[].responses.
func TestBehaviourFixture(t *testing.T) {
	r := behaviourFixture(t)
	c := r.Comparison
	want := map[string]struct{ cause, explanation string }{
		"GET /orders":             {analyzer.CauseNPlusOne, "N+1: "},
		"GET /orders/{id}/status": {analyzer.CauseBehaviour, "`$.id`: number 1 → string \"1\" in 40 of 40 responses; "},
		"POST /orders":            {analyzer.CauseBehaviour, "`$.customer_email` dropped (was string \"c1@example.com\") in 40 of 40 responses; 1 more difference (`header:Content-Type`); "},
		"GET /catalog":            {analyzer.CauseBehaviour, "`$.products` reordered (same 2 items, another order) in 10 of 40 responses; "},
	}
	for name, w := range want {
		e := c.Endpoint(name)
		if e.Verdict != analyzer.Regression || e.Cause != w.cause || !strings.HasPrefix(e.Explanation, w.explanation) {
			t.Errorf("%s: %s (%s) %q; want a regression (%s) explained by %q", name, e.Verdict, e.Cause, e.Explanation, w.cause, w.explanation)
		}
	}
	if o := c.Endpoint("GET /orders"); o.Responses.Differing != 0 || len(o.Responses.Ignored) != 1 || o.Responses.Ignored[0].Path != "$.generated_at" {
		t.Errorf("the N+1 with the same answers: %+v", o.Responses)
	}

	var b bytes.Buffer
	if err := ComparisonJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Endpoints []struct {
			Endpoint  string         `json:"endpoint"`
			Responses map[string]any `json:"responses"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range doc.Endpoints {
		hasKeys(t, e.Endpoint+" responses", e.Responses, map[string]string{"compared": "number", "differing": "number", "differences": "array", "ignored": "array"})
		for _, d := range e.Responses["differences"].([]any) {
			hasKeys(t, e.Endpoint+" difference", d.(map[string]any), map[string]string{"path": "string", "baseline": "string", "candidate": "string",
				"count": "number", "example": "object", "sentence": "string"})
		}
	}
	var md bytes.Buffer
	if err := ComparisonMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "<details><summary>Example: GET /orders/{id}/status, exchange 1 (- baseline, + candidate)</summary>\n\n```diff\n  {\n-   \"id\": 1,\n+   \"id\": \"1\",") {
		t.Errorf("Markdown lacks the collapsed example diff:\n%s", md.String())
	}
}

// checkFixture is a run checked against its recording: GET /orders/{id}/status
// answers its status in capitals; GET /orders carries its own timestamps.
func checkFixture(t testing.TB) *RunReport {
	r := runFixture(t)
	r.Goals = nil
	rc := &analyzer.ResponseCheck{}
	c, err := respdiff.Rules{}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range []string{"GET /orders/{id}/status", "GET /orders"} {
		var recorded []*snapshots.Exchange
		build := &respdiff.Side{Host: r.Summary.Info.Target}
		for id := int64(1); id <= 16; id++ {
			rec := fmt.Sprintf(`{"id":%d,"status":"paid"}`, id)
			if i == 1 {
				rec = fmt.Sprintf(`{"orders":[%d],"at":"2025-03-01T11:00:00Z"}`, id)
			}
			recorded = append(recorded, &snapshots.Exchange{ID: id, Service: "shop.test:80", Endpoint: ep, Status: 200,
				ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(rec), ResponseBodySize: int64(len(rec))})
			for k := range 2 {
				b := fmt.Sprintf(`{"id":%d,"status":"PAID"}`, id)
				if i == 1 {
					b = fmt.Sprintf(`{"orders":[%d],"at":"2025-03-01T12:00:%02dZ"}`, id, k)
				}
				build.Add(id, respdiff.Answer{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(b)})
			}
		}
		s := c.Check(build, respdiff.RecordedSide(recorded))
		rc.Endpoints = append(rc.Endpoints, analyzer.EndpointResponses{Endpoint: ep, Responses: s})
		rc.Compared += s.Compared
		rc.Differing += s.Differing
	}
	r.Responses = rc
	return r
}

func TestCheckGolden(t *testing.T) {
	r := checkFixture(t)
	if r.Passed() || r.Responses.Differing != 32 {
		t.Fatalf("passed %v with %d differing; want failed with 32", r.Passed(), r.Responses.Differing)
	}
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := WriteRun(&b, f, r); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, "run-check"+f.Ext()+".golden", b.Bytes())
	}
}

// TestBehaviourAA: two runs of one build whose answers carry timestamps,
// UUIDs and request ids pass, and say the answers were compared.
func TestBehaviourAA(t *testing.T) {
	base := fixtureSummary(t, info("baseline", "http://127.0.0.1:41001", 0), fixtureResults(2000, 11, true, baseEndpoints()))
	cand := fixtureSummary(t, info("candidate", "http://127.0.0.1:41002", 0), fixtureResults(2000, 12, false, baseEndpoints()))
	n := 0
	answer := func(ep string, id int64, k int) (string, http.Header) {
		n++
		h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {fmt.Sprint(n)}}
		return fmt.Sprintf(`{"id":%d,"at":"2025-03-01T12:00:%02dZ","uuid":"%08x-4d2f","request_id":"r%d"}`, id, n%60, n*7919, n), h
	}
	base.Responses = fixtureAnswers(base.Info.Target, answer)
	cand.Responses = fixtureAnswers(cand.Info.Target, answer)
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{Responses: respdiff.Rules{Headers: []string{"X-Request-Id"}}})
	if err != nil {
		t.Fatal(err)
	}
	r := &ComparisonReport{Comparison: c}
	if got := NewComparisonDocument(r).Settings.Responses; got == nil || !slices.Equal(got.Headers, []string{"X-Request-Id"}) {
		t.Errorf("settings.responses %+v, want the rules given", got)
	}
	if got := NewComparisonDocument(behaviourFixture(t)).Settings.Responses; got != nil {
		t.Errorf("settings.responses %+v without rules, want none", got)
	}
	for _, e := range c.Endpoints {
		if e.Responses == nil || e.Responses.Differing != 0 || len(e.Responses.Ignored) != 4 {
			t.Errorf("%s: %+v", e.Endpoint, e.Responses)
		}
	}
	c.Endpoints = slices.DeleteFunc(c.Endpoints, func(e *analyzer.EndpointComparison) bool { return e.Verdict == analyzer.Inconclusive })
	if next := comparisonNext(r, plain); !r.Passed() || len(next) != 1 || next[0] != "Nothing to fix: no endpoint got slower, ran more SQL or answered otherwise." {
		t.Errorf("A/A: passed %v, next %q", r.Passed(), next)
	}
}

// TestHashSampleNote: a comparison that hashed the answers of 1 in N
// exchanges says so in JSON, text and Markdown; one that hashed all, not.
func TestHashSampleNote(t *testing.T) {
	for _, n := range []int64{0, 1, 8} {
		s := &respdiff.Summary{Compared: 10, Sampled: 4, Hashed: 6, HashedOneIn: n}
		rs := []endpointResponses{{"GET /x", s}}
		var text, md bytes.Buffer
		writeResponsesText(&errWriter{w: &text}, rs, buildLabels)
		writeResponsesMarkdown(&errWriter{w: &md}, rs, buildLabels)
		doc := responsesDoc(s)
		want := "the answers to 1 in 8 of the exchanges"
		if got := strings.Contains(text.String(), want) && strings.Contains(md.String(), want); got != (n == 8) || (doc.HashedOneIn == 8) != (n == 8) {
			t.Errorf("1 in %d: note in text and Markdown %v, JSON %d:\n%s\n%s", n, got, doc.HashedOneIn, text.String(), md.String())
		}
	}
}

package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/golden"
)

// TestUpstreamGolden: an HTTP N+1 is the regression's explanation in every
// format, the calls per request are listed, and the JSON has them under
// endpoints[].upstream.
func TestUpstreamGolden(t *testing.T) {
	r := upstreamFixture(t)
	const sentence = "HTTP N+1: `GET /catalog` calls `catalog.demo.test GET /products/{id}` 10 times per request (baseline 0), adding 2 ms upstream time per request"
	for _, f := range []Format{Text, JSON, Markdown, HTML} {
		t.Run(string(f), func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteComparison(&b, f, r); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			want := sentence
			if f == HTML {
				want = "catalog.demo.test GET /products/{id}</code></td><td class=\"n\">0</td><td class=\"n\">10</td>"
			}
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", f, want, out)
			}
			golden.Check(t, "compare-upstream"+f.Ext()+".golden", b.Bytes())
		})
	}

	var doc struct {
		Verdict   string `json:"verdict"`
		Endpoints []struct {
			Endpoint        string `json:"endpoint"`
			Cause           string `json:"cause"`
			UpstreamVerdict string `json:"upstream_verdict"`
			UpstreamCall    string `json:"upstream_call"`
			Candidate       struct {
				UpstreamPerRequest *float64 `json:"upstream_per_request"`
			} `json:"candidate"`
			Upstream []struct {
				Service             string  `json:"service"`
				Endpoint            string  `json:"endpoint"`
				BaselinePerRequest  float64 `json:"baseline_per_request"`
				CandidatePerRequest float64 `json:"candidate_per_request"`
			} `json:"upstream"`
		} `json:"endpoints"`
	}
	var b bytes.Buffer
	if err := ComparisonJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, e := range doc.Endpoints {
		if e.Endpoint != "GET /catalog" {
			if e.Upstream != nil || e.UpstreamVerdict != "" || e.Candidate.UpstreamPerRequest != nil {
				t.Errorf("%s has upstream figures without a mock's counts", e.Endpoint)
			}
			continue
		}
		if e.Cause != "upstream-n+1" || e.UpstreamVerdict != "regression" || e.UpstreamCall != "catalog.demo.test GET /products/{id}" ||
			len(e.Upstream) != 2 || e.Upstream[0].Endpoint != "GET /products/{id}" || e.Upstream[0].CandidatePerRequest != 10 ||
			e.Candidate.UpstreamPerRequest == nil || *e.Candidate.UpstreamPerRequest != 11 {
			t.Errorf("GET /catalog in JSON: %+v", e)
		}
	}
	if doc.Verdict != "regression" {
		t.Errorf("verdict %s", doc.Verdict)
	}
}

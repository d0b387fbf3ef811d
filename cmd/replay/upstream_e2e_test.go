package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/replaykit/replay/examples/orders/catalog"
	"github.com/replaykit/replay/snapshots"
)

// upstreamJSON is the part of `replay compare --format json` about the
// calls to mocked services.
type upstreamJSON struct {
	Verdict   string `json:"verdict"`
	Endpoints []struct {
		Endpoint        string `json:"endpoint"`
		Verdict         string `json:"verdict"`
		Cause           string `json:"cause"`
		Explanation     string `json:"explanation"`
		UpstreamVerdict string `json:"upstream_verdict"`
		UpstreamCall    string `json:"upstream_call"`
		Upstream        []struct {
			Service             string  `json:"service"`
			Endpoint            string  `json:"endpoint"`
			BaselinePerRequest  float64 `json:"baseline_per_request"`
			CandidatePerRequest float64 `json:"candidate_per_request"`
		} `json:"upstream"`
	} `json:"endpoints"`
	MockMisses struct{ Baseline, Candidate int64 } `json:"mock_misses"`
}

// TestCompareUpstreamNPlusOne compares the demo with a build whose GET
// /catalog calls the catalog API once per product (APP_UPSTREAM_N1=1), on a
// real PostgreSQL with the catalog mocked from a recording that holds the
// list and one product's details: the HTTP N+1 is the regression's cause,
// named; the same build on both sides names none.
func TestCompareUpstreamNPlusOne(t *testing.T) {
	env := newOrdersEnv(t)
	detail := httptest.NewRecorder()
	catalog.Handler().ServeHTTP(detail, httptest.NewRequest("GET", "/products/SKU-1001", nil))
	env.snap = filepath.Join(env.dir, "upstream.snap")
	writeOrdersSnapshot(t, env.snap, &snapshots.Exchange{Direction: snapshots.Outbound, Protocol: "https", Service: "catalog.demo.test:443",
		Method: "GET", URL: "https://catalog.demo.test/products/SKU-1001", RequestHeader: http.Header{"Accept": {"application/json"}},
		Status: 200, ResponseHeader: detail.Header(), ResponseBody: detail.Body.Bytes(), ResponseBodySize: int64(detail.Body.Len())})

	const call = "catalog.demo.test GET /products/{id}"
	t.Run("N+1", func(t *testing.T) {
		code, _, raw, stderr, out := env.compare(t, "upstream-n1", "--baseline-env", "APP_UPSTREAM_N1=0", "--candidate-env", "APP_UPSTREAM_N1=1",
			"--format", "text,markdown")
		if code != exitRegression {
			t.Fatalf("exit %d, want 99; stderr: %s", code, stderr)
		}
		doc := decodeUpstream(t, raw)
		txt, _ := os.ReadFile(filepath.Join(out, "report.txt"))
		md, _ := os.ReadFile(filepath.Join(out, "report.md"))
		for _, r := range []string{string(txt), string(md)} {
			if !strings.Contains(r, "calls `"+call+"` 10 times per request (baseline 0)") || !strings.Contains(r, "Upstream calls per request") {
				t.Errorf("a report lacks the HTTP N+1 or the upstream calls:\n%s", r)
			}
		}
		if doc.MockMisses.Baseline+doc.MockMisses.Candidate != 0 {
			t.Errorf("mock misses %+v, want none", doc.MockMisses)
		}
		for _, e := range doc.Endpoints {
			if e.Endpoint != "GET /catalog" {
				if strings.HasPrefix(e.Cause, "upstream") || e.UpstreamVerdict == "regression" {
					t.Errorf("%s: %s (%s): %s; want no upstream evidence", e.Endpoint, e.Verdict, e.Cause, e.Explanation)
				}
				continue
			}
			want := "HTTP N+1: `GET /catalog` calls `" + call + "` 10 times per request (baseline 0)"
			if e.Verdict != "regression" || e.Cause != "upstream-n+1" || e.UpstreamCall != call || !strings.HasPrefix(e.Explanation, want) {
				t.Errorf("GET /catalog: %s (%s, %q): %s; want a regression explained %q", e.Verdict, e.Cause, e.UpstreamCall, e.Explanation, want)
			}
			got := map[string][2]float64{}
			for _, u := range e.Upstream {
				got[u.Service+" "+u.Endpoint] = [2]float64{u.BaselinePerRequest, u.CandidatePerRequest}
			}
			if got[call] != [2]float64{0, 10} || got["catalog.demo.test GET /products"] != [2]float64{1, 1} {
				t.Errorf("GET /catalog upstream calls per request %v", got)
			}
		}
	})

	t.Run("A/A", func(t *testing.T) {
		code, _, raw, stderr, _ := env.compareAA(t, "upstream-aa", "--baseline-env", "APP_UPSTREAM_N1=1", "--candidate-env", "APP_UPSTREAM_N1=1", "--format", "text")
		if code != exitOK && !couldNotTell(t, code, stderr) {
			t.Fatalf("exit %d, want 0; stderr: %s", code, stderr)
		}
		doc := decodeUpstream(t, raw)
		for _, e := range doc.Endpoints {
			if strings.HasPrefix(e.Cause, "upstream") || e.UpstreamVerdict == "regression" || strings.Contains(e.Explanation, "HTTP N+1") {
				t.Errorf("A/A: %s: %s (%s): %s", e.Endpoint, e.Verdict, e.Cause, e.Explanation)
			}
			if e.Endpoint == "GET /catalog" && (e.UpstreamVerdict != "unchanged" || len(e.Upstream) != 2) {
				t.Errorf("A/A: GET /catalog upstream %s, %+v; want unchanged, both calls listed", e.UpstreamVerdict, e.Upstream)
			}
		}
	})
}

func decodeUpstream(t *testing.T, raw string) upstreamJSON {
	t.Helper()
	var doc upstreamJSON
	schematest.Check(t, "comparison", []byte(raw))
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("stdout is not the comparison JSON: %v\n%s", err, raw)
	}
	return doc
}

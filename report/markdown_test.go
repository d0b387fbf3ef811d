package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// manyEndpoints compares two runs of n endpoints of perEndpoint requests
// each; the first slow of them run an N+1 in the candidate.
func manyEndpoints(t *testing.T, n, perEndpoint, slow int) *ComparisonReport {
	t.Helper()
	var eps, slowEps []fixEndpoint
	for i := range n {
		e := fixEndpoint{name: fmt.Sprintf("GET /api/v1/accounts/{id}/resource-%03d", i), weight: 1, median: 3 * ms, sql: []snapshots.SQLCount{statusSQL}}
		eps = append(eps, e)
		if i < slow {
			e.sql, e.extra = []snapshots.SQLCount{listSQL, itemsSQL}, 20*ms
		}
		slowEps = append(slowEps, e)
	}
	base := fixtureSummary(t, info("baseline", "http://127.0.0.1:41001", 0), fixtureResults(n*perEndpoint, 11, true, eps))
	cand := fixtureSummary(t, info("candidate", "http://127.0.0.1:41002", 0), fixtureResults(n*perEndpoint, 12, false, slowEps))
	c, err := analyzer.Compare(base, cand, analyzer.CompareOptions{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	return &ComparisonReport{Comparison: c, Artifacts: []Artifact{{Name: "baseline run", Path: "baseline.run"}}}
}

// TestMarkdownForPullRequests: of 500 endpoints, the changed ones come
// first in the table, the unchanged ones in one collapsed line, and the
// whole stays under MarkdownLimit.
func TestMarkdownForPullRequests(t *testing.T) {
	r := manyEndpoints(t, 500, 40, 12)
	var b bytes.Buffer
	if err := ComparisonMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if b.Len() > MarkdownLimit {
		t.Errorf("%d bytes, over %d", b.Len(), MarkdownLimit)
	}
	unchanged := r.Comparison.Counts[analyzer.Unchanged]
	if unchanged < 400 {
		t.Fatalf("the fixture has %d unchanged endpoints, want most of 500: %v", unchanged, r.Comparison.Counts)
	}
	lines := strings.Split(md, "\n")
	var rows, collapsed int
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "| GET /api") && collapsed == 0: // the Numbers table
			rows++
			if strings.HasSuffix(l, "| unchanged |") {
				t.Errorf("an unchanged endpoint has a row: %s", l)
			}
		case strings.HasPrefix(l, fmt.Sprintf("<details><summary>%d endpoints unchanged</summary>", unchanged)):
			collapsed++
			if strings.Count(l, "GET /api") != unchanged || strings.Contains(l, "more") {
				t.Errorf("the collapsed line names %d endpoints, want all %d", strings.Count(l, "GET /api"), unchanged)
			}
		}
	}
	if rows != 500-unchanged || collapsed != 1 {
		t.Errorf("%d rows and %d collapsed lines; want %d rows (every endpoint not unchanged) and 1", rows, collapsed, 500-unchanged)
	}
	first := strings.Index(md, "| GET /api")
	if !strings.HasPrefix(md[first:], "| GET /api/v1/accounts/{id}/resource-0") || !strings.Contains(md[first:strings.Index(md[first:], "\n")+first], "regression") {
		t.Errorf("the first row is not a regression:\n%s", md[first:first+200])
	}
	if strings.Contains(md, "Cut to stay under") {
		t.Errorf("cut, though it fits")
	}
}

// TestMarkdownCut: a comparison whose Markdown would pass the limit is cut,
// the changed endpoints kept first, with a note; the end of the report
// (Artifacts, Next) stays.
func TestMarkdownCut(t *testing.T) {
	r := manyEndpoints(t, 500, 8, 0) // too few requests: every endpoint inconclusive
	var full bytes.Buffer
	if err := comparisonMarkdown(&full, r, r.Comparison.Endpoints, len(r.Comparison.Endpoints)); err != nil {
		t.Fatal(err)
	}
	if full.Len() <= MarkdownLimit {
		t.Fatalf("the uncut report has %d bytes: not over the limit", full.Len())
	}
	var b bytes.Buffer
	if err := ComparisonMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if b.Len() > MarkdownLimit || b.Len() < MarkdownLimit*9/10 {
		t.Errorf("%d bytes; want just under %d", b.Len(), MarkdownLimit)
	}
	rows := strings.Count(md, "\n| GET /api")
	note := fmt.Sprintf("⚠️ Cut to stay under 60 KB, the size a pull-request comment allows: %d of 500 endpoints shown (the changed ones first)", rows)
	if rows == 0 || rows >= 500 || !strings.Contains(md, note) {
		t.Errorf("%d rows; want some and the note %q", rows, note)
	}
	if !strings.Contains(md, "**Artifacts:**") || !strings.Contains(md, "**Next:**") {
		t.Errorf("the cut report lost its end")
	}
	// A run report too.
	run := &RunReport{Summary: r.Comparison.Candidate}
	b.Reset()
	if err := RunMarkdown(&b, run); err != nil {
		t.Fatal(err)
	}
	if b.Len() > MarkdownLimit {
		t.Errorf("run: %d bytes", b.Len())
	}
}

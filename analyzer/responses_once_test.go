package analyzer

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestResponsesAnsweredOnce: when the baseline answered each request once,
// no noise can be learned, so an id the app makes up (a sequence) differs
// between the builds of an A/A: that is inconclusive, not a regression
// (CI's A/A of the demo's POST /orders read "`$.id`: number 62 → number 89
// in 1 of 2 responses" as a regression).
func TestResponsesAnsweredOnce(t *testing.T) {
	respTimes = 1
	defer func() { respTimes = 2 }()
	dir := t.TempDir()
	seq := 0
	created := func(id int64, k int) string {
		seq++
		return fmt.Sprintf(`{"id":%d,"status":"new"}`, 60+seq)
	}
	base := respRun(t, dir, noisy("baseline", 5), demoEndpoints(), map[string]answerFunc{"GET /orders/{id}/status": created})
	cand := respRun(t, dir, noisy("candidate", 5), demoEndpoints(), map[string]answerFunc{"GET /orders/{id}/status": created})
	c, err := CompareRuns(context.Background(), base, cand, SummarizeOptions{}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := c.Endpoint("GET /orders/{id}/status")
	if e.ResponseVerdict != Inconclusive || e.Verdict == Regression || !strings.Contains(e.Explanation, "noise unknown") {
		t.Errorf("%s (answers %s, cause %s): %q; want inconclusive answers, noise unknown", e.Verdict, e.ResponseVerdict, e.Cause, e.Explanation)
	}
	if e.Responses == nil || e.Responses.Differing == 0 {
		t.Errorf("responses %+v: want the differences still listed", e.Responses)
	}
}

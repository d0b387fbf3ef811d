package analyzer

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/replaykit/replay/snapshots"
)

// writeRun writes results to a new run file and returns its path.
func writeRun(t testing.TB, dir string, info snapshots.RunInfo, results []*snapshots.Result) string {
	t.Helper()
	path := filepath.Join(dir, info.Name+".run")
	w, err := snapshots.CreateRun(path, info)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		c := *r
		w.Add(&c)
	}
	if err := w.Close(info); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunFileRoundTrip: a run written to a run file and read back gives the
// same summary as the results in memory, and CompareRuns works on files.
func TestRunFileRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bs, cs := noisy("baseline", 5), noisy("candidate", 5)
	bs.n, cs.n = 1500, 1500
	bs.misses, cs.misses = 0, 3
	slow := demoEndpoints()
	slow[0].sql = []snapshots.SQLCount{listSQL, {Fingerprint: itemsFP, Count: 50, Duration: 10 * ms}}
	slow[0].extra = 10 * ms
	baseResults := collect(synthResults(bs, demoEndpoints()))
	candResults := collect(synthResults(cs, slow))
	bi, ci := bs.info(), cs.info()
	bi.Settings = map[string]string{"vus": "8"}
	ci.Settings = map[string]string{"vus": "8"}
	basePath := writeRun(t, dir, bi, baseResults)
	candPath := writeRun(t, dir, ci, candResults)

	mem, err := Summarize(ctx, bi, fromSlice(baseResults), SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := snapshots.OpenRun(basePath)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	file, err := SummarizeRun(ctx, run, SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := []cmp.Option{cmpopts.IgnoreUnexported(EndpointSummary{}), cmpopts.EquateEmpty(), cmpopts.EquateApprox(0, 1e-9)}
	if diff := cmp.Diff(mem, file, opts...); diff != "" {
		t.Errorf("summary from the run file differs (-memory +file):\n%s", diff)
	}

	cand, err := snapshots.OpenRun(candPath)
	if err != nil {
		t.Fatal(err)
	}
	defer cand.Close()
	c, err := CompareRuns(ctx, run, cand, SummarizeOptions{}, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Verdict != Regression || c.Endpoints[0].Endpoint != "GET /orders" || c.Endpoints[0].Cause != CauseNPlusOne || c.MockMisses != [2]int64{0, 3} {
		t.Errorf("verdict %s, first %s (%s), misses %v", c.Verdict, c.Endpoints[0].Endpoint, c.Endpoints[0].Cause, c.MockMisses)
	}
	for _, e := range c.Endpoints[1:] {
		if e.Verdict == Regression {
			t.Errorf("%s: regression: %s", e.Endpoint, e.Explanation)
		}
	}
}

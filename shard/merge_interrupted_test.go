package shard

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// A merge of shards of which one was interrupted is interrupted too (issue
// 23): its report must never read as a pass. Its latency, summarized from
// the merged results, is over the answered requests alone, as a single
// run's.
func TestMergeOfAnInterruptedShardIsInterrupted(t *testing.T) {
	dir := t.TempDir()
	const total, n = 300, 3
	var paths []string
	for k := range n {
		path := filepath.Join(dir, fmt.Sprintf("p1-%d-of-%d.run", k, n))
		paths = append(paths, writeRun(t, path, Spec{k, n}, "p1", total, func(g int) bool { return g%n == k }))
	}
	// Shard 1 again, interrupted after its first 40 results.
	interrupted := filepath.Join(dir, "p1-1-of-3-interrupted.run")
	settings := map[string]string{"model": "closed", "vus": "6"}
	for k, v := range (Spec{1, n}).Tags("p1") {
		settings[k] = v
	}
	info := snapshots.RunInfo{Name: "run", Snapshot: "s.snap", Target: "http://127.0.0.1:1", Started: t0, Settings: settings}
	w, err := snapshots.CreateRun(interrupted, info)
	if err != nil {
		t.Fatal(err)
	}
	for g := 1; g < 120; g += n {
		w.Add(result(g))
	}
	info.Ended, info.Interrupted = t0.Add(120*time.Millisecond), true
	if err := w.Close(info); err != nil {
		t.Fatal(err)
	}
	paths[1] = interrupted

	merged := filepath.Join(dir, "merged.run")
	if err := Merge(context.Background(), merged, paths); err != nil {
		t.Fatal(err)
	}
	r, err := snapshots.OpenRun(merged)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Info().Interrupted {
		t.Error("the merge of an interrupted shard is not marked interrupted")
	}
	s := summarize(t, merged)
	for _, e := range append(s.Endpoints, s.Overall) {
		if e.Failed == 0 {
			continue
		}
		if answered := e.Requests - e.Failed; e.Latency.Count != answered || e.Histogram.Total() != answered {
			t.Errorf("%q: latency over %d values, histogram %d; want the %d answered of %d requests",
				e.Endpoint, e.Latency.Count, e.Histogram.Total(), answered, e.Requests)
		}
	}
	// The complete shards alone merge into a run that was not interrupted.
	whole := filepath.Join(dir, "whole.run")
	paths[1] = filepath.Join(dir, "p1-1-of-3.run")
	if err := Merge(context.Background(), whole, paths); err != nil {
		t.Fatal(err)
	}
	if summarize(t, whole).Info.Interrupted {
		t.Error("a merge of complete shards is marked interrupted")
	}
}

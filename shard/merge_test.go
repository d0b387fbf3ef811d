package shard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// result is the g-th request of a deterministic run: its endpoint, its
// latency (skewed: every 50th request of /slow takes 400 ms), its SQL,
// its upstream calls and a failure now and then.
func result(g int) *snapshots.Result {
	eps := []string{"GET /orders", "GET /orders/{id}", "POST /orders", "GET /slow"}
	ep := eps[g%len(eps)]
	lat := time.Duration(1+(g*7919)%23) * time.Millisecond
	if ep == "GET /slow" && g%50 == 3 {
		lat = 400 * time.Millisecond
	}
	in := t0.Add(time.Duration(g) * time.Millisecond)
	r := &snapshots.Result{Phase: snapshots.PhaseLoad, ExchangeID: int64(g%40 + 1), Endpoint: ep, Method: "GET", URL: "/x",
		Intended: in, Sent: in.Add(time.Millisecond / 2), Done: in.Add(lat), Status: 200, RecordedStatus: 200, Bytes: 700,
		SQLCounted: true, SQL: []snapshots.SQLCount{{Fingerprint: "SELECT * FROM orders WHERE id = ?", Count: 1 + g%3, Duration: time.Millisecond}},
		UpstreamCounted: true, Upstream: []snapshots.UpstreamCount{{Service: "catalog:443", Endpoint: "GET /items", Count: 1, Duration: time.Millisecond}}}
	if g%97 == 0 {
		r.Status, r.Error = 0, "connection reset"
	}
	return r
}

// writeRun writes the results g of [0, total) that keep selects, tagged as
// spec of plan (untagged for the zero spec), and returns its path.
func writeRun(t *testing.T, path string, spec Spec, plan string, total int, keep func(g int) bool) string {
	t.Helper()
	settings := map[string]string{"model": "closed", "vus": "6"}
	if spec.Sharded() {
		for k, v := range spec.Tags(plan) {
			settings[k] = v
		}
	}
	info := snapshots.RunInfo{Name: "run", Snapshot: "s.snap", Target: "http://127.0.0.1:1", Started: t0, Settings: settings}
	w, err := snapshots.CreateRun(path, info)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(0)
	for g := range total {
		if keep(g) {
			w.Add(result(g))
			w.AddResponseHashes([]snapshots.ResponseHash{{ExchangeID: int64(g%40 + 1), Endpoint: result(g).Endpoint, Status: 200, Hash: 42, Count: 1}})
			n++
		}
	}
	w.AddResponse(&snapshots.ResponseSample{ExchangeID: int64(spec.K + 1), Endpoint: "GET /orders", Phase: snapshots.PhaseLoad, Status: 200, Body: []byte(`{}`), BodySize: 2})
	info.Ended = t0.Add(time.Duration(total) * time.Millisecond)
	info.MockMisses, info.Statements, info.StatementErrors = n%7, 2*n, 1
	info.LoadSQL = &snapshots.LoadSQL{Statements: 2 * n, Total: time.Duration(n) * time.Millisecond,
		Fingerprints: []snapshots.LoadFingerprint{{Fingerprint: "SELECT 1", Count: n, Total: time.Millisecond}, {Fingerprint: fmt.Sprintf("SELECT k=%d", spec.K), Count: n}}}
	info.Wiring = &snapshots.Wiring{SQLAddr: "127.0.0.1:5", SQLConnections: 2, MockAddr: "127.0.0.1:6", MockCalls: n,
		SQLClients: []snapshots.SQLClient{{App: "replay-run", Connections: 2, Statements: 2 * n}}}
	if err := w.Close(info); err != nil {
		t.Fatal(err)
	}
	return path
}

// shards writes the n shard run files of a total-request run.
func shards(t *testing.T, dir, plan string, n, total int) []string {
	var paths []string
	for k := range n {
		paths = append(paths, writeRun(t, filepath.Join(dir, fmt.Sprintf("%s-%d-of-%d.run", plan, k, n)), Spec{k, n}, plan, total, func(g int) bool { return g%n == k }))
	}
	return paths
}

func summarize(t *testing.T, path string) *analyzer.Summary {
	t.Helper()
	r, err := snapshots.OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s, err := analyzer.SummarizeRun(context.Background(), r, analyzer.SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A merge of three shards equals the single-process run: the same requests
// per endpoint, the same latency histograms and percentiles (the shards'
// raw results, never their percentiles averaged), SQL and upstream calls.
func TestMergeEqualsTheSingleRun(t *testing.T) {
	dir := t.TempDir()
	const total = 3000
	single := writeRun(t, filepath.Join(dir, "single.run"), Spec{}, "", total, func(int) bool { return true })
	merged := filepath.Join(dir, "merged.run")
	if err := Merge(context.Background(), merged, shards(t, dir, "p1", 3, total)); err != nil {
		t.Fatal(err)
	}
	want, got := summarize(t, single), summarize(t, merged)
	opts := []cmp.Option{cmpopts.IgnoreUnexported(analyzer.EndpointSummary{}), cmpopts.EquateEmpty()}
	if diff := cmp.Diff(want.Endpoints, got.Endpoints, opts...); diff != "" {
		t.Errorf("merged endpoints differ from the single run's (-single +merged):\n%s", diff)
	}
	if diff := cmp.Diff(want.Overall, got.Overall, opts...); diff != "" {
		t.Errorf("merged overall differs (-single +merged):\n%s", diff)
	}
	if got.Overall.Requests != total || got.Duration != want.Duration {
		t.Errorf("merged: %d requests over %v; want %d over %v", got.Overall.Requests, got.Duration, total, want.Duration)
	}
}

// What the run files count besides results adds up.
func TestMergeAddsUpCounts(t *testing.T) {
	dir := t.TempDir()
	paths := shards(t, dir, "p1", 3, 300)
	merged := filepath.Join(dir, "merged.run")
	if err := Merge(context.Background(), merged, paths); err != nil {
		t.Fatal(err)
	}
	r, err := snapshots.OpenRun(merged)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	info := r.Info()
	// Shards of 100 results each: 100 % 7 = 2 misses, 200 statements each.
	if info.MockMisses != 6 || info.Statements != 600 || info.StatementErrors != 3 {
		t.Errorf("misses %d, statements %d, errors %d; want 6, 600, 3", info.MockMisses, info.Statements, info.StatementErrors)
	}
	if l := info.LoadSQL; l == nil || l.Statements != 600 || len(l.Fingerprints) != 4 || l.Fingerprints[0].Fingerprint != "SELECT 1" || l.Fingerprints[0].Count != 300 {
		t.Errorf("load SQL %+v; want 600 statements, SELECT 1 300 times first, 4 fingerprints", l)
	}
	if w := info.Wiring; w == nil || w.MockCalls != 300 || w.SQLConnections != 6 || len(w.SQLClients) != 1 || w.SQLClients[0].Statements != 600 {
		t.Errorf("wiring %+v; want 300 mock calls, 6 connections, one client of 600 statements", w)
	}
	if info.Settings[TagIndex] != "" || info.Settings[TagMerged] != "0-2 of 3" || info.Settings[TagPlan] != "p1" {
		t.Errorf("settings %v; want no shard index, merged 0-2 of 3, the plan kept", info.Settings)
	}
	var samples, hashed int64
	if err := r.Responses(func(*snapshots.ResponseSample) error { samples++; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := r.ResponseHashes(func(h snapshots.ResponseHash) error { hashed += h.Count; return nil }); err != nil {
		t.Fatal(err)
	}
	if samples != 3 || hashed != 300 {
		t.Errorf("%d samples, %d answers hashed; want 3 and 300", samples, hashed)
	}
	if k, n, plan, ok := Info(paths[1]); !ok || k != 1 || n != 3 || plan != "p1" {
		t.Errorf("Info(shard 1) = %d, %d, %q, %v", k, n, plan, ok)
	}
	if _, _, _, ok := Info(merged); ok {
		t.Error("Info(merged run) ok; a merged run is no shard")
	}
}

func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	p1 := shards(t, dir, "p1", 3, 30)
	p2 := shards(t, dir, "p2", 3, 30)
	of2 := shards(t, dir, "p1", 2, 30)
	plain := writeRun(t, filepath.Join(dir, "plain.run"), Spec{}, "", 30, func(int) bool { return true })
	for _, tc := range []struct {
		name string
		runs []string
		want error
		says string
	}{
		{"missing", p1[:2], ErrMissing, "shard 2/3"},
		{"duplicate", []string{p1[0], p1[1], p1[1], p1[2]}, ErrDuplicate, "shard 1/3"},
		{"another plan", []string{p1[0], p1[1], p2[2]}, ErrMismatch, "plan p2"},
		{"another N", []string{p1[0], of2[1]}, ErrMismatch, "of 2"},
		{"not a shard", []string{p1[0], plain}, ErrNotShard, "plain.run"},
	} {
		out := filepath.Join(dir, tc.name+".run")
		err := Merge(context.Background(), out, tc.runs)
		if !errors.Is(err, tc.want) || !contains(err, tc.says) {
			t.Errorf("%s: %v; want %v naming %q", tc.name, err, tc.want, tc.says)
		}
		if _, serr := os.Stat(out); serr == nil {
			t.Errorf("%s: %s written", tc.name, out)
		}
	}
}

func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// The merged run's load runs from the first shard's start to the last
// one's end; a shard without a window (an older run file) leaves the merge
// none, so its span comes from the results.
func TestMergeSpansTheShardsLoads(t *testing.T) {
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	info := func(k, start, end int) snapshots.RunInfo {
		in := snapshots.RunInfo{Settings: map[string]string{TagIndex: fmt.Sprint(k)}}
		if start >= 0 {
			in.LoadStarted, in.LoadEnded = ms(start), ms(end)
		}
		return in
	}
	got := mergeInfo([]snapshots.RunInfo{info(0, 20, 600), info(1, 10, 650), info(2, 15, 620)})
	if !got.LoadStarted.Equal(ms(10)) || !got.LoadEnded.Equal(ms(650)) {
		t.Errorf("merged load %v to %v, want %v to %v", got.LoadStarted, got.LoadEnded, ms(10), ms(650))
	}
	for _, infos := range [][]snapshots.RunInfo{{info(0, -1, 0), info(1, 10, 650)}, {info(0, 20, 600), info(1, -1, 0)}} {
		if got := mergeInfo(infos); !got.LoadStarted.IsZero() || !got.LoadEnded.IsZero() {
			t.Errorf("a shard without a load window: merged %v to %v, want none", got.LoadStarted, got.LoadEnded)
		}
	}
}

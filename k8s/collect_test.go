package k8s

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/replaykit/replay/internal/k8stest"
	"github.com/replaykit/replay/internal/runlog"
	"github.com/replaykit/replay/shard"
	"github.com/replaykit/replay/snapshots"
)

// shardRun writes shard k of n's run file, tagged as replay run --shard
// tags it, with results for positions i ≡ k (mod n) of 30 requests over
// two endpoints, and returns what replay run --print-run prints: a report,
// then the run file between the markers.
func shardRun(t *testing.T, plan string, k, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("shard%d.run", k))
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w, err := snapshots.CreateRun(path, snapshots.RunInfo{Name: "load", Snapshot: "/snap/o.snap", Target: "http://orders:8080",
		Started: start, Settings: shard.Spec{K: k, N: n}.Tags(plan)})
	if err != nil {
		t.Fatal(err)
	}
	for i := k; i < 30; i += n {
		ep := []string{"GET /orders", "GET /orders/{id}"}[i%2]
		at := start.Add(time.Duration(i) * 10 * time.Millisecond)
		w.Add(&snapshots.Result{Phase: snapshots.PhaseLoad, ExchangeID: int64(i + 1), Endpoint: ep, Method: "GET", URL: "/orders",
			Intended: at, Sent: at, Done: at.Add(time.Duration(1+i) * time.Millisecond), Status: 200, RecordedStatus: 200})
	}
	if err := w.Close(snapshots.RunInfo{Ended: start.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "run load: %d requests\n", (30-k+n-1)/n)
	if err := runlog.EncodeFile(&out, path); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func indexedJob(n int, conds ...batchv1.JobCondition) *batchv1.Job {
	m := &Manifest{Shards: n, Image: "img", Namespace: "load", Name: "ld", Deadline: time.Hour}
	_, job := m.Objects()
	job.Status.Conditions = conds
	return job
}

// pod is shard k's pod as the Job controller makes it.
func pod(k int, phase corev1.PodPhase) *corev1.Pod {
	return k8stest.Pod("load", "ld", k, fmt.Sprintf("x%d", k), phase)
}

func failedPod(k int, code int32, lastLine string) *corev1.Pod {
	p := pod(k, corev1.PodFailed)
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: Container, State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: "Error", Message: "run load: starting\n" + lastLine + "\n"}}}}
	return p
}

// collect collects job ld from an API server serving objs, with logs
// (pod name → text; other pods log "fake logs"), through client-go.
func collect(t *testing.T, logs map[string]string, objs ...runtime.Object) (string, Collected, error) {
	t.Helper()
	srv := k8stest.New(t, objs...)
	for p, text := range logs {
		srv.SetLog("load", p, text)
	}
	cluster, err := NewCluster(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "merged.run")
	res, err := Collect(t.Context(), CollectConfig{Cluster: cluster, Namespace: "load", Job: "ld", Out: out})
	return out, res, err
}

// TestCollect: three shards' pods succeeded; their logs hold their run
// files, which collect merges into one run file with every request.
func TestCollect(t *testing.T) {
	l := map[string]string{}
	for k := range 3 {
		l[fmt.Sprintf("ld-%d-x%d", k, k)] = shardRun(t, "plan1", k, 3)
	}
	complete := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	// A pod of another job in the namespace is not listed.
	other := pod(0, corev1.PodSucceeded)
	other.Name, other.Labels[LabelJobName] = "other-0-a", "other"
	out, res, err := collect(t, l, indexedJob(3, complete), pod(2, corev1.PodSucceeded), pod(0, corev1.PodSucceeded), pod(1, corev1.PodSucceeded), other)
	if err != nil {
		t.Fatal(err)
	}
	if res.Shards != 3 || res.LogBytes <= 0 || res.RunBytes <= 0 {
		t.Errorf("collected %+v", res)
	}
	run, err := snapshots.OpenRun(out)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	per := map[string]int{}
	ids := map[int64]bool{}
	for r, err := range run.Results(t.Context()) {
		if err != nil {
			t.Fatal(err)
		}
		per[r.Endpoint]++
		ids[r.ExchangeID] = true
	}
	if per["GET /orders"] != 15 || per["GET /orders/{id}"] != 15 || len(ids) != 30 {
		t.Errorf("merged: %v, %d distinct requests; want 15 per endpoint, 30 requests", per, len(ids))
	}
}

// TestCollectRefuses: a failed pod (named, with why), a failed Job, a
// running one, a missing shard, a log without its run file, a run file of
// another shard, and another plan's shard all make the run invalid and
// nothing is merged.
func TestCollectRefuses(t *testing.T) {
	good := map[string]string{}
	for k := range 3 {
		good[fmt.Sprintf("ld-%d-x%d", k, k)] = shardRun(t, "plan1", k, 3)
	}
	swapped := map[string]string{"ld-0-x0": good["ld-0-x0"], "ld-1-x1": good["ld-2-x2"], "ld-2-x2": good["ld-1-x1"]}
	otherPlan := map[string]string{"ld-0-x0": good["ld-0-x0"], "ld-1-x1": shardRun(t, "plan2", 1, 3), "ld-2-x2": good["ld-2-x2"]}
	ok := func(k int) *corev1.Pod { return pod(k, corev1.PodSucceeded) }
	deadline := batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}
	evicted := pod(2, corev1.PodFailed)
	evicted.Status.Reason, evicted.Status.Message = "Evicted", "The node was low on resource: memory."
	dup := ok(1)
	dup.Name = "ld-1-y1"
	for _, c := range []struct {
		name string
		logs map[string]string
		objs []runtime.Object
		want []string
	}{
		{"a failed pod", good, []runtime.Object{indexedJob(3), ok(0), failedPod(1, shard.ExitNeverCame, "replay: barrier: a shard never came"), ok(2)},
			[]string{"run is invalid", "pod ld-1-x1 (shard 1/3) failed", "exit code 22", `"replay: barrier: a shard never came"`}},
		{"an evicted pod", good, []runtime.Object{indexedJob(3), ok(0), ok(1), evicted},
			[]string{"pod ld-2-x2 (shard 2/3) failed: Evicted, The node was low on resource: memory."}},
		{"the job failed", good, []runtime.Object{indexedJob(3, deadline), ok(0), ok(1)},
			[]string{"the job failed: DeadlineExceeded"}},
		{"still running", good, []runtime.Object{indexedJob(3), ok(0), pod(1, corev1.PodRunning), ok(2)},
			[]string{"has not finished", "ld-1-x1 (shard 1, Running)", "kubectl wait"}},
		{"a missing shard", good, []runtime.Object{indexedJob(3), ok(0), ok(2)},
			[]string{"no succeeded pod for shard 1 of 3"}},
		{"a shard twice", good, []runtime.Object{indexedJob(3), ok(0), ok(1), dup, ok(2)},
			[]string{"shard 1/3 succeeded twice"}},
		{"no job", good, []runtime.Object{ok(0)}, []string{`no job "ld" in namespace "load"`}},
		{"the fake clientset's own logs", nil, []runtime.Object{indexedJob(3), ok(0), ok(1), ok(2)},
			[]string{"pod ld-0-x0 (shard 0/3)", "no run file in the output", "containerLogMaxSize"}},
		{"the logs swapped", swapped, []runtime.Object{indexedJob(3), ok(0), ok(1), ok(2)},
			[]string{"pod ld-1-x1 is shard 1/3 of the job, but its run file is shard 2/3"}},
		{"another plan", otherPlan, []runtime.Object{indexedJob(3), ok(0), ok(1), ok(2)},
			[]string{"shards of different plans"}},
	} {
		out, _, err := collect(t, c.logs, c.objs...)
		if err == nil {
			t.Errorf("%s: collected", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
		if _, serr := snapshots.OpenRun(out); serr == nil {
			t.Errorf("%s: a merged run file was written", c.name)
		}
	}
	_, _, err := collect(t, good, indexedJob(3), ok(0), pod(1, corev1.PodPending), ok(2))
	if !errors.Is(err, ErrNotFinished) {
		t.Errorf("a pending pod: %v, want ErrNotFinished", err)
	}
}

package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/replaykit/replay/internal/k8stest"
	"github.com/replaykit/replay/internal/runlog"
)

// TestRunPrintRun: replay run --print-run ends stdout with the run file,
// which decodes to the very file --out wrote, after the report; a run
// that misses its goal (exit 99) prints it too.
func TestRunPrintRun(t *testing.T) {
	snap := runSnapshot(t, "GET /a", "GET /b", "POST /c")
	target := newRunTarget(t, 0)
	for _, c := range []struct {
		name string
		args []string
		code int
	}{
		{"passed", nil, 0},
		{"goal missed", []string{"--goal", "p95<1ns"}, exitRegression},
	} {
		out := filepath.Join(t.TempDir(), "shard.run")
		args := append([]string{"--snapshot", snap, "--target", target.URL, "--iterations", "2", "--out", out, "--print-run"}, c.args...)
		code, stdout, stderr := replayRun(t, args...)
		if code != c.code {
			t.Fatalf("%s: exit %d, want %d; stderr:\n%s", c.name, code, c.code, stderr)
		}
		report, _, found := strings.Cut(stdout, runlog.Begin)
		if !found || !strings.Contains(report, "GET /a") {
			t.Fatalf("%s: stdout is not the report then the run file:\n%s", c.name, stdout)
		}
		var got bytes.Buffer
		if _, err := runlog.Decode(strings.NewReader(stdout), &got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: stdout holds %d bytes, the run file is %d", c.name, got.Len(), len(want))
		}
	}
	// Without the flag, nothing of it.
	code, stdout, _ := replayRun(t, "--snapshot", snap, "--target", target.URL, "--iterations", "1", "--out", filepath.Join(t.TempDir(), "r.run"))
	if code != 0 || strings.Contains(stdout, runlog.Begin) {
		t.Errorf("without --print-run: exit %d, stdout holds the run file: %v", code, strings.Contains(stdout, runlog.Begin))
	}
}

// TestK8sManifestCLI: the manifest through the CLI; run flags are checked
// against replay run's own, bad usage exits 2 with one line.
func TestK8sManifestCLI(t *testing.T) {
	code, stdout, stderr := cliRun(t, "", "k8s", "manifest", "--shards", "4", "--image", "registry.local/replay:dev",
		"--snapshot", "/snap/o.snap", "--target", "http://orders:8080", "--vus", "40", "--duration", "2m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"kind: Service", "clusterIP: None", "kind: Job", "completionMode: Indexed", "completions: 4", "parallelism: 4",
		"backoffLimitPerIndex: 0", "maxFailedIndexes: 0", "restartPolicy: Never", "subdomain: replay", "- /snap/o.snap", "- --vus\n        - \"40\"",
		"- --shard\n        - /4", "- --barrier\n        - replay-0.replay:7077", "- --print-run"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the manifest lacks %q", want)
		}
	}
	for _, args := range [][]string{
		{"--shards", "4", "--image", "i", "--snapshot", "s", "--vus", "many"},       // run's own check of --vus
		{"--shards", "4", "--image", "i", "--", "--snapshot", "s", "--shards", "2"}, // the manifest's
		{"--shards", "4", "--image", "i", "--snapshot", "s", "--no-such-flag"},
		{"--image", "i"},
	} {
		code, stdout, stderr := cliRun(t, "", append([]string{"k8s", "manifest"}, args...)...)
		if code != exitUsage || stdout != "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line", args, code, stdout, stderr)
		}
	}
	// Without --snapshot every pod would fail: the flag is named.
	if code, stdout, stderr := cliRun(t, "", "k8s", "manifest", "--shards", "2", "--image", "x", "--", "--target", "http://a"); code != exitUsage ||
		stdout != "" || !strings.Contains(stderr, "--snapshot SNAP is required") {
		t.Errorf("manifest without --snapshot: exit %d, stdout %q, stderr %q; want exit 2 naming --snapshot", code, stdout, stderr)
	}
	if code, stdout, _ := cliRun(t, "", "k8s", "manifest", "--help"); code != 0 || !strings.Contains(stdout, "backoffLimitPerIndex 0") {
		t.Errorf("k8s manifest --help: exit %d:\n%s", code, stdout)
	}
	if code, _, stderr := cliRun(t, "", "k8s", "collect", "--namespace", "NS", "--out", "x.run"); code != exitUsage || !strings.Contains(stderr, `--namespace "NS"`) {
		t.Errorf("k8s collect --namespace NS: exit %d, %s", code, stderr)
	}
	if code, _, stderr := cliRun(t, "", "k8s", "collect"); code != exitUsage || !strings.Contains(stderr, "--out FILE is required") {
		t.Errorf("k8s collect without --out: exit %d, %s", code, stderr)
	}
}

// TestK8sEndToEnd plays a cluster's part with real processes: the shards
// run the very command the manifest gives each pod (k from
// JOB_COMPLETION_INDEX, the barrier on loopback for shard 0's DNS name),
// their whole output is the pods' logs, and replay k8s collect reads them
// with its own client (kubeconfig, client-go) from an API server on
// loopback holding the Job and its pods (the fake clientset's objects). A goal the shards miss fails
// none of them (the verdict is the merged run's); the merged run holds
// what replay merge of the run files holds, and replay report judges it.
func TestK8sEndToEnd(t *testing.T) {
	bin, dir := buildReplay(t), t.TempDir()
	snap := runSnapshot(t, "GET /orders", "GET /orders/1", "GET /orders/2", "POST /orders", "GET /catalog")
	tg := newRunTarget(t, 0)
	code, yml, stderr := cliRun(t, "", "k8s", "manifest", "--shards", "3", "--image", "img", "--namespace", "load", "--name", "ld",
		"--snapshot", snap, "--target", tg.URL, "--vus", "3", "--iterations", "4", "--goal", "p99<1ns")
	if code != 0 {
		t.Fatalf("manifest: exit %d %s", code, stderr)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(strings.Split(yml, "\n---\n")[1]), &job); err != nil {
		t.Fatal(err)
	}
	command := job.Spec.Template.Spec.Containers[0].Command
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	barrier := ln.Addr().String()
	ln.Close()
	objs := []runtime.Object{&job}
	logs := make([]string, 3)
	runs := make([]string, 3)
	var wg sync.WaitGroup
	for k := range 3 {
		runs[k] = filepath.Join(dir, fmt.Sprintf("pod%d.run", k))
		args := slices.Clone(command[1:])
		args[slices.Index(args, "--barrier")+1] = barrier
		args[slices.Index(args, "--out")+1] = runs[k]
		objs = append(objs, k8stest.Pod("load", "ld", k, "abcde", corev1.PodSucceeded))
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX="+strconv.Itoa(k))
			out, err := cmd.CombinedOutput() // a pod's log: stdout and stderr
			if err != nil {
				t.Errorf("shard %d: %v\n%s", k, err, out)
			}
			logs[k] = string(out)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	api := k8stest.New(t, objs...)
	for k, text := range logs {
		api.SetLog("load", fmt.Sprintf("ld-%d-abcde", k), text)
	}
	merged := filepath.Join(dir, "merged.run")
	code, _, stderr = cliRun(t, "", "k8s", "collect", "--kubeconfig", api.Kubeconfig(t), "--namespace", "load", "--job", "ld", "--out", merged)
	if code != 0 || !strings.Contains(stderr, "merged 3 shards of job ld") {
		t.Fatalf("collect: exit %d %s", code, stderr)
	}
	code, _, stderr = cliRun(t, "", "k8s", "collect", "--kubeconfig", api.Kubeconfig(t), "--namespace", "load", "--job", "gone", "--out", filepath.Join(dir, "x.run"))
	if code != exitError || stderr != "replay: collect: no job \"gone\" in namespace \"load\"\n" {
		t.Errorf("collect of a job not there: exit %d %q", code, stderr)
	}
	code, _, stderr = cliRun(t, "", "k8s", "collect", "--kubeconfig", api.Kubeconfig(t), "--namespace", "load", "--job", "ld", "--out", merged)
	if code != exitError || !strings.Contains(stderr, "merged.run exists") {
		t.Errorf("collect into an existing file: exit %d %q", code, stderr)
	}
	direct := filepath.Join(dir, "direct.run")
	if code, msg := runBin(t, bin, "merge", "--out", direct, runs[0], runs[1], runs[2]); code != 0 {
		t.Fatalf("merge: exit %d %s", code, msg)
	}
	got, want := sent(t, merged), sent(t, direct)
	total := 0
	for _, n := range got {
		total += n
	}
	if diff := cmp.Diff(want, got); diff != "" || total != 4*5 {
		t.Errorf("collected %d requests; per exchange (-merge +collect):\n%s", total, diff)
	}
	if code, out, _ := cliRun(t, "", "report", merged); code != exitRegression || !strings.Contains(out, "p99<1ns") {
		t.Errorf("report of the merged run: exit %d, want %d (the goal missed):\n%s", code, exitRegression, out)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

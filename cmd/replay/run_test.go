package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/replaykit/replay/snapshots"
)

// runSnapshot writes a snapshot of inbound requests (method and path each)
// and returns its path.
func runSnapshot(t *testing.T, reqs ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.snap")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, r := range reqs {
		method, path, _ := strings.Cut(r, " ")
		start = start.Add(10 * time.Millisecond)
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "app.local:8080", Start: start,
			Duration: time.Millisecond, Method: method, URL: "http://app.local:8080" + path,
			RequestHeader: http.Header{"Accept": {"application/json"}, "Authorization": {"[REDACTED]"}}, Status: 200})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// runTarget is a loopback app that counts the requests it serves.
type runTarget struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []*http.Request
}

func newRunTarget(t *testing.T, delay time.Duration) *runTarget {
	t.Helper()
	rt := &runTarget{}
	rt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt.mu.Lock()
		rt.reqs = append(rt.reqs, r.Clone(context.Background()))
		rt.mu.Unlock()
		time.Sleep(delay)
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	t.Cleanup(rt.Close)
	return rt
}

func (rt *runTarget) count() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.reqs)
}

func replayRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"run"}, args...), streams{in: strings.NewReader(""), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

// runJSON is the part of `replay run --format json` that DESIGN.md fixes.
type runJSON struct {
	Passed   bool  `json:"passed"`
	Requests int64 `json:"requests"`
	Failed   int64 `json:"failed"`
	Goals    []struct {
		Goal   string  `json:"goal"`
		Passed bool    `json:"passed"`
		Actual float64 `json:"actual"`
	} `json:"goals"`
	Endpoints []struct {
		Endpoint      string  `json:"endpoint"`
		Requests      int64   `json:"requests"`
		Failed        int64   `json:"failed"`
		AvgMs         float64 `json:"avg_ms"`
		P50Ms         float64 `json:"p50_ms"`
		P95Ms         float64 `json:"p95_ms"`
		P99Ms         float64 `json:"p99_ms"`
		SQLPerRequest float64 `json:"sql_per_request"`
	} `json:"endpoints"`
}

func decodeRunJSON(t *testing.T, stdout string) runJSON {
	t.Helper()
	schematest.Check(t, "run", []byte(stdout))
	var v runJSON
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("stdout is not the run JSON: %v\n%s", err, stdout)
	}
	return v
}

func TestRunUsageErrors(t *testing.T) {
	snap := runSnapshot(t, "GET /a")
	out := filepath.Join(t.TempDir(), "x.run")
	base := []string{"--snapshot", snap, "--out", out}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no snapshot", []string{"--target", "http://127.0.0.1:1", "--out", out}, "--snapshot SNAP is required"},
		{"no out", []string{"--snapshot", snap, "--target", "http://127.0.0.1:1"}, "--out RUN is required"},
		{"no target", base, "--target URL or --cmd COMMAND"},
		{"both targets", append(base, "--target", "http://x", "--cmd", "true"), "give one"},
		{"env without cmd", append(base, "--target", "http://x", "--env", "A=1"), "--env applies to --cmd"},
		{"bad target", append(base, "--target", "127.0.0.1:8080"), "want an http:// or https:// URL"},
		{"rate and vus", append(base, "--target", "http://x", "--rate", "10/s", "--vus", "3"), "--vus and --rate select different load models (closed, open, as recorded); give one model"},
		{"rate and speed", append(base, "--target", "http://x", "--rate", "10/s", "--speed", "2"), "--rate and --speed"},
		{"stage and duration", append(base, "--target", "http://x", "--stage", "1s:3", "--duration", "1s"), "--stage"},
		{"bad rate", append(base, "--target", "http://x", "--rate", "fast"), "--rate"},
		{"bad stage", append(base, "--target", "http://x", "--stage", "10"), "DURATION:TARGET"},
		{"zero vus", append(base, "--target", "http://x", "--vus", "0"), "--vus 0"},
		{"bad header", append(base, "--target", "http://x", "--header", "nocolon"), "'Name: value'"},
		{"bad goal", append(base, "--target", "http://x", "--goal", "p95 fast"), "--goal"},
		{"bad format", append(base, "--target", "http://x", "--format", "yaml"), "--format"},
		{"bad postgres", append(base, "--target", "http://x", "--postgres", "5432"), "LISTEN=HOST:PORT"},
		{"bad mock", append(base, "--target", "http://x", "--mock", "catalog"), "HOST:PORT"},
		{"bad endpoint", append(base, "--target", "http://x", "--endpoint", "orders"), "--endpoint"},
		{"unknown flag", append(base, "--target", "http://x", "--users", "3"), "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := replayRun(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line mentioning %q", code, stderr, tt.want)
			}
		})
	}
}

func TestRunGoalsPassAndFail(t *testing.T) {
	snap := runSnapshot(t, "GET /orders", "GET /orders/1", "GET /orders", "GET /catalog")
	rt := newRunTarget(t, 0)
	dir := t.TempDir()

	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", rt.URL, "--out", filepath.Join(dir, "pass.run"),
		"--iterations", "3", "--vus", "2", "--format", "json",
		"--goal", "success>99%", "--goal", "p99<10s", "--goal", "GET /orders: p95<10s")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	v := decodeRunJSON(t, stdout)
	if !v.Passed || v.Requests != 12 || v.Failed != 0 || len(v.Goals) != 3 {
		t.Errorf("json %+v; want passed, 12 requests, 3 goals", v)
	}
	if rt.count() != 12 {
		t.Errorf("target served %d requests, want 12", rt.count())
	}
	if len(v.Endpoints) != 3 || v.Endpoints[0].Endpoint != "GET /orders" || v.Endpoints[0].Requests != 6 {
		t.Errorf("endpoints %+v; want GET /orders first with 6 requests", v.Endpoints)
	}

	code, stdout, stderr = replayRun(t, "--snapshot", snap, "--target", rt.URL, "--out", filepath.Join(dir, "fail.run"),
		"--goal", "p95<1us", "--goal", "success>99%")
	if code != exitRegression {
		t.Fatalf("exit %d, stderr %s; want 99 for a missed goal", code, stderr)
	}
	for _, want := range []string{"FAIL", "p95<1us", "PASS", "success>99%", "GET /orders", "GET /catalog"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, stdout)
		}
	}
	if stderr != "" {
		t.Errorf("stderr %q, want nothing (the report says why)", stderr)
	}

	code, stdout, _ = replayRun(t, "--snapshot", snap, "--target", rt.URL, "--out", filepath.Join(dir, "fail2.run"),
		"--format", "json", "--goal", "GET /orders: p99<1us")
	v = decodeRunJSON(t, stdout)
	if code != exitRegression || v.Passed || v.Goals[0].Passed || v.Goals[0].Actual <= 0 {
		t.Errorf("exit %d json %+v; want 99 and the failed goal with its actual value", code, v)
	}
}

func TestRunWritesTheRunFile(t *testing.T) {
	snap := runSnapshot(t, "GET /a", "POST /b", "GET /c/7")
	rt := newRunTarget(t, 0)
	out := filepath.Join(t.TempDir(), "r.run")
	code, _, stderr := replayRun(t, "--snapshot", snap, "--target", rt.URL, "--out", out, "--iterations", "2",
		"--header", "Authorization: Bearer t0ken", "--header", "X-Route: blue", "--endpoint", "GET *", "--name", "baseline")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	run, err := snapshots.OpenRun(out)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	info := run.Info()
	if info.Name != "baseline" || info.Snapshot != snap || info.Target != rt.URL || info.Ended.Before(info.Started) {
		t.Errorf("info %+v", info)
	}
	for k, want := range map[string]string{"model": "closed", "vus": "1", "iterations": "2", "endpoints": "GET *",
		"headers": "Authorization: [REDACTED]; X-Route: blue"} {
		if info.Settings[k] != want {
			t.Errorf("settings[%q] = %q, want %q (all: %v)", k, info.Settings[k], want, info.Settings)
		}
	}
	var n int
	for r, err := range run.Results(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if r.Method != "GET" || r.Status != 200 || r.Phase != snapshots.PhaseLoad || len(r.TraceID) != 32 {
			t.Errorf("result %+v", r)
		}
	}
	if n != 4 || rt.count() != 4 {
		t.Errorf("%d results, target served %d; want 4 (2 GETs × 2 iterations)", n, rt.count())
	}
	for _, r := range rt.reqs {
		if r.Header.Get("Authorization") != "Bearer t0ken" || r.Header.Get("X-Route") != "blue" || r.Header.Get("Traceparent") == "" {
			t.Errorf("target got headers %v", r.Header)
		}
	}
	// The run file is never overwritten.
	code, _, stderr = replayRun(t, "--snapshot", snap, "--target", rt.URL, "--out", out)
	if code != exitError || !strings.Contains(stderr, "exists") {
		t.Errorf("rerun into %s: exit %d, %q", out, code, stderr)
	}
}

func TestRunOpenModelReportsAStalledTarget(t *testing.T) {
	snap := runSnapshot(t, "GET /slow")
	release := make(chan struct{})
	rt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer rt.Close()
	defer close(release)
	out := filepath.Join(t.TempDir(), "r.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", rt.URL, "--out", out, "--rate", "40/s",
		"--duration", "500ms", "--max-inflight", "2", "--timeout", "300ms", "--format", "json", "--goal", "success>50%")
	if code != exitRegression {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	v := decodeRunJSON(t, stdout)
	if v.Requests != 20 || v.Failed != 20 {
		t.Errorf("json %+v; want all 20 requests failed", v)
	}
	if !strings.Contains(stderr, "target fell behind") || !strings.Contains(stderr, "could not be sent") {
		t.Errorf("stderr %q; want the stall explained", stderr)
	}
	run, err := snapshots.OpenRun(out)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	notSent := 0
	for r, err := range run.Results(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Error == "not sent: target stalled" {
			notSent++
		}
	}
	if notSent == 0 || run.Info().Settings["not_sent"] != strconv.Itoa(notSent) {
		t.Errorf("%d results not sent, settings %v", notSent, run.Info().Settings)
	}
}

// helperAppSource is a tiny app for --cmd: it writes its pid and
// environment into $OUTDIR and serves on $PORT.
const helperAppSource = `package main

import (
	"net/http"
	"os"
	"strconv"
	"strings"
)

func main() {
	dir := os.Getenv("OUTDIR")
	os.WriteFile(dir+"/env", []byte(strings.Join(os.Environ(), "\n")), 0o644)
	os.WriteFile(dir+"/pid", []byte(strconv.Itoa(os.Getpid())), 0o644)
	os.Stdout.WriteString("helper listening on " + os.Getenv("PORT") + "\n")
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	if err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), nil); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}
`

// buildHelperApp compiles helperAppSource and returns the binary.
func buildHelperApp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte(helperAppSource), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "app")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build helper app: %v\n%s", err, out)
	}
	return bin
}

// processGone reports whether pid has ended (a zombie counts as ended).
func processGone(pid int) bool {
	st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err != nil || strings.Contains(string(st), ") Z ") || strings.Contains(string(st), ") X ")
}

func TestRunStartsAndStopsABuild(t *testing.T) {
	bin := buildHelperApp(t)
	snap := runSnapshot(t, "GET /a", "GET /b")
	dir := t.TempDir()
	out := filepath.Join(dir, "r.run")
	caDir := filepath.Join(dir, "ca")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--out", out, "--cmd", bin, "--env", "OUTDIR="+dir,
		"--env", "DATABASE_URL=postgres://u@127.0.0.1:5999/db?sslmode=disable", "--postgres", "127.0.0.1:0=127.0.0.1:5999",
		"--explain", "0", "--mock", "all", "--ca-dir", caDir, "--iterations", "3")
	if code != exitError || !strings.Contains(stderr, "run: 1 wiring fault, so the figures do not measure what they claim: the SQL counter") { // no SQL
		t.Fatalf("exit %d, want 1 for the SQL counter that saw nothing: %s", code, stderr)
	}
	if strings.Contains(stdout, "HTTP_PROXY") {
		t.Errorf("stdout %q: the proxy settings are printed only for a --target build", stdout)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal("the build did not start: ", err)
	}
	pid, _ := strconv.Atoi(string(b))
	deadline := time.Now().Add(10 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("build process %d still running after replay run ended", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	envText, _ := os.ReadFile(filepath.Join(dir, "env"))
	env := map[string]string{}
	for _, kv := range strings.Split(string(envText), "\n") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	run, err := snapshots.OpenRun(out)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	target := run.Info().Target
	if env["PORT"] == "" || target != "http://127.0.0.1:"+env["PORT"] {
		t.Errorf("target %q, build PORT %q", target, env["PORT"])
	}
	sqlAddr := env["REPLAY_SQLCOUNT_ADDR"]
	if sqlAddr == "" || env["DATABASE_URL"] != "postgres://u@"+sqlAddr+"/db?sslmode=disable" {
		t.Errorf("DATABASE_URL %q, REPLAY_SQLCOUNT_ADDR %q; want the database address pointing at sqlcount", env["DATABASE_URL"], sqlAddr)
	}
	if !strings.HasPrefix(env["HTTPS_PROXY"], "http://127.0.0.1:") || env["HTTP_PROXY"] != env["HTTPS_PROXY"] ||
		env["NO_PROXY"] != "localhost,127.0.0.1,::1" || env["SSL_CERT_FILE"] == "" || env["NODE_EXTRA_CA_CERTS"] != filepath.Join(caDir, "ca.pem") {
		t.Errorf("proxy and CA settings: %v", env)
	}
	n := 0
	for r, err := range run.Results(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if r.Status != 200 || r.Failed() {
			t.Errorf("result %+v", r)
		}
	}
	if n != 6 {
		t.Errorf("%d results, want 6", n)
	}
	log, err := os.ReadFile(out + ".build.log")
	if err != nil || !strings.Contains(string(log), "helper listening on "+env["PORT"]) {
		t.Errorf("build log %q, %v", log, err)
	}
}

func TestRunBuildThatExitsAtOnce(t *testing.T) {
	snap := runSnapshot(t, "GET /a")
	out := filepath.Join(t.TempDir(), "r.run")
	code, _, stderr := replayRun(t, "--snapshot", snap, "--out", out, "--cmd", "echo 'listen: address in use' >&2; exit 1")
	want := `replay: build "echo 'listen: address in use' >&2; exit 1" exited with status 1 before answering on port `
	if code != exitError || !strings.HasPrefix(stderr, want) || !strings.HasSuffix(stderr, ": listen: address in use (logs kept: "+out+".build.log)\n") {
		t.Errorf("exit %d, stderr %q; want exit 1 and %q…", code, stderr, want)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a run file was left behind for a run that never started")
	}
	if b, err := os.ReadFile(out + ".build.log"); err != nil || !strings.Contains(string(b), "address in use") {
		t.Errorf("the build log with the build's output was not kept: %q, %v", b, err)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/replaykit/replay/internal/golden"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func replayCompare(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"compare"}, args...), streams{in: strings.NewReader(""), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

func TestCompareUsageErrors(t *testing.T) {
	snap := runSnapshot(t, "GET /a")
	dir := t.TempDir()
	runA, runB := goldenRuns(t, dir)
	live := []string{"--snapshot", snap, "--baseline-url", "http://127.0.0.1:1", "--candidate-url", "http://127.0.0.1:2", "--out", filepath.Join(dir, "out")}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "--snapshot SNAP is required"},
		{"one run file", []string{runA}, "two run files RUN_A RUN_B (got 1 arguments)"},
		{"no baseline", []string{"--snapshot", snap, "--candidate-url", "http://x"}, "give the baseline build: --baseline-url URL or --baseline-cmd COMMAND"},
		{"no candidate", []string{"--snapshot", snap, "--baseline-cmd", "true"}, "give the candidate build"},
		{"both baseline", append(live, "--baseline-cmd", "true"), "--baseline-url and --baseline-cmd both name the baseline build"},
		{"env without cmd", append(live, "--candidate-env", "A=1"), "--candidate-env applies to --candidate-cmd"},
		{"common env without cmd", append(live, "--env", "A=1"), "--env applies to --baseline-cmd/--candidate-cmd"},
		{"bad env", []string{"--snapshot", snap, "--baseline-cmd", "x", "--baseline-env", "A", "--candidate-url", "http://x"}, `--baseline-env "A": want KEY=VALUE`},
		{"bad url", []string{"--snapshot", snap, "--baseline-url", "localhost:8080", "--candidate-url", "http://x"}, `--baseline-url "localhost:8080": want an http:// or https:// URL`},
		{"unknown format", append(live, "--format", "pdf"), `--format "pdf": want text, json, markdown, junit or html`},
		{"vus", append(live, "--vus", "0"), "--vus 0: want at least 1"},
		{"vus and rate", append(live, "--vus", "2", "--rate", "10/s"), "--vus and --rate select different load models (closed, open, as recorded); give one model"},
		{"bad rate", append(live, "--rate", "fast"), "--rate"},
		{"duration", append(live, "--duration", "0s"), "--duration 0s: want a positive duration per side"},
		{"slices and sequential", append(live, "--slices", "10", "--sequential"), "--slices applies to an interleaved comparison"},
		{"slices too short", append(live, "--duration", "1s", "--slices", "40"), "slices shorter than 50ms"},
		{"bad postgres", append(live, "--postgres", "5432"), `--postgres "5432": want HOST:PORT of PostgreSQL`},
		{"bad mock", append(live, "--mock", "catalog"), `--mock "catalog": want HOST:PORT`},
		{"bad goal", append(live, "--goal", "p95<<1"), "--goal"},
		{"concurrent and sequential", append(live, "--concurrent", "--sequential"), "--concurrent and --sequential are two orders of measurement"},
		{"bad min cpu change", append(live, "--min-cpu-change", "5"), `--min-cpu-change "5": want one percentage above 0`},
		{"bad header", append(live, "--baseline-header", "nocolon"), `header "nocolon": want 'Name: value'`},
		{"run files and snapshot", []string{runA, runB, "--snapshot", snap}, "--snapshot SNAP for a live comparison or two run files, not both"},
		{"run files and vus", []string{runA, runB, "--vus", "3"}, "compare RUN_A RUN_B: --vus applies to a live comparison"},
		{"run files, two formats", []string{runA, runB, "--format", "text,json"}, "several formats need --out DIR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := replayCompare(t, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line containing %q", code, stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
		})
	}
}

func TestCompareCannotRun(t *testing.T) {
	dir := t.TempDir()
	snap := runSnapshot(t, "GET /a")
	code, _, stderr := replayCompare(t, "--snapshot", filepath.Join(dir, "none.snap"), "--baseline-url", "http://127.0.0.1:1", "--candidate-url", "http://127.0.0.1:2", "--out", dir)
	if code != exitError || !strings.Contains(stderr, "none.snap") {
		t.Errorf("missing snapshot: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = replayCompare(t, filepath.Join(dir, "a.run"), filepath.Join(dir, "b.run"))
	if code != exitError || !strings.Contains(stderr, "a.run") {
		t.Errorf("missing run file: exit %d, stderr %q", code, stderr)
	}
	// A URL that never listens.
	code, _, stderr = replayCompare(t, "--snapshot", snap, "--baseline-url", "http://127.0.0.1:1", "--candidate-url", "http://127.0.0.1:1",
		"--start-timeout", "200ms", "--out", filepath.Join(dir, "x"))
	if code != exitError || !strings.HasPrefix(stderr, "replay: compare: baseline: target http://127.0.0.1:1 is not listening after 200ms") {
		t.Errorf("unreachable URL: exit %d, stderr %q", code, stderr)
	}
}

func TestParseComparePostgres(t *testing.T) {
	tests := []struct {
		spec   string
		listen [2]string
		server string
		ok     bool
	}{
		{"127.0.0.1:5432", [2]string{"127.0.0.1:0", "127.0.0.1:0"}, "127.0.0.1:5432", true},
		{"127.0.0.1:6543=db:5432", [2]string{"127.0.0.1:6543", "127.0.0.1:6544"}, "db:5432", true},
		{"127.0.0.1:0=db:5432", [2]string{"127.0.0.1:0", "127.0.0.1:0"}, "db:5432", true},
		{"127.0.0.1:7001,127.0.0.1:7005=db:5432", [2]string{"127.0.0.1:7001", "127.0.0.1:7005"}, "db:5432", true},
		{"5432", [2]string{}, "", false},
		{"x=db:5432", [2]string{}, "", false},
		{"127.0.0.1:1,x=db:5432", [2]string{}, "", false},
		{"127.0.0.1:65535=db:5432", [2]string{}, "", false},
	}
	for _, tt := range tests {
		p := postgresFlags{spec: tt.spec}
		l, server, err := p.parse("compare", 2)
		var listen [2]string
		copy(listen[:], l)
		if (err == nil) != tt.ok || (tt.ok && (listen != tt.listen || server != tt.server)) {
			t.Errorf("parse(%q) = %v, %q, %v; want %v, %q, ok %v", tt.spec, listen, server, err, tt.listen, tt.server, tt.ok)
		}
	}
}

// goldenRuns writes two run files of a comparison, the same on every call:
// ten interleaved slices; GET /orders has an N+1 in the candidate (1 → 51
// statements per request, 10 ms slower), the other endpoints are alike.
func goldenRuns(t *testing.T, dir string) (base, cand string) {
	t.Helper()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	list := snapshots.SQLCount{Fingerprint: "SELECT o.id, o.customer, o.status, o.created_at, (SELECT count(*) FROM order_items i WHERE i.order_id = o.id) FROM orders o ORDER BY o.id DESC LIMIT ?", Count: 1, Duration: 900 * time.Microsecond}
	listSlow := snapshots.SQLCount{Fingerprint: "SELECT id, customer, status, created_at FROM orders ORDER BY id DESC LIMIT ?", Count: 1, Duration: 500 * time.Microsecond}
	items := snapshots.SQLCount{Fingerprint: "SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = ?", Count: 50, Duration: 9 * time.Millisecond}
	status := snapshots.SQLCount{Fingerprint: "SELECT status FROM orders WHERE id = ?", Count: 1, Duration: 300 * time.Microsecond}
	insert := []snapshots.SQLCount{{Fingerprint: "begin", Count: 1, Duration: 100 * time.Microsecond},
		{Fingerprint: "INSERT INTO orders (customer) VALUES (?) RETURNING id, status, created_at", Count: 1, Duration: 600 * time.Microsecond},
		{Fingerprint: "INSERT INTO order_items (order_id, sku, qty, price_cents) SELECT ?, * FROM unnest(?::text[], ?::int[], ?::bigint[])", Count: 1, Duration: 700 * time.Microsecond},
		{Fingerprint: "commit", Count: 1, Duration: 900 * time.Microsecond}}
	type endpoint struct {
		name, path string
		status     int
		median     time.Duration
		sql        [2][]snapshots.SQLCount
		extra      time.Duration // added in the candidate
	}
	eps := []endpoint{
		{"GET /orders", "/orders", 200, 4 * time.Millisecond, [2][]snapshots.SQLCount{{list}, {listSlow, items}}, 10 * time.Millisecond},
		{"GET /orders/{id}", "/orders/3", 200, 3 * time.Millisecond, [2][]snapshots.SQLCount{{status}, {status}}, 0},
		{"GET /orders/{id}/status", "/orders/7/status", 200, 2 * time.Millisecond, [2][]snapshots.SQLCount{{status}, {status}}, 0},
		{"POST /orders", "/orders", 201, 8 * time.Millisecond, [2][]snapshots.SQLCount{insert, insert}, 0},
	}
	for side, name := range []string{"baseline", "candidate"} {
		rng := rand.New(rand.NewPCG(7, uint64(side)))
		path := filepath.Join(dir, name+".run")
		info := snapshots.RunInfo{Name: name, Snapshot: "orders.snap", Target: fmt.Sprintf("http://127.0.0.1:4100%d", side+1), Started: t0,
			Settings: map[string]string{"side": name, "load": "closed model, 1 VU, 2s per side", "vus": "1", "duration": "2s", "order": "interleaved",
				"slices": "10", "cmd": fmt.Sprintf("APP_SLOW=%d ./orders", side), "goals": "p95<500ms; GET /orders: sql<=5"},
			Statements: int64(1000 + 3000*side)}
		w, err := snapshots.CreateRun(path, info)
		if err != nil {
			t.Fatal(err)
		}
		add := func(phase string, slice int, e endpoint, at time.Time) time.Time {
			lat := time.Duration(float64(e.median) * (0.7 + 0.6*rng.Float64()))
			if side == 1 {
				lat += e.extra
			}
			w.Add(&snapshots.Result{Phase: phase, Slice: slice, ExchangeID: 1, Endpoint: e.name, Method: strings.Fields(e.name)[0], URL: e.path,
				Intended: at, Sent: at.Add(20 * time.Microsecond), Done: at.Add(lat), Status: e.status, RecordedStatus: e.status, Bytes: 512,
				SQLCounted: phase == snapshots.PhaseExplain, SQL: e.sql[side]})
			return at.Add(lat)
		}
		at := t0
		for _, e := range eps {
			for range 3 {
				at = add(snapshots.PhaseExplain, 0, e, at)
			}
		}
		for slice := 1; slice <= 10; slice++ {
			at := t0.Add(time.Duration(2*slice+side) * time.Second)
			for i := range 40 {
				at = add(snapshots.PhaseLoad, slice, eps[i%len(eps)], at)
			}
		}
		info.Ended = t0.Add(25 * time.Second)
		info.MockMisses = int64(2 * side)
		// Replay started both builds (settings' cmd): their CPU time per
		// slice of 40 requests, the candidate's 4% above the baseline's.
		info.BuildCPU = &snapshots.BuildCPU{}
		for slice := 1; slice <= 10; slice++ {
			us := []float64{250, 260}[side] * 40 * (1 + 0.02*float64((slice+side)%3-1))
			info.BuildCPU.Slices = append(info.BuildCPU.Slices, snapshots.SliceCPU{Slice: slice, CPU: time.Duration(us * float64(time.Microsecond)), Wall: time.Second})
		}
		if err := w.Close(info); err != nil {
			t.Fatal(err)
		}
		if side == 0 {
			base = path
		} else {
			cand = path
		}
	}
	return base, cand
}

// TestCompareRunFilesGolden compares two fixed run files offline, in text,
// JSON and Markdown.
func TestCompareRunFilesGolden(t *testing.T) {
	dir := t.TempDir()
	base, cand := goldenRuns(t, dir)
	for _, tt := range []struct{ format, golden string }{
		{"text", "compare.txt.golden"},
		{"json", "compare.json.golden"},
		{"markdown", "compare.md.golden"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			code, stdout, stderr := replayCompare(t, base, cand, "--format", tt.format, "--goal", "p95<500ms", "--goal", "GET /orders: sql<=5")
			if code != exitRegression {
				t.Fatalf("exit %d, want 99 (a regression); stderr %s", code, stderr)
			}
			golden.Check(t, tt.golden, []byte(strings.ReplaceAll(stdout, dir, "runs")))
		})
	}

	// With --out, every format is written there too and listed.
	out := filepath.Join(dir, "reports")
	code, stdout, stderr := replayCompare(t, base, cand, "--format", "json,markdown", "--out", out)
	if code != exitRegression {
		t.Fatalf("exit %d, want 99; stderr %s", code, stderr)
	}
	var doc struct {
		Verdict   string `json:"verdict"`
		Artifacts []struct{ Name, Path string }
	}
	schematest.Check(t, "comparison", []byte(stdout))
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	want := []struct{ Name, Path string }{{"baseline run", base}, {"candidate run", cand},
		{"JSON report", filepath.Join(out, "report.json")}, {"Markdown report", filepath.Join(out, "report.md")}}
	if diff := cmp.Diff(want, doc.Artifacts); diff != "" || doc.Verdict != "regression" {
		t.Errorf("verdict %s, artifacts (-want +got):\n%s", doc.Verdict, diff)
	}
	// The file names the reports beside it relative to its directory; the
	// run files, outside it, as given.
	if js, err := os.ReadFile(filepath.Join(out, "report.json")); err != nil || string(js) != strings.ReplaceAll(stdout, out+"/", "") {
		t.Errorf("report.json: %v, equal to stdout with paths relative to %s: %v\n%s", err, out, string(js) == stdout, js)
	}
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.HasPrefix(string(md), "### Result") {
		t.Errorf("report.md: %v\n%s", err, md)
	}

	// The same build on both sides: no regression, exit 0.
	code, stdout, _ = replayCompare(t, base, base, "--format", "json")
	if code != exitOK || !strings.Contains(stdout, `"verdict": "unchanged"`) {
		t.Errorf("a run compared with itself: exit %d\n%s", code, stdout)
	}
}

// TestCompareOneURLTwoHeaderSets compares two builds behind one address,
// told apart by a routing header, with a mock per side.
func TestCompareOneURLTwoHeaderSets(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "h.snap")
	w, err := snapshots.Create(snap, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, p := range []string{"/fast", "/slow", "/fast"} {
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "app:80", Start: start.Add(time.Duration(i) * time.Millisecond),
			Method: "GET", URL: "http://app" + p, Status: 200})
	}
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Outbound, Protocol: "https", Service: "api.test:443", Start: start, Method: "GET",
		URL: "https://api.test/v1", Status: 200, ResponseBody: []byte("{}"), ResponseBodySize: 2})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The routing key "pr" reaches a build whose /slow is 30ms slower. (Every
	// request takes 2ms, so that two virtual users don't load the machine.)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond)
		if r.URL.Path == "/slow" && r.Header.Get("Baggage") == "sd-routing-key=pr" {
			time.Sleep(30 * time.Millisecond)
		}
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	out := filepath.Join(dir, "out")
	code, stdout, stderr := replayCompare(t, "--snapshot", snap, "--baseline-url", srv.URL, "--candidate-url", srv.URL,
		"--baseline-header", "baggage: sd-routing-key=main", "--candidate-header", "baggage: sd-routing-key=pr",
		"--mock", "api.test:443", "--ca-dir", filepath.Join(dir, "ca"),
		"--duration", "2s", "--warmup", "0s", "--vus", "2", "--format", "json", "--out", out)
	if code != exitRegression {
		t.Fatalf("exit %d, want 99; stderr %s\n%s", code, stderr, stdout)
	}
	var doc compareJSON
	schematest.Check(t, "comparison", []byte(stdout))
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if v := verdicts(doc); v["GET /slow"] != "regression" || v["GET /fast"] == "regression" {
		t.Errorf("verdicts %v, want a regression in GET /slow only", v)
	}
	// Each side got its own mock, and the settings to start its build with.
	var proxies []string
	for line := range strings.Lines(stderr) {
		if i := strings.Index(line, "HTTPS_PROXY="); i >= 0 {
			proxies = append(proxies, strings.Fields(line[i:])[0])
		}
	}
	if len(proxies) != 2 || proxies[0] == proxies[1] || !strings.Contains(stderr, "start the baseline build with:") || !strings.Contains(stderr, "start the candidate build with:") {
		t.Errorf("stderr %q: want each side's own mock settings", stderr)
	}
	r, err := snapshots.OpenRun(filepath.Join(out, "candidate.run"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if h := r.Info().Settings["headers"]; h != "Baggage: sd-routing-key=pr" {
		t.Errorf("candidate run settings: headers %q", h)
	}
}

// TestCompareNotesManyFailures: when most requests fail, the report says so
// whatever the verdict.
func TestCompareNotesManyFailures(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var paths []string
	for side, status := range []int{404, 404} {
		path := filepath.Join(dir, fmt.Sprintf("%d.run", side))
		w, err := snapshots.CreateRun(path, snapshots.RunInfo{Name: "run", Started: t0})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 60 {
			at := t0.Add(time.Duration(i) * 10 * time.Millisecond)
			w.Add(&snapshots.Result{Phase: snapshots.PhaseLoad, Endpoint: "GET /a", Method: "GET", URL: "/a", Intended: at, Sent: at,
				Done: at.Add(time.Duration(2+i%3) * time.Millisecond), Status: status, RecordedStatus: 200})
		}
		if err := w.Close(snapshots.RunInfo{Name: "run", Started: t0, Ended: t0.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	_, stdout, stderr := replayCompare(t, paths[0], paths[1])
	want := "Note: 100% of the baseline's 60 requests failed (most often 404 Not Found); 100% of the candidate's 60 requests failed (most often 404 Not Found): check the builds' logs and the data (--reset) before trusting the latency figures"
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout lacks %q:\n%s%s", want, stdout, stderr)
	}
}

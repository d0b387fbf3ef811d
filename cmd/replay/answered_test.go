package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"
)

// Issue 23, item 5: latency percentiles are over answered requests alone.
// A target killed part way through the load fails the rest of its
// requests fast (connection refused); their fraction of a millisecond must
// not pull GET /orders' percentiles down, and an endpoint whose every
// request failed shows no latency at all, in run, report and compare.

// answeredJSON is the part of a run's JSON report about latency.
type answeredJSON struct {
	Endpoints []struct {
		Endpoint string   `json:"endpoint"`
		Requests int64    `json:"requests"`
		Failed   int64    `json:"failed"`
		Answered int64    `json:"answered"`
		AvgMs    *float64 `json:"avg_ms"`
		P50Ms    *float64 `json:"p50_ms"`
		P95Ms    *float64 `json:"p95_ms"`
		P99Ms    *float64 `json:"p99_ms"`
	} `json:"endpoints"`
}

// killedTarget serves GET /orders in 20 ms until it has answered 15, then
// closes (every later request is refused), and answers GET /dead with 500
// (recorded: 200) all along.
func killedTarget(t *testing.T) (url string, answered *atomic.Int64) {
	t.Helper()
	answered = new(atomic.Int64)
	var srv *httptest.Server
	var once sync.Once
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dead" {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte(`{"orders":[]}`))
		if answered.Add(1) == 15 {
			once.Do(func() { go srv.Close() }) // Close waits for this handler
		}
	}))
	t.Cleanup(func() { once.Do(srv.Close) })
	return srv.URL, answered
}

func TestLatencyOverAnsweredRequestsTargetKilled(t *testing.T) {
	url, answered := killedTarget(t)
	snap := runSnapshot(t, "GET /orders", "GET /dead")
	dir := t.TempDir()
	killed := filepath.Join(dir, "killed.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--out", killed, "--target", url, "--explain", "0",
		"--iterations", "60", "--vus", "1", "--max-failed", "100%", "--format", "json")
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s\nstderr: %s", code, stdout, stderr)
	}
	schematest.Check(t, "run", []byte(stdout))
	var d answeredJSON
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, e := range d.Endpoints {
		byName[e.Endpoint] = i
	}
	o := d.Endpoints[byName["GET /orders"]]
	if o.Requests != 60 || o.Answered != answered.Load() || o.Failed != o.Requests-o.Answered || o.Failed < 30 {
		t.Errorf("GET /orders: %d requests, %d failed, %d answered; want 60, the rest of the target's %d answers, most failed",
			o.Requests, o.Failed, o.Answered, answered.Load())
	}
	// Every answer took 20 ms or more; the refused requests a fraction of one.
	for name, v := range map[string]*float64{"avg": o.AvgMs, "p50": o.P50Ms, "p95": o.P95Ms, "p99": o.P99Ms} {
		if v == nil || *v < 20 {
			t.Errorf("GET /orders %s = %v ms; want ≥ 20 ms (over the answered requests alone)", name, fmtMs(v))
		}
	}
	dead := d.Endpoints[byName["GET /dead"]]
	if dead.Requests != 60 || dead.Failed != 60 || dead.Answered != 0 || dead.AvgMs != nil || dead.P50Ms != nil || dead.P95Ms != nil || dead.P99Ms != nil {
		t.Errorf("GET /dead: %d requests, %d failed, %d answered, p50 %s p95 %s; want 60 failed, no latency (null)",
			dead.Requests, dead.Failed, dead.Answered, fmtMs(dead.P50Ms), fmtMs(dead.P95Ms))
	}

	// The text report of the file: GET /dead has no latency, not 0 ms.
	code, stdout, _ = cliRun(t, "", "report", killed)
	if code != exitOK || !regexp.MustCompile(`\n  GET /dead +60 +60 +- +- +- `).MatchString(stdout) {
		t.Errorf("report: exit %d; want GET /dead's latency shown as -:\n%s", code, stdout)
	}
	if m := regexp.MustCompile(`\n  GET /orders +60 +\d+ +(\S+) +(\S+) +(\S+) `).FindStringSubmatch(stdout); m == nil || !allAtLeast(20, m[1:]...) {
		t.Errorf("report: GET /orders' avg, p95, p99 should all be ≥ 20 ms:\n%s", stdout)
	}

	for format, want := range map[string]string{
		"markdown": "| GET /dead | 60 | 60 | - | - | - |",
		"junit":    "requests 60, failed 60, no latency (no request answered)",
		"html":     `<td class="n">60</td><td class="n">60</td><td class="n">-</td><td class="n">-</td><td class="n">-</td><td class="n">-</td><td class="n">-</td>`,
	} {
		code, stdout, stderr = cliRun(t, "", "report", killed, "--format", format)
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("report --format %s: exit %d; want GET /dead without latency, %q:\n%s\nstderr: %s", format, code, want, stdout, stderr)
		}
	}

	// Compared with itself, GET /dead is not judged on latency, and its
	// sides carry no latency figure.
	code, stdout, stderr = cliRun(t, "", "compare", killed, killed, "--format", "json")
	// Exit 1 only as a comparison that could not tell: too few answered
	// requests to judge GET /orders, and GET /dead none.
	if code == exitUsage || code == exitError && !couldNotTell(t, code, stderr) {
		t.Fatalf("compare: exit %d\n%s\nstderr: %s", code, stdout, stderr)
	}
	schematest.Check(t, "comparison", []byte(stdout))
	var c struct {
		Endpoints []struct {
			Endpoint string `json:"endpoint"`
			Verdict  string `json:"verdict"`
			Cause    string `json:"cause"`
			Baseline struct {
				Answered int64    `json:"answered"`
				P95Ms    *float64 `json:"p95_ms"`
			} `json:"baseline"`
			P95 struct {
				Verdict string `json:"verdict"`
			} `json:"p95"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range c.Endpoints {
		if e.Endpoint != "GET /dead" {
			continue
		}
		found = true
		if e.Baseline.Answered != 0 || e.Baseline.P95Ms != nil || e.P95.Verdict != "" || e.Verdict == "unchanged" {
			t.Errorf("compare GET /dead: answered %d, p95 %s, p95 verdict %q, verdict %q; want no latency, not judged on it",
				e.Baseline.Answered, fmtMs(e.Baseline.P95Ms), e.P95.Verdict, e.Verdict)
		}
	}
	if !found {
		t.Errorf("compare: no GET /dead in\n%s", stdout)
	}
	if !strings.Contains(stdout, `"answered"`) {
		t.Errorf("compare JSON lacks answered:\n%s", stdout)
	}
}

// allAtLeast reports whether every figure parses as a number ≥ min.
func allAtLeast(min float64, figures ...string) bool {
	for _, f := range figures {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < min {
			return false
		}
	}
	return true
}

func fmtMs(v *float64) string {
	if v == nil {
		return "null"
	}
	b, _ := json.Marshal(*v)
	return string(b)
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/dashboard"
	"github.com/replaykit/replay/internal/syncbuf"
)

// background runs the CLI with args in a goroutine; the exit code comes on
// the channel.
func background(args ...string) (stdout, stderr *syncbuf.Buffer, code chan int) {
	stdout, stderr, code = &syncbuf.Buffer{}, &syncbuf.Buffer{}, make(chan int, 1)
	go func() { code <- run(args, streams{in: strings.NewReader(""), out: stdout, err: stderr}) }()
	return stdout, stderr, code
}

var dashboardURL = regexp.MustCompile(`(?m)^replay: dashboard at (http://\S+/)$`)

// waitDashboard waits for the command to print the dashboard's URL.
func waitDashboard(t *testing.T, stderr *syncbuf.Buffer, code chan int) string {
	t.Helper()
	for range 1500 {
		if m := dashboardURL.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
		select {
		case c := <-code:
			t.Fatalf("exit %d before the dashboard's URL: %s", c, stderr)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no dashboard URL on stderr: %s", stderr)
	return ""
}

func feedOf(t *testing.T, url string) dashboard.Feed {
	t.Helper()
	resp, err := http.Get(url + "api/feed")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var f dashboard.Feed
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		t.Fatal(err)
	}
	return f
}

// pollFeed polls the feed every 50ms until ok accepts it, for at most 15s.
func pollFeed(t *testing.T, url, what string, ok func(dashboard.Feed) bool) dashboard.Feed {
	t.Helper()
	for range 300 {
		if f := feedOf(t, url); ok(f) {
			return f
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the feed never showed %s", what)
	return dashboard.Feed{}
}

func sideTotals(f dashboard.Feed, name string) dashboard.Totals {
	for _, s := range f.Sides {
		if s.Name == name {
			return s.Totals
		}
	}
	return dashboard.Totals{}
}

// TestRunDashboard: `replay run --dashboard :0` serves the feed on
// loopback while the load runs, with growing counts; with
// --dashboard-linger it keeps serving after the report is written (the
// feed done, its counts those of the report, the HTML report at /report),
// then stops.
func TestRunDashboard(t *testing.T) {
	snap := runSnapshot(t, "GET /a", "GET /b")
	target := newRunTarget(t, 2*time.Millisecond)
	stdout, stderr, code := background("run", "--snapshot", snap, "--target", target.URL, "--out", filepath.Join(t.TempDir(), "r.run"),
		"--duration", "2s", "--vus", "2", "--format", "json", "--dashboard", ":0", "--dashboard-linger", "1500ms")
	url := waitDashboard(t, stderr, code)
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("dashboard at %s; want loopback for :0", url)
	}
	first := pollFeed(t, url, "load requests", func(f dashboard.Feed) bool { return sideTotals(f, "run").Requests > 0 })
	time.Sleep(300 * time.Millisecond)
	if n1, n2 := sideTotals(first, "run").Requests, sideTotals(feedOf(t, url), "run").Requests; n2 <= n1 || first.Status.Phase != "load" {
		t.Errorf("requests %d then %d in phase %q; want them growing in the load", n1, n2, first.Status.Phase)
	}
	var doc runJSON
	for !json.Valid([]byte(stdout.String())) {
		select {
		case c := <-code:
			t.Fatalf("exit %d without lingering; stderr: %s", c, stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	written := time.Now()
	doc = decodeRunJSON(t, stdout.String())
	f := feedOf(t, url)
	if f.Status.State != "done" || f.Status.Verdict != "passed" || sideTotals(f, "run").Load != doc.Requests || doc.Requests == 0 {
		t.Errorf("after the report: status %+v, %d load requests; the report has %d", f.Status, sideTotals(f, "run").Load, doc.Requests)
	}
	if body := httpGet(t, url+"report"); !strings.Contains(body, "<html") || !strings.Contains(body, "GET /b") {
		t.Errorf("/report is not the run's HTML report: %.300s", body)
	}
	if !strings.Contains(stderr.String(), "replay: dashboard stays at "+url+" for 1.5s") {
		t.Errorf("stderr does not say the dashboard lingers: %s", stderr)
	}
	if c := <-code; c != exitOK {
		t.Fatalf("exit %d; stderr: %s", c, stderr)
	}
	if waited := time.Since(written); waited < time.Second {
		t.Errorf("the command exited %s after its report; want the 1.5s linger", waited)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("the dashboard still answers after the command exited")
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}

// TestCompareDashboard: `replay compare --dashboard` shows both sides and
// the slice in progress while the interleaved load runs and, lingering
// after a regression (exit 99), serves the report.html the comparison
// wrote to its output directory.
func TestCompareDashboard(t *testing.T) {
	snap := runSnapshot(t, "GET /fast", "GET /slow")
	srv := func(slow time.Duration) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Millisecond)
			if r.URL.Path == "/slow" {
				time.Sleep(slow)
			}
			fmt.Fprint(w, "ok")
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	out := filepath.Join(t.TempDir(), "out")
	_, stderr, code := background("compare", "--snapshot", snap, "--baseline-url", srv(0), "--candidate-url", srv(25*time.Millisecond),
		"--duration", "2s", "--warmup", "0s", "--vus", "2", "--slices", "4", "--format", "text,html", "--out", out,
		"--dashboard", "127.0.0.1:0", "--dashboard-linger", "3s")
	url := waitDashboard(t, stderr, code)
	slices := map[string]bool{}
	pollFeed(t, url, "both sides' slices", func(f dashboard.Feed) bool {
		if f.Status.Phase == "load" && f.Status.Slices == 4 {
			slices[fmt.Sprintf("%s %d", f.Status.Side, f.Status.Slice)] = true
		}
		return len(slices) >= 3
	})
	file := filepath.Join(out, "report.html")
	f := pollFeed(t, url, "the report file", func(f dashboard.Feed) bool { return f.Status.ReportFile != "" })
	if f.Status.ReportFile != file || f.Status.Verdict != "regression" || f.Status.State != "done" {
		t.Errorf("status %+v; want done, regression, report file %s", f.Status, file)
	}
	if sideTotals(f, "baseline").Requests == 0 || sideTotals(f, "candidate").P95 < sideTotals(f, "baseline").P95 {
		t.Errorf("sides %+v; want both with requests, the candidate slower", f.Sides)
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := httpGet(t, url+"report"); got != string(want) {
		t.Errorf("/report is not %s (%d bytes, want %d)", file, len(got), len(want))
	}
	if c := <-code; c != exitRegression {
		t.Fatalf("exit %d, want 99; stderr: %s", c, stderr)
	}
}

// TestDashboardFlags: a bad --dashboard or --dashboard-linger is a usage
// error; a dashboard that cannot listen stops the command with one line;
// a dashboard reachable from the network is warned of.
func TestDashboardFlags(t *testing.T) {
	snap := runSnapshot(t, "GET /a")
	target := newRunTarget(t, 0)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	runArgs := func(extra ...string) []string {
		return append([]string{"run", "--snapshot", snap, "--target", target.URL, "--out", filepath.Join(t.TempDir(), "r.run"), "--duration", "200ms"}, extra...)
	}
	cmpArgs := func(extra ...string) []string {
		return append([]string{"compare", "--snapshot", snap, "--baseline-url", target.URL, "--candidate-url", target.URL,
			"--out", filepath.Join(t.TempDir(), "out"), "--duration", "200ms", "--warmup", "0s"}, extra...)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"run bad address", runArgs("--dashboard", "nowhere"), exitUsage, `invalid argument "nowhere" for "--dashboard" flag: want [HOST]:PORT`},
		{"compare bad address", cmpArgs("--dashboard", "127.0.0.1:99999"), exitUsage, `for "--dashboard" flag: want [HOST]:PORT`},
		{"offline compare", []string{"compare", "a.run", "b.run", "--dashboard", ":0"}, exitUsage, "compare RUN_A RUN_B: --dashboard applies to a live comparison"},
		{"negative linger", runArgs("--dashboard", ":0", "--dashboard-linger", "-1s"), exitUsage, `"--dashboard-linger" flag: "-1s": want a duration`},
		{"run busy port", runArgs("--dashboard", busy.Addr().String()), exitError, "run: dashboard: listen tcp " + busy.Addr().String()},
		{"compare busy port", cmpArgs("--dashboard", busy.Addr().String()), exitError, "compare: dashboard: listen tcp " + busy.Addr().String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb strings.Builder
			code := run(tc.args, streams{in: strings.NewReader(""), out: &out, err: &errb})
			if code != tc.code || !strings.Contains(errb.String(), tc.msg) || strings.Count(errb.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit %d and one line with %q", code, errb.String(), tc.code, tc.msg)
			}
		})
	}
	t.Run("exposed", func(t *testing.T) {
		var out, errb strings.Builder
		code := run(runArgs("--dashboard", "0.0.0.0:0"), streams{in: strings.NewReader(""), out: &out, err: &errb})
		warning := regexp.MustCompile(`(?m)^replay: warning: the dashboard listens on 0\.0\.0\.0:\d+, reachable from the network: anyone who reaches it sees the replayed endpoints and their figures$`)
		if code != exitOK || !warning.MatchString(errb.String()) || !dashboardURL.MatchString(errb.String()) {
			t.Errorf("exit %d, stderr:\n%s\nwant the warning and the URL", code, errb.String())
		}
	})
}

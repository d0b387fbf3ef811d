package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// envServe makes the test binary a build: it serves on $PORT until killed.
const envServe = "REPLAY_SESSION_TEST_SERVE"

func TestMain(m *testing.M) {
	switch os.Getenv(envServe) {
	case "1":
		fmt.Println("build listening on", os.Getenv("PORT"))
		http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "ok")
		}))
		os.Exit(1)
	case "sql":
		serveSQL() // wiring_test.go
		os.Exit(1)
	case "cpu":
		serveBusy() // cpu_test.go
		os.Exit(1)
	}
	os.Exit(pgtest.Main(m))
}

func inbound(paths ...string) []*snapshots.Exchange {
	var out []*snapshots.Exchange
	for i, p := range paths {
		out = append(out, &snapshots.Exchange{ID: int64(i + 1), Direction: snapshots.Inbound, Method: "GET",
			URL: "http://app.local" + p, Status: 200, Endpoint: "GET " + p})
	}
	return out
}

// TestRunCommandBuild: a build given as a command is started with its
// environment, replayed to, and stopped; the run file and the report hold
// every request, and secrets stay out of the run file's settings.
func TestRunCommandBuild(t *testing.T) {
	dir := t.TempDir()
	runPath := filepath.Join(dir, "x.run")
	res, err := Run(context.Background(), RunConfig{
		Config: Config{Inbound: inbound("/a", "/b"), Env: []string{envServe + "=1", "API_TOKEN=abc"}},
		Side:   SideConfig{Name: "run", Cmd: os.Args[0]},
		Plan:   replayer.LoadPlan{Iterations: 3},
	})
	if err == nil || !strings.Contains(err.Error(), "no run file") {
		t.Fatalf("Run without a run file = %v; want an error naming it", err)
	}
	var target string
	res, err = Run(context.Background(), RunConfig{
		Config: Config{Inbound: inbound("/a", "/b"), Env: []string{envServe + "=1", "API_TOKEN=abc"}},
		Side:   SideConfig{Name: "run", Cmd: os.Args[0], RunPath: runPath},
		Plan:   replayer.LoadPlan{Iterations: 3},
		Ready:  func(url string) { target = url },
	})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Report.Summary.Overall; o.Requests != 6 || o.Failed != 0 {
		t.Errorf("report: %d requests, %d failed; want 6, 0", o.Requests, o.Failed)
	}
	run, err := snapshots.OpenRun(runPath)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	n := 0
	for _, err := range run.Results(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 6 {
		t.Errorf("run file holds %d results; want 6", n)
	}
	s := run.Info().Settings
	if s["cmd"] != os.Args[0] || !strings.Contains(s["env"], "API_TOKEN="+redact.Mask) || strings.Contains(s["env"], "abc") {
		t.Errorf("settings cmd %q, env %q; want the command and the token masked", s["cmd"], s["env"])
	}
	if len(res.Report.Artifacts) != 2 {
		t.Fatalf("artifacts %v; want the run file and the build log", res.Report.Artifacts)
	}
	if log, err := os.ReadFile(res.Report.Artifacts[1].Path); err != nil || !strings.Contains(string(log), "build listening on") {
		t.Errorf("build log %q (%v); want the build's output", log, err)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(target, "http://"), time.Second); err == nil {
		c.Close()
		t.Errorf("the build at %s still answers after Run", target)
	}
}

// TestRunRefusesExistingRunFile: a run file is never overwritten.
func TestRunRefusesExistingRunFile(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "x.run")
	os.WriteFile(path, []byte("keep me"), 0o644)
	_, err := Run(context.Background(), RunConfig{Config: Config{Inbound: inbound("/a")}, Side: SideConfig{Name: "run", URL: srv.URL, RunPath: path}})
	if !errors.Is(err, snapshots.ErrExists) {
		t.Errorf("Run = %v; want ErrExists", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep me" {
		t.Error("the existing file was changed")
	}
}

// TestCompareResetsAndListening: both sides listen and are announced
// before any request; the reset runs before each side's explain phase and
// once before the interleaved load, told the side and phase; each run file
// names its side and its headers, secrets masked.
func TestCompareResetsAndListening(t *testing.T) {
	var requests atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) })
	a, b := httptest.NewServer(handler), httptest.NewServer(handler)
	defer a.Close()
	defer b.Close()
	dir := t.TempDir()
	resets := filepath.Join(dir, "resets")
	var announced []string
	res, err := Compare(context.Background(), CompareConfig{
		Config: Config{
			Inbound: inbound("/a", "/b"),
			Listening: func(s *Side) {
				if requests.Load() != 0 {
					t.Errorf("%s announced after requests were sent", s.Name())
				}
				announced = append(announced, s.Name())
			},
		},
		Baseline:  SideConfig{Name: "baseline", URL: a.URL, Header: http.Header{"X-Api-Key": {"k1"}, "Baggage": {"main"}}},
		Candidate: SideConfig{Name: "candidate", URL: b.URL},
		Dir:       dir,
		Plan:      replayer.ComparePlan{Load: replayer.LoadPlan{VUs: 1, Duration: 500 * time.Millisecond}, Explain: 1},
		Reset:     `echo "$REPLAY_SIDE $REPLAY_PHASE" >> ` + resets,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(announced, ","); got != "baseline,candidate" {
		t.Errorf("announced %q; want baseline,candidate", got)
	}
	if b, _ := os.ReadFile(resets); string(b) != "baseline explain\ncandidate explain\nboth load\n" {
		t.Errorf("resets:\n%s", b)
	}
	if res.Report.Comparison == nil || len(res.Report.Artifacts) != 3 {
		t.Errorf("report artifacts %v; want the two run files and the reset log", res.Report.Artifacts)
	}
	run, err := snapshots.OpenRun(filepath.Join(dir, BaselineRun))
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if s := run.Info().Settings; s["side"] != "baseline" || s["headers"] != "Baggage: main; X-Api-Key: "+redact.Mask {
		t.Errorf("baseline settings side %q, headers %q", s["side"], s["headers"])
	}
}

// TestCompareResetFails: a failing reset stops the comparison with a
// ResetError naming the phase, the exit status and the last line; the run
// files it began are removed, the reset's log stays and the error names it.
func TestCompareResetFails(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	dir := t.TempDir()
	_, err := Compare(context.Background(), CompareConfig{
		Config:    Config{Inbound: inbound("/a")},
		Baseline:  SideConfig{Name: "baseline", URL: srv.URL},
		Candidate: SideConfig{Name: "candidate", URL: srv.URL},
		Dir:       dir,
		Plan:      replayer.ComparePlan{Load: replayer.LoadPlan{VUs: 1, Duration: time.Second}, Explain: 1},
		Reset:     "echo first; echo boom >&2; exit 3",
	})
	var re *ResetError
	if !errors.As(err, &re) || re.Side != "baseline" || re.Phase != replayer.ResetExplain || re.Status != "exited with status 3" || re.LastLine != "boom" {
		t.Fatalf("Compare = %v; want the baseline's explain reset to fail with status 3 and its last line", err)
	}
	for _, f := range []string{BaselineRun, CandidateRun} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s left behind", f)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, ResetLog)); err != nil || !strings.Contains(string(b), "boom") {
		t.Errorf("reset.log: %q, %v", b, err)
	}
	if !strings.HasSuffix(err.Error(), "(logs kept: "+filepath.Join(dir, ResetLog)+")") {
		t.Errorf("the error does not name the reset log: %v", err)
	}
}

// TestCompareRefusesBadConfigs: configs that cannot run are refused before
// anything starts.
func TestCompareRefusesBadConfigs(t *testing.T) {
	dir := t.TempDir()
	ok := CompareConfig{Config: Config{Inbound: inbound("/a")}, Baseline: SideConfig{Name: "baseline", URL: "http://127.0.0.1:1"},
		Candidate: SideConfig{Name: "candidate", URL: "http://127.0.0.1:1"}, Dir: dir}
	for _, tt := range []struct {
		name string
		edit func(*CompareConfig)
		want string
	}{
		{"no requests", func(c *CompareConfig) { c.Inbound = nil }, "no inbound requests"},
		{"CA that cannot be made", func(c *CompareConfig) { c.Mock, c.CADir = &mock.Config{}, "/dev/null/ca" }, "/dev/null"},
		{"two builds", func(c *CompareConfig) { c.Candidate.Cmd = "true" }, "one of the two"},
		{"same names", func(c *CompareConfig) { c.Candidate.Name = "baseline" }, "both sides are named"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.edit(&cfg)
			if _, err := Compare(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compare = %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"
	"github.com/replaykit/replay/snapshots"
)

// Load per phase: enough requests that a connection's set-up statements
// weigh little, few enough that the package stays within minutes.
const (
	clients     = 4   // concurrent clients while recording, virtual users in run and compare
	perEndpoint = 150 // requests of each endpoint while recording
)

func TestPostGraphile(t *testing.T) { testServer(t, postGraphile) }
func TestPlatformatic(t *testing.T) { testServer(t, platformatic) }

func TestDemo(t *testing.T) {
	testServer(t, func(t *testing.T) server { return server{name: "demo"} })
}

// testServer records traffic of a server, replays it with run and compare,
// and checks replay's SQL per request against the server's own log.
func testServer(t *testing.T, mk func(*testing.T) server) {
	s := mk(t) // skips before the cluster starts when the server is missing
	c := startCluster(t)
	const base, cand = "e2e", "e2e_noindex"
	start := time.Now()
	if s.name == "demo" {
		c.exec(t, "postgres", "CREATE DATABASE "+base)
		s = demo(t, c, base)
	} else {
		c.bookDatabases(t, base, cand)
	}
	t.Logf("%s: databases ready in %s", s.name, time.Since(start).Round(time.Millisecond))
	dir := t.TempDir()

	phase := time.Now()
	snap, truth := recordPhase(t, c, s, base, dir)
	t.Logf("%s: record phase %s", s.name, time.Since(phase).Round(time.Millisecond))
	phase = time.Now()
	t.Run("run", func(t *testing.T) { runPhase(t, c, s, base, snap, truth, dir) })
	t.Logf("%s: run phase %s", s.name, time.Since(phase).Round(time.Millisecond))
	phase = time.Now()
	t.Run("shards", func(t *testing.T) { shardPhase(t, c, s, base, snap, truth, dir) })
	t.Logf("%s: shards phase %s", s.name, time.Since(phase).Round(time.Millisecond))
	candDB := cand
	if s.slow == "" {
		candDB = base
	}
	phase = time.Now()
	t.Run("compare", func(t *testing.T) { comparePhase(t, c, s, base, candDB, snap, truth, dir) })
	t.Logf("%s: compare phase %s", s.name, time.Since(phase).Round(time.Millisecond))
	phase = time.Now()
	t.Run("miswired", func(t *testing.T) { miswiredPhase(t, c, s, base, snap, truth, dir) })
	t.Logf("%s: miswired phase %s", s.name, time.Since(phase).Round(time.Millisecond))
}

// check reports replay's figure against the truth, failing beyond 10%.
func check(t *testing.T, what string, got, truth float64) {
	t.Helper()
	line := fmt.Sprintf("%-55s replay %8.3f  truth %8.3f  (%s)", what, got, truth, pct(got, truth))
	if within(got, truth) {
		t.Logf("PASS %s", line)
		return
	}
	t.Errorf("FAIL %s: not within 10%%", line)
}

// recordPhase records s under concurrent clients through `replay record`
// and returns the snapshot and the truth: statements per request of each
// endpoint in the server's log.
func recordPhase(t *testing.T, c *cluster, s server, db, dir string) (string, map[string]float64) {
	snap := filepath.Join(dir, s.name+".snap")
	srvPort, inPort, pgPort := freePort(t), freePort(t), freePort(t)
	inAddr, pgAddr := fmt.Sprintf("127.0.0.1:%d", inPort), fmt.Sprintf("127.0.0.1:%d", pgPort)
	recordFrom := c.offset(t)
	rec := start(t, "replay record", fmt.Sprintf("exec %q record --out %q --inbound %s=http://127.0.0.1:%d --postgres %s=%s",
		replayBin, snap, inAddr, srvPort, pgAddr, c.Addr()))
	waitTCP(t, rec, pgAddr)
	waitTCP(t, rec, inAddr)
	srv := start(t, s.name, s.command, fmt.Sprintf("PORT=%d", srvPort), "DATABASE_URL="+c.dbURL(db, pgAddr))
	direct := fmt.Sprintf("http://127.0.0.1:%d", srvPort)
	waitHTTP(t, srv, direct+"/")
	for _, ep := range s.endpoints { // warm up, not recorded: pools, caches, plans
		drive(t, direct, ep, 2*clients, clients)
	}

	truth := map[string]float64{}
	for _, ep := range s.endpoints {
		from := c.offset(t)
		drive(t, "http://"+inAddr, ep, perEndpoint, clients)
		truth[ep.name] = float64(c.count(t, from, db)) / perEndpoint
	}
	if err := srv.stop(syscall.SIGTERM); err != nil {
		t.Logf("%s stopped: %v", s.name, err)
	}
	if err := rec.stop(syscall.SIGINT); err != nil {
		t.Fatalf("replay record: %v\n%s", err, tail(rec.out.String()))
	}
	t.Logf("replay record:\n%s", tail(rec.out.String()))
	logged := c.count(t, recordFrom, db)

	out, _ := replay(t, "inspect", "--format", "json", snap)
	var inv struct {
		Statements   int64 `json:"statements"`
		Unattributed int64 `json:"unattributed_statements"`
		Endpoints    []struct {
			Direction     string  `json:"direction"`
			Endpoint      string  `json:"endpoint"`
			Count         int64   `json:"count"`
			SQLPerRequest float64 `json:"sql_per_request"`
		} `json:"endpoints"`
	}
	schematest.Check(t, "inspect", out)
	if err := json.Unmarshal(out, &inv); err != nil {
		t.Fatalf("replay inspect --format json: %v\n%s", err, out)
	}
	got := map[string]float64{}
	for _, e := range inv.Endpoints {
		if e.Direction == "inbound" {
			got[e.Endpoint] = e.SQLPerRequest
		}
	}
	for _, ep := range s.endpoints {
		if _, ok := got[ep.name]; !ok {
			t.Errorf("record: the snapshot has no endpoint %q: %s", ep.name, out)
			continue
		}
		check(t, fmt.Sprintf("%s record %s sql/req", s.name, ep.name), got[ep.name], truth[ep.name])
	}
	// The proxy sees every statement the server runs, start-up included.
	check(t, fmt.Sprintf("%s record statements in the phase", s.name), float64(inv.Statements), float64(logged))
	t.Logf("     record: snapshot has %d statements, %d unattributed", inv.Statements, inv.Unattributed)
	return snap, truth
}

// runJSON is the part of `replay run --format json` the tests read.
type runJSON struct {
	Run struct {
		Statements int64 `json:"statements"`
	} `json:"run"`
	Endpoints []endpointJSON `json:"endpoints"`
}

type endpointJSON struct {
	Endpoint          string  `json:"endpoint"`
	Requests          int64   `json:"requests"`
	ExplainRequests   int64   `json:"explain_requests"`
	SQLPerRequest     float64 `json:"sql_per_request"`
	SQLSource         string  `json:"sql_source"`
	LoadSQLPerRequest float64 `json:"load_sql_per_request"`
}

// runPhase replays the snapshot against s started by `replay run --cmd`.
func runPhase(t *testing.T, c *cluster, s server, db, snap string, truth map[string]float64, dir string) {
	from := c.offset(t)
	out, _ := replay(t, "run", "--snapshot", snap, "--cmd", s.command,
		"--env", "DATABASE_URL="+c.URL(db), "--postgres", c.Addr(),
		"--vus", fmt.Sprint(clients), "--duration", "3s",
		"--out", filepath.Join(dir, s.name+".run"), "--build-log", filepath.Join(dir, s.name+".run.log"), "--format", "json")
	logged := c.count(t, from, db)
	var doc runJSON
	schematest.Check(t, "run", out)
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("replay run --format json: %v\n%s", err, out)
	}
	var sent int64
	var expected float64 // statements the truth per endpoint predicts for what was sent
	byName := map[string]endpointJSON{}
	for _, e := range doc.Endpoints {
		byName[e.Endpoint] = e
		sent += e.Requests + e.ExplainRequests
		expected += truth[e.Endpoint] * float64(e.Requests+e.ExplainRequests)
	}
	// The harness's own check: the server runs as many statements per
	// request here as while recording, so the recorded truth applies.
	if !within(expected, float64(logged)) {
		t.Errorf("truth does not carry over to run: %.0f statements predicted for the requests sent, %d logged", expected, logged)
	}
	for _, ep := range s.endpoints {
		e, ok := byName[ep.name]
		if !ok {
			t.Errorf("run: no endpoint %q in %s", ep.name, out)
			continue
		}
		check(t, fmt.Sprintf("%s run %s sql/req (%s)", s.name, ep.name, e.SQLSource), e.SQLPerRequest, truth[ep.name])
		t.Logf("     %s run %s: %d requests + %d explain, load_sql_per_request %.3f", s.name, ep.name, e.Requests, e.ExplainRequests, e.LoadSQLPerRequest)
	}
	// The counter sees every statement the server runs, start-up included.
	check(t, fmt.Sprintf("%s run statements in the phase", s.name), float64(doc.Run.Statements), float64(logged))
	t.Logf("     %s run: %d requests sent, %d statements logged (%.3f per request)", s.name, sent, logged, float64(logged)/float64(max(sent, 1)))
}

// shardPhase replays the snapshot once (--iterations 1) as 2 local
// shards, each with its own server, merged: every recorded request is
// sent once in all, and the merged statements and SQL per request match
// the server's log.
func shardPhase(t *testing.T, c *cluster, s server, db, snap string, truth map[string]float64, dir string) {
	recorded := map[string]int64{}
	sn, err := snapshots.Open(snap)
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range sn.Index(context.Background(), snapshots.Inbound) {
		if err != nil {
			t.Fatal(err)
		}
		recorded[e.Endpoint]++
	}
	sn.Close()
	from := c.offset(t)
	out, stderr := replay(t, "run", "--snapshot", snap, "--cmd", s.command,
		"--env", "DATABASE_URL="+c.URL(db), "--postgres", c.Addr(),
		"--vus", fmt.Sprint(clients), "--iterations", "1", "--shards", "2", "--local",
		"--out", filepath.Join(dir, s.name+".shards.run"), "--format", "json")
	logged := c.count(t, from, db)
	var doc runJSON
	schematest.Check(t, "run", out)
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("replay run --shards 2 --local --format json: %v\n%s\n%s", err, out, tail(stderr))
	}
	sent := map[string]int64{}
	for _, e := range doc.Endpoints {
		sent[e.Endpoint] = e.Requests
		t.Logf("     %s shards %s: %d requests + %d explain (recorded %d)", s.name, e.Endpoint, e.Requests, e.ExplainRequests, recorded[e.Endpoint])
	}
	for ep, n := range recorded {
		if sent[ep] != n {
			t.Errorf("shards: %s sent %d times in all, recorded %d", ep, sent[ep], n)
		}
	}
	for _, ep := range s.endpoints {
		for _, e := range doc.Endpoints {
			if e.Endpoint == ep.name {
				check(t, fmt.Sprintf("%s shards %s sql/req (%s)", s.name, ep.name, e.SQLSource), e.SQLPerRequest, truth[ep.name])
			}
		}
	}
	check(t, fmt.Sprintf("%s shards statements in the phase", s.name), float64(doc.Run.Statements), float64(logged))
}

// compareJSON is the part of `replay compare --format json` the tests read.
type compareJSON struct {
	Verdict   string `json:"verdict"`
	Endpoints []struct {
		Endpoint    string       `json:"endpoint"`
		Baseline    endpointJSON `json:"baseline"`
		Candidate   endpointJSON `json:"candidate"`
		Verdict     string       `json:"verdict"`
		Cause       string       `json:"cause"`
		Explanation string       `json:"explanation"`
		Fingerprint string       `json:"fingerprint"`
		Responses   *struct {
			Compared    int64 `json:"compared"`
			Differing   int64 `json:"differing"`
			Differences []struct {
				Sentence string `json:"sentence"`
			} `json:"differences"`
			Ignored []struct {
				Path   string `json:"path"`
				Reason string `json:"reason"`
			} `json:"ignored"`
		} `json:"responses"`
	} `json:"endpoints"`
	Notes       []string `json:"notes"`
	BaselineRun struct {
		Statements int64 `json:"statements"`
	} `json:"baseline_run"`
	CandidateRun struct {
		Statements int64 `json:"statements"`
	} `json:"candidate_run"`
}

func compareArgs(s server, snap, out string, extra ...string) []string {
	return append([]string{"compare", "--snapshot", snap,
		"--baseline-cmd", s.command, "--candidate-cmd", s.command,
		"--vus", fmt.Sprint(clients), "--out", out, "--format", "json"}, extra...)
}

// comparePhase compares s on database base against s on database cand
// (base without the index on books.author_id; base itself for the demo).
func comparePhase(t *testing.T, c *cluster, s server, base, cand, snap string, truth map[string]float64, dir string) {
	from := c.offset(t)
	out, _ := replay(t, compareArgs(s, snap, filepath.Join(dir, s.name+"-compare"),
		"--baseline-env", "DATABASE_URL="+c.URL(base), "--candidate-env", "DATABASE_URL="+c.URL(cand),
		"--postgres", c.Addr(), "--duration", "3s")...)
	loggedBase, loggedCand := c.count(t, from, base), c.count(t, from, cand)
	var doc compareJSON
	schematest.Check(t, "comparison", out)
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("replay compare --format json: %v\n%s", err, out)
	}
	if txt, err := os.ReadFile(filepath.Join(dir, s.name+"-compare", "report.txt")); err == nil {
		t.Logf("compare report:\n%s", txt)
	}
	seen := map[string]bool{}
	for _, e := range doc.Endpoints {
		seen[e.Endpoint] = true
		tr, ok := truth[e.Endpoint]
		if !ok {
			continue
		}
		check(t, fmt.Sprintf("%s compare %s baseline sql/req (%s)", s.name, e.Endpoint, e.Baseline.SQLSource), e.Baseline.SQLPerRequest, tr)
		check(t, fmt.Sprintf("%s compare %s candidate sql/req (%s)", s.name, e.Endpoint, e.Candidate.SQLSource), e.Candidate.SQLPerRequest, tr)
		// The same rows on both sides (an index apart): the same answers,
		// except where the dropped index changes the plan of a query whose
		// ORDER BY leaves ties (Platformatic's GET /books orders by year):
		// rows of one year come in another order, and a page holds other
		// books. replay reports that, truthfully; it is logged.
		switch r := e.Responses; {
		case r == nil || r.Compared == 0:
			t.Errorf("FAIL %s compare %s: no answers compared", s.name, e.Endpoint)
		case r.Differing > 0 && e.Endpoint == s.slow:
			t.Logf("%s compare %s (its plan changed): %d of %d answers differ: %+v", s.name, e.Endpoint, r.Differing, r.Compared, r.Differences)
		case r.Differing > 0:
			t.Errorf("FAIL %s compare %s: %d of %d answers differ between builds on the same data: %+v", s.name, e.Endpoint, r.Differing, r.Compared, r.Differences)
		default:
			t.Logf("PASS %s compare %s: %d answers compared, 0 differing; ignored as noise: %+v", s.name, e.Endpoint, r.Compared, r.Ignored)
		}
		if e.Endpoint != s.slow {
			continue
		}
		// A database-only slowdown: same statements, slower.
		t.Logf("%s slow endpoint %s: verdict %s, cause %s: %s", s.name, e.Endpoint, e.Verdict, e.Cause, e.Explanation)
		if e.Verdict != "regression" {
			t.Errorf("FAIL %s compare %s: verdict %q, want regression (index dropped on %s)", s.name, e.Endpoint, e.Verdict, s.slowTable)
		}
		if e.Cause != "slower-sql" {
			t.Errorf("FAIL %s compare %s: cause %q, want slower-sql (the database's): %s", s.name, e.Endpoint, e.Cause, e.Explanation)
		}
		if !strings.Contains(strings.ToLower(e.Explanation), s.slowTable) || !strings.Contains(e.Explanation, "database") {
			t.Errorf("FAIL %s compare %s: the explanation does not name the statement on %s as the database's: %q", s.name, e.Endpoint, s.slowTable, e.Explanation)
		}
	}
	for _, ep := range s.endpoints {
		if !seen[ep.name] {
			t.Errorf("compare: no endpoint %q in %s", ep.name, out)
		}
	}
	if base == cand {
		check(t, fmt.Sprintf("%s compare statements in the phase (both sides)", s.name),
			float64(doc.BaselineRun.Statements+doc.CandidateRun.Statements), float64(loggedBase))
	} else {
		check(t, fmt.Sprintf("%s compare baseline statements in the phase", s.name), float64(doc.BaselineRun.Statements), float64(loggedBase))
		check(t, fmt.Sprintf("%s compare candidate statements in the phase", s.name), float64(doc.CandidateRun.Statements), float64(loggedCand))
	}
}

// miswiredPhase points both builds at the baseline's SQL counter: the
// candidate's counter sees nothing. replay must not report 0 statements per
// request for the candidate without saying so.
func miswiredPhase(t *testing.T, c *cluster, s server, db, snap string, truth map[string]float64, dir string) {
	a, b := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	out, stderr, code := replayCode(t, compareArgs(s, snap, filepath.Join(dir, s.name+"-miswired"),
		"--env", "DATABASE_URL="+c.dbURL(db, a), "--postgres", a+","+b+"="+c.Addr(),
		"--duration", "1s", "--warmup", "0", "--explain", "1")...)
	t.Logf("miswired compare: exit %d; stderr:\n%s", code, tail(stderr))
	if code != 0 && code != 99 {
		if strings.Contains(stderr, "candidate") && (strings.Contains(stderr, "SQL") || strings.Contains(stderr, "counter") || strings.Contains(stderr, "database")) {
			t.Logf("PASS %s miswired: replay refused, naming the candidate's SQL wiring", s.name)
			return
		}
		t.Fatalf("FAIL %s miswired: exit %d without naming the candidate's SQL wiring: %s", s.name, code, tail(stderr))
	}
	var doc compareJSON
	schematest.Check(t, "comparison", out)
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("replay compare --format json: %v\n%s", err, out)
	}
	told := strings.ToLower(stderr + "\n" + strings.Join(doc.Notes, "\n"))
	warned := strings.Contains(told, "candidate") && (strings.Contains(told, "sql counter") || strings.Contains(told, "no sql") || strings.Contains(told, "no statements") || strings.Contains(told, "counter"))
	for _, e := range doc.Endpoints {
		if truth[e.Endpoint] == 0 {
			continue
		}
		t.Logf("%s miswired %s: baseline %.3f, candidate %.3f sql/req (truth %.3f), verdict %s, cause %s: %s",
			s.name, e.Endpoint, e.Baseline.SQLPerRequest, e.Candidate.SQLPerRequest, truth[e.Endpoint], e.Verdict, e.Cause, e.Explanation)
		if e.Candidate.SQLPerRequest == 0 && !warned {
			t.Errorf("FAIL %s miswired %s: candidate shows 0 SQL/request (truth %.3f) and nothing says its SQL counter saw no statements; notes %q",
				s.name, e.Endpoint, truth[e.Endpoint], doc.Notes)
		}
	}
	if warned {
		t.Logf("PASS %s miswired: told (notes %q)", s.name, doc.Notes)
	}
}

// replay runs the replay binary and returns its stdout and stderr; exit codes
// other than 0 and 99 (a regression) fail the test.
func replay(t *testing.T, args ...string) ([]byte, string) {
	t.Helper()
	out, stderr, code := replayCode(t, args...)
	if code != 0 && code != 99 {
		t.Fatalf("replay %s: exit %d\n%s", args[0], code, tail(stderr))
	}
	return out, stderr
}

func replayCode(t *testing.T, args ...string) ([]byte, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(replayBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("replay %s: %v", args[0], err)
	}
	t.Logf("replay %s: exit %d in %s", args[0], code, time.Since(start).Round(time.Millisecond))
	return stdout.Bytes(), stderr.String(), code
}

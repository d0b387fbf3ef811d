package session

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// serveSQL is the test binary as a build that uses PostgreSQL: with
// DATABASE_URL, each request runs APP_QUERIES statements (1 for the
// baseline, 41 for an N+1 candidate) on a pool connected at start.
func serveSQL() {
	ctx := context.Background()
	n, _ := strconv.Atoi(os.Getenv("APP_QUERIES"))
	var pool *pgxpool.Pool
	if u := os.Getenv("DATABASE_URL"); u != "" {
		var err error
		if pool, err = pgxpool.New(ctx, u); err == nil {
			err = pool.Ping(ctx)
		}
		if err != nil {
			fmt.Println("database:", err)
			os.Exit(1)
		}
	}
	http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range n {
			var x int
			if err := pool.QueryRow(r.Context(), "SELECT $1::int", i).Scan(&x); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprint(w, "ok")
	}))
}

// freeAddr is a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// at returns the database URL u with its host:port replaced by addr.
func at(t *testing.T, u, addr string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p.Host = addr
	return p.String()
}

// sqlCompare compares the SQL build with 1 statement per request against
// one with 41, counting SQL in front of the shared cluster; edit adjusts
// the config.
func sqlCompare(t *testing.T, edit func(cfg *CompareConfig, db string)) *CompareResult {
	t.Helper()
	db := pgtest.Database(t)
	cfg := CompareConfig{
		Config: Config{
			Inbound:  inbound("/items"),
			Env:      []string{envServe + "=sql"},
			Postgres: &Postgres{Upstream: pgtest.Shared(t).Addr()},
		},
		Baseline:  SideConfig{Name: "baseline", Cmd: os.Args[0], Env: []string{"APP_QUERIES=1"}},
		Candidate: SideConfig{Name: "candidate", Cmd: os.Args[0], Env: []string{"APP_QUERIES=41"}},
		Dir:       t.TempDir(),
		Plan:      replayer.ComparePlan{Load: replayer.LoadPlan{VUs: 1, Duration: time.Second}, Explain: 2},
	}
	edit(&cfg, db)
	res, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestCompareRewritesListen is issue 11's comparison: --postgres
// LISTEN=HOST:PORT and both builds' DATABASE_URL at LISTEN, as record
// teaches. Each build is rewritten to its own counter, so each counter sees
// its own build and the 1 → 41 statements show.
func TestCompareRewritesListen(t *testing.T) {
	listen := freeAddr(t)
	res := sqlCompare(t, func(cfg *CompareConfig, db string) {
		cfg.Postgres.Listen = listen
		cfg.Baseline.PostgresListen = listen
		cfg.Env = append(cfg.Env, "DATABASE_URL="+at(t, db, listen))
	})
	c := res.Report.Comparison
	if len(c.Faults) != 0 {
		t.Errorf("faults %q; want none", c.Faults)
	}
	for i, s := range res.Sides {
		w := []*snapshots.Wiring{c.Baseline.Info.Wiring, c.Candidate.Info.Wiring}[i]
		app := "replay-" + s.Name()
		if w == nil || w.SQLApp != app || len(w.SQLClients) != 1 || w.SQLClients[0].App != app || w.SQLClients[0].Statements == 0 {
			t.Errorf("%s wiring %+v; want statements from %s alone", s.Name(), w, app)
		}
	}
	e := c.Endpoint("GET /items")
	if e == nil || e.Baseline.SQL.PerRequest != 1 || e.Candidate.SQL.PerRequest != 41 || e.SQLVerdict != analyzer.Regression || c.Verdict != analyzer.Regression {
		t.Fatalf("GET /items: %+v, verdict %s; want SQL 1 → 41 per request, a regression", e, c.Verdict)
	}
}

// TestCompareCrossedCounter: a candidate forced at the baseline's counter
// is reported (its statements in the baseline's counter, its own counter
// unused), and the comparison has no clean verdict.
func TestCompareCrossedCounter(t *testing.T) {
	a, b := freeAddr(t), freeAddr(t)
	res := sqlCompare(t, func(cfg *CompareConfig, db string) {
		cfg.Baseline.PostgresListen, cfg.Candidate.PostgresListen = a, b
		cfg.Env = append(cfg.Env, "DATABASE_URL="+db)
		cfg.Candidate.Env = append(cfg.Candidate.Env, "DATABASE_URL="+at(t, db, a))
	})
	c := res.Report.Comparison
	var kinds []string
	for _, f := range c.Faults {
		kinds = append(kinds, f.Side+" "+f.Kind)
	}
	if want := []string{"candidate " + analyzer.FaultSQLCrossed, "candidate " + analyzer.FaultSQLUnused}; !slices.Equal(kinds, want) {
		t.Fatalf("faults %q; want %q", c.Faults, want)
	}
	if c.Verdict != analyzer.Inconclusive || res.Report.Passed() {
		t.Errorf("verdict %s, passed %v; want inconclusive, not passed", c.Verdict, res.Report.Passed())
	}
	if !strings.Contains(c.Faults[0].Text, "point the candidate's DATABASE_URL at its own counter, "+b) {
		t.Errorf("fault %q; want it to name the candidate's counter %s", c.Faults[0].Text, b)
	}
	if n := res.Notices(); len(n) < 2 || !strings.HasPrefix(n[0], "wiring: ") {
		t.Errorf("notices %q; want the faults first", n)
	}
}

// TestRunWiringFaults: a build that never connects to its SQL counter, and
// never calls its mock although the recorded request made an upstream
// call, is reported for both, and the run is undecided: never passed.
func TestRunWiringFaults(t *testing.T) {
	in := inbound("/items")
	out := []*snapshots.Exchange{{ID: 2, ParentID: 1, Direction: snapshots.Outbound, Method: "GET", URL: "http://api.test/x", Service: "api.test:80", Status: 200}}
	res, err := Run(context.Background(), RunConfig{
		Config: Config{Inbound: in, Env: []string{envServe + "=sql"}, CADir: filepath.Join(t.TempDir(), "ca"),
			Postgres: &Postgres{Upstream: pgtest.Shared(t).Addr()}, Mock: &mock.Config{Exchanges: out}},
		Side: SideConfig{Name: "run", Cmd: os.Args[0], RunPath: filepath.Join(t.TempDir(), "x.run")},
		Plan: replayer.LoadPlan{Iterations: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, f := range res.Report.Faults() {
		kinds = append(kinds, f.Kind)
	}
	if want := []string{analyzer.FaultSQLUnused, analyzer.FaultMockUnused}; !slices.Equal(kinds, want) {
		t.Errorf("faults %q; want %q", res.Report.Faults(), want)
	}
	if n := res.Notices(); len(n) != 2 {
		t.Errorf("notices %q; want the two faults", n)
	}
	if why := res.Report.Undecided(); res.Report.Passed() || !strings.Contains(why, "the figures do not measure what they claim") {
		t.Errorf("passed %v, undecided %q; want a run that is not passed, for its faults", res.Report.Passed(), why)
	}
}

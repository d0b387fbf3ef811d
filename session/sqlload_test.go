package session

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

// itemsApp is a build backed by PostgreSQL through its side's SQL counter:
// GET /items?kind=a runs 1 statement, ?kind=b 3 (two of them sleeping
// sleep seconds). It counts the statements it runs itself, as the truth.
type itemsApp struct {
	dbURL string
	// sleep is how long the kind=b lookups sleep in the database.
	sleep float64
	// startup is how many statements the first request runs first (a
	// schema introspected once).
	startup int
	// extraAfter, when positive, makes every request after that many run
	// 2 statements more (a build whose statements differ under load).
	extraAfter int64

	mu       sync.Mutex
	pool     *pgxpool.Pool
	started  bool
	served   atomic.Int64
	counting atomic.Bool
	stmts    atomic.Int64 // statements of requests served while counting
	reqs     atomic.Int64
}

// connect points the app at its side's SQL counter.
func (a *itemsApp) connect(t *testing.T, sqlAddr string) {
	u, err := url.Parse(a.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = sqlAddr
	p, err := pgxpool.New(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	a.mu.Lock()
	a.pool = p
	a.mu.Unlock()
}

func (a *itemsApp) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/items" {
		fmt.Fprint(w, "ok") // readiness
		return
	}
	ctx := r.Context()
	a.mu.Lock()
	db, first := a.pool, !a.started
	a.started = true
	a.mu.Unlock()
	n := int64(0)
	exec := func(sql string, args ...any) {
		n++
		rows, err := db.Query(ctx, sql, args...)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
		}
	}
	if first {
		for range a.startup {
			exec("SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = $1", "public")
		}
		n = 0
	}
	kind := r.URL.Query().Get("kind")
	exec("SELECT count(*) FROM items WHERE kind = $1", kind)
	if kind == "b" {
		for id := 1; id <= 2; id++ {
			exec("SELECT name FROM items, pg_sleep($2) WHERE id = $1", id, a.sleep)
		}
	}
	if a.extraAfter > 0 && a.served.Add(1) > a.extraAfter {
		exec("SELECT 1 FROM items WHERE id = $1", 1)
		exec("SELECT 2 FROM items WHERE id = $1", 1)
	}
	if a.counting.Load() {
		a.stmts.Add(n)
		a.reqs.Add(1)
	}
	fmt.Fprint(w, "[]")
}

// itemsDB creates the items table in a fresh database.
func itemsDB(t *testing.T) (dbURL, upstream string) {
	dbURL = pgtest.Database(t)
	p, err := pgxpool.New(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Exec(context.Background(), `CREATE TABLE items (id int PRIMARY KEY, kind text, name text);
		INSERT INTO items SELECT g, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, 'item ' || g FROM generate_series(1, 100) g`); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dbURL)
	return dbURL, u.Host
}

// itemRequests records GET /items requests: the first three kind=a, then
// kinds as given.
func itemRequests(kinds string) []*snapshots.Exchange {
	var ex []*snapshots.Exchange
	for i, k := range kinds {
		ex = append(ex, &snapshots.Exchange{ID: int64(i + 1), Direction: snapshots.Inbound, Method: "GET",
			URL: "http://app.local/items?kind=" + string(k), Status: 200, Endpoint: "GET /items"})
	}
	return ex
}

// runItems replays reqs to app under plan, the truth counted over the load.
func runItems(t *testing.T, app *itemsApp, upstream string, reqs []*snapshots.Exchange, plan replayer.LoadPlan) *RunResult {
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	runPath := filepath.Join(t.TempDir(), "items.run")
	res, err := Run(context.Background(), RunConfig{
		Config: Config{Inbound: reqs, Postgres: &Postgres{Upstream: upstream},
			Listening: func(s *Side) { app.connect(t, s.SQLAddr()) }},
		Side: SideConfig{Name: "run", URL: srv.URL, RunPath: runPath},
		Plan: plan,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRunSQLFollowsTheLoadsMix: the first three recorded requests run 1
// statement each, the others mostly 3; the explain phase replays each shape
// and weights it by the load's mix, so SQL/REQ is the truth, not 1. The
// start-up statements of the build's first request are charged to no
// request, and the self-check agrees.
func TestRunSQLFollowsTheLoadsMix(t *testing.T) {
	dbURL, upstream := itemsDB(t)
	app := &itemsApp{dbURL: dbURL, startup: 5}
	app.counting.Store(true) // every request but the start-up is 1 or 3 statements
	reqs := itemRequests("aaabbabbab")
	res := runItems(t, app, upstream, reqs, replayer.LoadPlan{Explain: 3, VUs: 2, Iterations: 3})
	sum := res.Report.Summary
	truth := float64(app.stmts.Load()) / float64(app.reqs.Load()) // 2 whatever the share of each phase
	got := sum.Overall.SQL.PerRequest
	if sum.Overall.SQL.Source != analyzer.SQLSourceExplain || got < 0.9*truth || got > 1.1*truth {
		t.Errorf("SQL/REQ %v from %q; want the explain phase's, within 10%% of the truth %v", got, sum.Overall.SQL.Source, truth)
	}
	e := sum.Endpoint("GET /items")
	if e == nil || e.ExplainRequests != 2 {
		t.Fatalf("explain requests: %+v; want one per shape (2)", e)
	}
	for _, f := range e.ExplainSQL.Fingerprints {
		if strings.Contains(f.Fingerprint, "pg_tables") {
			t.Errorf("start-up statement %q charged to an explained request", f.Fingerprint)
		}
	}
	ck := sum.SQLCheck
	if ck == nil || !ck.Agree || ck.LoadRequests != 30 {
		t.Fatalf("self-check %+v; want one that agrees over 30 load requests", ck)
	}
	if ck.LoadPerRequest != 2 {
		t.Errorf("load statements per request %v; want 2", ck.LoadPerRequest)
	}
	// The run file holds what `replay report` needs to say it again.
	run, err := snapshots.OpenRun(res.Report.Artifacts[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	again, err := analyzer.Summarize(context.Background(), run.Info(), run.Results(context.Background()), analyzer.SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.SQLCheck == nil || *again.SQLCheck != *ck || again.Overall.SQL.PerRequest != got {
		t.Errorf("from the run file: check %+v, SQL/REQ %v; want %+v, %v", again.SQLCheck, again.Overall.SQL.PerRequest, ck, got)
	}
}

// TestRunSelfCheckWarns: a build that runs more statements per request
// under load than in the explain phase is caught by the self-check, and the
// report gives the load's figure instead of calling the explain's exact.
func TestRunSelfCheckWarns(t *testing.T) {
	dbURL, upstream := itemsDB(t)
	app := &itemsApp{dbURL: dbURL, extraAfter: 3} // warm-up 1 + explain 2, then 2 more each
	res := runItems(t, app, upstream, itemRequests("aaabbabbab"), replayer.LoadPlan{Explain: 3, VUs: 2, Iterations: 2})
	sum := res.Report.Summary
	ck := sum.SQLCheck
	if ck == nil || ck.Agree || ck.LoadPerRequest != 4 || ck.ExplainPerRequest != 2 {
		t.Fatalf("self-check %+v; want explain 2 and load 4 to disagree", ck)
	}
	var buf bytes.Buffer
	if err := report.RunText(&buf, res.Report); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "SQL self-check failed") || !strings.Contains(out, "saw 4 during the load (80 statements / 20 requests)") || strings.Contains(out, "exact)") {
		t.Errorf("run report lacks the self-check warning with the load's figure, or still says exact:\n%s", out)
	}
}

// TestCompareDatabaseSlowdownFromTheLoad: the candidate's database sleeps
// in a statement only kind=b requests run, which the explain phase (one
// shape per endpoint) never replays; the load's counter still names it,
// with database time per request under load.
func TestCompareDatabaseSlowdownFromTheLoad(t *testing.T) {
	dbURL, upstream := itemsDB(t)
	apps := map[string]*itemsApp{"baseline": {dbURL: dbURL}, "candidate": {dbURL: dbURL, sleep: 0.02}}
	var urls [2]string
	for i, name := range []string{"baseline", "candidate"} {
		srv := httptest.NewServer(apps[name])
		t.Cleanup(srv.Close)
		urls[i] = srv.URL
	}
	res, err := Compare(context.Background(), CompareConfig{
		Config: Config{Inbound: itemRequests("aaaaaaabbb"), Postgres: &Postgres{Upstream: upstream},
			Listening: func(s *Side) { apps[s.Name()].connect(t, s.SQLAddr()) }},
		Baseline:  SideConfig{Name: "baseline", URL: urls[0]},
		Candidate: SideConfig{Name: "candidate", URL: urls[1]},
		Dir:       t.TempDir(),
		Plan:      replayer.ComparePlan{Load: replayer.LoadPlan{VUs: 2, Duration: 4 * time.Second}, Slices: 8, Explain: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Report.Comparison
	if len(c.Endpoints) != 1 {
		t.Fatalf("%d endpoints", len(c.Endpoints))
	}
	e := c.Endpoints[0]
	for _, f := range e.Candidate.ExplainSQL.Fingerprints {
		if strings.Contains(f.Fingerprint, "pg_sleep") {
			t.Fatalf("the explain phase met the slow statement; the test wants it met only under load")
		}
	}
	if e.Verdict != analyzer.Regression || e.Cause != analyzer.CauseSlowerSQL || !strings.Contains(e.Fingerprint, "pg_sleep") ||
		!strings.Contains(e.Explanation, "per call") || !strings.Contains(e.Explanation, "database time per request") ||
		strings.Contains(e.Explanation, "in the app") {
		t.Errorf("verdict %s, cause %s, fingerprint %q: %s; want a regression explained by the slower statement under load",
			e.Verdict, e.Cause, e.Fingerprint, e.Explanation)
	}
	lb, lk := c.Baseline.LoadCounter, c.Candidate.LoadCounter
	if !lb.Counted() || !lk.Counted() || lk.DBTimePerRequest-lb.DBTimePerRequest < 8 {
		t.Errorf("database time per request under load %v → %v ms; want it up by about 12", lb.DBTimePerRequest, lk.DBTimePerRequest)
	}
	t.Log(e.Explanation)
}

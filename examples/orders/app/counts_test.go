package app_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/pgtest"
)

// The SQL each endpoint runs, by a substring of each statement in order.
// These are the numbers later work (sqlcount, replayer, compare) relies on.
var (
	postSQL     = []string{"begin", "INSERT INTO orders", "INSERT INTO order_items", "commit"}
	listFastSQL = []string{"(SELECT count(*) FROM order_items i WHERE i.order_id = o.id)"}
	listSlowSQL = append([]string{"SELECT id, customer, status, created_at FROM orders ORDER BY id DESC LIMIT 50"},
		repeat("SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = $1", app.ListLimit)...)
	getSQL    = []string{"LEFT JOIN order_items i ON i.order_id = o.id"}
	statusSQL = []string{"SELECT status FROM orders WHERE id = $1"}
)

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// countCase is one request and the statements it must run.
type countCase struct {
	name, method, path string
	body               any
	wantStatus         int
	wantSQL            []string
	// wantSelects and wantInserts are pg_stat_statements calls of SELECT and
	// INSERT statements (BEGIN/COMMIT are left out there: see DESIGN.md).
	wantSelects, wantInserts int
	// wantItemSelects is the calls of the N+1 fingerprint
	// "SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = $1".
	wantItemSelects int
}

func countCases(slow bool, existing int64) []countCase {
	id := fmt.Sprint(existing)
	list := countCase{name: "list", method: "GET", path: "/orders", wantStatus: 200, wantSQL: listFastSQL, wantSelects: 1}
	if slow {
		list.wantSQL, list.wantSelects, list.wantItemSelects = listSlowSQL, 1+app.ListLimit, app.ListLimit
	}
	return []countCase{
		{name: "create", method: "POST", path: "/orders", body: app.SeedOrder(2), wantStatus: 201, wantSQL: postSQL, wantInserts: 2},
		{name: "create with one item", method: "POST", path: "/orders", body: app.SeedOrder(0), wantStatus: 201, wantSQL: postSQL, wantInserts: 2},
		{name: "create rejected", method: "POST", path: "/orders", body: `{"customer":"x","items":[]}`, wantStatus: 400},
		list,
		{name: "get", method: "GET", path: "/orders/" + id, wantStatus: 200, wantSQL: getSQL, wantSelects: 1},
		{name: "get missing", method: "GET", path: "/orders/987654321", wantStatus: 404, wantSQL: getSQL, wantSelects: 1},
		{name: "get bad id", method: "GET", path: "/orders/abc", wantStatus: 400},
		{name: "status", method: "GET", path: "/orders/" + id + "/status", wantStatus: 200, wantSQL: statusSQL, wantSelects: 1},
		{name: "status missing", method: "GET", path: "/orders/987654321/status", wantStatus: 404, wantSQL: statusSQL, wantSelects: 1},
		{name: "catalog", method: "GET", path: "/catalog", wantStatus: 200},
	}
}

// TestStatementCounts proves the statements per request of every endpoint in
// both modes, counted three ways independently of the app's code: a pgx
// QueryTracer on the pool, pg_stat_statements (SELECT and INSERT calls) and
// the server's own log (log_statement=all), which also shows BEGIN/COMMIT.
func TestStatementCounts(t *testing.T) {
	c := pgtest.New(t, pgtest.Config{Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
		"log_statement":            "all",
		"log_line_prefix":          "%a|%d| ",
	}})
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	dbName := "orders_counts_" + randomHex()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)") })
	stats, err := pgx.Connect(ctx, c.URL(dbName))
	if err != nil {
		t.Fatal(err)
	}
	defer stats.Close(ctx)
	if _, err := stats.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		t.Fatalf("pg_stat_statements: %v (a server given by %s must preload it)", err, pgtest.EnvURL)
	}
	serverLog := newLogReader(t, c, "orders-counted")

	tr := &tracer{}
	pool := newPool(t, c.URL(dbName), tr, "orders-counted")
	up := startCatalog(t)
	_, fast := startApp(t, app.Config{DB: pool, CatalogURL: up.url, HTTPClient: up.client})
	_, slow := startApp(t, app.Config{DB: pool, Slow: true, CatalogURL: up.url, HTTPClient: up.client})
	ids, err := app.Seed(ctx, fast, nil, 60)
	if err != nil {
		t.Fatal(err)
	}

	for _, mode := range []struct {
		name string
		base string
		slow bool
	}{{"fast", fast, false}, {"slow", slow, true}} {
		for _, tc := range countCases(mode.slow, ids[10]) {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				tr.take()
				serverLog.skip()
				if _, err := stats.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
					t.Fatal(err)
				}

				r := call(t, tc.method, mode.base+tc.path, tc.body)
				if r.status != tc.wantStatus {
					t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, r.status, r.body, tc.wantStatus)
				}

				// 1. The pgx tracer: every statement, in order.
				got := tr.take()
				if !matchSQL(got, tc.wantSQL) {
					t.Errorf("tracer saw %d statements, want %d:\n got  %q\n want %q", len(got), len(tc.wantSQL), got, tc.wantSQL)
				}
				// 2. The server log: every statement the server executed.
				logged, pings := serverLog.statements()
				if !matchSQL(logged, tc.wantSQL) {
					t.Errorf("server log shows %d statements, want %d:\n got  %q\n want %q", len(logged), len(tc.wantSQL), logged, tc.wantSQL)
				}
				if pings > 0 {
					t.Logf("pgxpool pinged %d idle connection(s) (\"-- ping\", not counted)", pings)
				}
				// 3. pg_stat_statements: SELECT and INSERT calls.
				sel, ins, items := statCalls(t, stats)
				if sel != tc.wantSelects || ins != tc.wantInserts || items != tc.wantItemSelects {
					t.Errorf("pg_stat_statements: %d SELECT, %d INSERT, %d order_items lookups; want %d, %d, %d",
						sel, ins, items, tc.wantSelects, tc.wantInserts, tc.wantItemSelects)
				}
			})
		}
	}
}

// matchSQL reports whether got has one statement per want, each containing
// its substring.
func matchSQL(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if !strings.Contains(strings.Join(strings.Fields(got[i]), " "), want[i]) {
			return false
		}
	}
	return true
}

// statCalls sums pg_stat_statements calls in the current database since the
// last reset, leaving out the test's own statistics queries.
func statCalls(t *testing.T, conn *pgx.Conn) (selects, inserts, itemSelects int) {
	t.Helper()
	rows, err := conn.Query(context.Background(), `
SELECT query, calls FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND query NOT LIKE '%pg_stat_statements%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			q     string
			calls int
		)
		if err := rows.Scan(&q, &calls); err != nil {
			t.Fatal(err)
		}
		q = strings.Join(strings.Fields(q), " ")
		switch {
		case strings.HasPrefix(q, "SELECT"):
			selects += calls
			if q == "SELECT id, sku, qty, price_cents FROM order_items WHERE order_id = $1" {
				itemSelects += calls
			}
		case strings.HasPrefix(q, "INSERT"):
			inserts += calls
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return selects, inserts, itemSelects
}

// logReader reads the statements one application ran from the server log.
type logReader struct {
	t       *testing.T
	path    string
	prefix  string
	offset  int64
	enabled bool
}

func newLogReader(t *testing.T, c *pgtest.Cluster, appName string) *logReader {
	l := &logReader{t: t, prefix: appName + "|"}
	if c.Dir == "" {
		t.Logf("no server log for a server given by %s: counting with the tracer and pg_stat_statements only", pgtest.EnvURL)
		return l
	}
	l.path, l.enabled = filepath.Join(c.Dir, "postgres.log"), true
	return l
}

// skip moves past everything logged so far.
func (l *logReader) skip() {
	if !l.enabled {
		return
	}
	fi, err := os.Stat(l.path)
	if err != nil {
		l.t.Fatal(err)
	}
	l.offset = fi.Size()
}

// statements returns the statements logged since the last skip, as
// "statement: SQL" or "execute NAME: SQL" entries with their text, and the
// number of pgxpool's "-- ping" queries, which it leaves out.
func (l *logReader) statements() (stmts []string, pings int) {
	if !l.enabled {
		return nil, 0
	}
	b, err := os.ReadFile(l.path)
	if err != nil {
		l.t.Fatal(err)
	}
	var cur *strings.Builder
	for _, line := range strings.Split(string(b[l.offset:]), "\n") {
		switch {
		case strings.HasPrefix(line, l.prefix):
			cur = nil
			_, msg, _ := strings.Cut(line, "LOG:  ")
			if strings.HasPrefix(msg, "statement: -- ping") {
				pings++
				continue
			}
			if strings.HasPrefix(msg, "statement: ") || strings.HasPrefix(msg, "execute ") {
				stmts = append(stmts, msg)
				cur = &strings.Builder{}
			}
		case strings.HasPrefix(line, "\t") && cur != nil && len(stmts) > 0:
			// continuation of a multi-line statement
			stmts[len(stmts)-1] += " " + strings.TrimSpace(line)
		default:
			cur = nil
		}
	}
	return stmts, pings
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

package pgwire

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/lib/pq"

	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/snapshots"
)

// proxied returns a fresh database and a proxy to its server, with the
// database's URL through the proxy.
func proxied(t *testing.T) (tp *testProxy, url, db string) {
	t.Helper()
	direct := pgtest.Database(t)
	c := pgtest.Shared(t)
	tp = startProxy(t, c.Addr())
	db = dbName(t, direct)
	return tp, tp.url(c, db), db
}

// summary is what a test compares: per statement, in order, its SQL,
// protocol, rows, tag and error code.
type summary struct {
	SQL, Protocol, Tag, Err string
	Rows                    int64
}

func summarize(stmts []*snapshots.Statement) []summary {
	var out []summary
	for _, s := range stmts {
		code := s.Error
		if i := strings.IndexByte(code, ':'); i >= 0 {
			code = code[:i]
		}
		out = append(out, summary{SQL: s.SQL, Protocol: s.Protocol, Tag: s.CommandTag, Err: code, Rows: s.Rows})
	}
	return out
}

func connect(t *testing.T, url string, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DefaultQueryExecMode = mode
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

const (
	simple   = snapshots.ProtocolSimple
	extended = snapshots.ProtocolExtended
)

func TestPsql(t *testing.T) {
	tp, url, _ := proxied(t)

	runTool(t, "psql", "-X", "-q", "-d", url, "-c", "SELECT 1; SELECT 2")
	want := []summary{
		{SQL: "SELECT 1", Protocol: simple, Tag: "SELECT 1", Rows: 1},
		{SQL: "SELECT 2", Protocol: simple, Tag: "SELECT 1", Rows: 1},
	}
	if diff := cmp.Diff(want, summarize(tp.statements())); diff != "" {
		t.Errorf("psql -c 'SELECT 1; SELECT 2' (-want +got):\n%s", diff)
	}
	if fps := tp.Stats().Fingerprints; len(fps) != 1 || fps[0].Fingerprint != "SELECT ?" || fps[0].Count != 2 {
		t.Errorf("fingerprints = %+v, want SELECT ? twice", fps)
	}

	// A script: COPY both ways, \copy, and an error.
	tp.reset()
	dir := t.TempDir()
	data := filepath.Join(dir, "data.txt")
	if err := os.WriteFile(data, []byte("4\tfour\n5\tfive\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.sql")
	if err := os.WriteFile(script, []byte(`CREATE TABLE items (id int, name text);
COPY items FROM STDIN;
1	one
2	two
3	three
\.
\copy items from '`+data+`'
COPY items TO STDOUT;
SELECT 1/0;
SELECT count(*) FROM items;
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := runTool(t, "psql", "-X", "-q", "-d", url, "-f", script)
	if !strings.Contains(out, "division by zero") || !strings.Contains(out, "5\tfive") {
		t.Errorf("psql output:\n%s", out)
	}
	want = []summary{
		{SQL: "CREATE TABLE items (id int, name text);", Protocol: simple, Tag: "CREATE TABLE"},
		{SQL: "COPY items FROM STDIN;", Protocol: simple, Tag: "COPY 3", Rows: 3},
		{SQL: "COPY  items FROM STDIN ", Protocol: simple, Tag: "COPY 2", Rows: 2},
		{SQL: "COPY items TO STDOUT;", Protocol: simple, Tag: "COPY 5", Rows: 5},
		{SQL: "SELECT 1/0;", Protocol: simple, Err: "22012"},
		{SQL: "SELECT count(*) FROM items;", Protocol: simple, Tag: "SELECT 1", Rows: 1},
	}
	if diff := cmp.Diff(want, summarize(tp.statements())); diff != "" {
		t.Errorf("psql -f script (-want +got):\n%s", diff)
	}
}

func TestPgxCacheMode(t *testing.T) {
	tp, url, _ := proxied(t)
	conn := connect(t, url, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()

	if _, err := conn.Exec(ctx, "CREATE TABLE orders (id int PRIMARY KEY, note text)"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := conn.Exec(ctx, "INSERT INTO orders (id, note) VALUES ($1, $2)", i, "n"); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id > $1", 0).Scan(&n); err != nil || n != 3 {
		t.Fatalf("count = %d, %v", n, err)
	}
	rows, err := conn.Query(ctx, "SELECT id FROM orders ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(ids) != 3 {
		t.Fatalf("ids = %v, %v", ids, err)
	}
	// A failing statement counts once, whether it fails when prepared or
	// when executed.
	if _, err := conn.Exec(ctx, "SELEC 1"); err == nil {
		t.Fatal("syntax error succeeded")
	}
	if _, err := conn.Exec(ctx, "INSERT INTO orders (id, note) VALUES ($1, $2)", 1, "dup"); err == nil {
		t.Fatal("duplicate key succeeded")
	}
	if _, err := conn.Exec(ctx, "SELECT $1::int FROM missing", 1); err == nil {
		t.Fatal("query of a missing table succeeded")
	}

	// pgx runs a statement without arguments in the simple protocol.
	want := []summary{
		{SQL: "CREATE TABLE orders (id int PRIMARY KEY, note text)", Protocol: simple, Tag: "CREATE TABLE"},
		{SQL: "INSERT INTO orders (id, note) VALUES ($1, $2)", Protocol: extended, Tag: "INSERT 0 1", Rows: 1},
		{SQL: "INSERT INTO orders (id, note) VALUES ($1, $2)", Protocol: extended, Tag: "INSERT 0 1", Rows: 1},
		{SQL: "INSERT INTO orders (id, note) VALUES ($1, $2)", Protocol: extended, Tag: "INSERT 0 1", Rows: 1},
		{SQL: "SELECT count(*) FROM orders WHERE id > $1", Protocol: extended, Tag: "SELECT 1", Rows: 1},
		{SQL: "SELECT id FROM orders ORDER BY id", Protocol: extended, Tag: "SELECT 3", Rows: 3},
		{SQL: "SELEC 1", Protocol: simple, Err: "42601"},
		{SQL: "INSERT INTO orders (id, note) VALUES ($1, $2)", Protocol: extended, Err: "23505"},
		{SQL: "SELECT $1::int FROM missing", Protocol: extended, Err: "42P01"}, // fails when prepared
	}
	if diff := cmp.Diff(want, summarize(tp.statements())); diff != "" {
		t.Errorf("statements (-want +got):\n%s", diff)
	}
	if got := fingerprintCounts(tp.statements())["INSERT INTO orders (id, note) VALUES (?)"]; got != 4 {
		t.Errorf("INSERT fingerprint counted %d times, want 4", got)
	}
}

func TestPgxSimpleProtocol(t *testing.T) {
	tp, url, _ := proxied(t)
	conn := connect(t, url, pgx.QueryExecModeSimpleProtocol)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "CREATE TABLE t (id int, name text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO t VALUES ($1, $2)", -5, "it's"); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := conn.QueryRow(ctx, "SELECT name FROM t WHERE id = $1", -5).Scan(&name); err != nil || name != "it's" {
		t.Fatalf("name = %q, %v", name, err)
	}
	// Several statements in one query string are counted one by one.
	if _, err := conn.Exec(ctx, "UPDATE t SET name = 'a'; UPDATE t SET name = 'b' WHERE id = 1; SELECT 1"); err != nil {
		t.Fatal(err)
	}
	// A SQL-standard function body has semicolons of its own.
	if _, err := conn.Exec(ctx, "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END; SELECT f()"); err != nil {
		t.Fatal(err)
	}
	// pgx writes the arguments into the text.
	got := summarize(tp.statements())
	for i := 1; i <= 2; i++ {
		if i < len(got) && strings.Contains(got[i].SQL, "-5") {
			got[i].SQL = "(with -5)"
		}
	}
	want := []summary{
		{SQL: "CREATE TABLE t (id int, name text)", Protocol: simple, Tag: "CREATE TABLE"},
		{SQL: "(with -5)", Protocol: simple, Tag: "INSERT 0 1", Rows: 1},
		{SQL: "(with -5)", Protocol: simple, Tag: "SELECT 1", Rows: 1},
		{SQL: "UPDATE t SET name = 'a'", Protocol: simple, Tag: "UPDATE 1", Rows: 1},
		{SQL: "UPDATE t SET name = 'b' WHERE id = 1", Protocol: simple, Tag: "UPDATE 0"},
		{SQL: "SELECT 1", Protocol: simple, Tag: "SELECT 1", Rows: 1},
		{SQL: "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT 2; END", Protocol: simple, Tag: "CREATE FUNCTION"},
		{SQL: "SELECT f()", Protocol: simple, Tag: "SELECT 1", Rows: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("statements (-want +got):\n%s", diff)
	}
	fps := fingerprintCounts(tp.statements())
	if fps["SELECT name FROM t WHERE id = ?"] != 1 || fps["INSERT INTO t VALUES (?)"] != 1 || fps["UPDATE t SET name = ?"] != 1 {
		t.Errorf("fingerprints = %v", fps)
	}
}

func TestPgxBatch(t *testing.T) {
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			tp, url, _ := proxied(t)
			conn := connect(t, url, mode)
			ctx := context.Background()
			if _, err := conn.Exec(ctx, "CREATE TABLE b (id int)"); err != nil {
				t.Fatal(err)
			}
			tp.reset()
			const n = 10
			batch := &pgx.Batch{}
			for i := range n {
				batch.Queue("INSERT INTO b VALUES ($1)", i)
			}
			if err := conn.SendBatch(ctx, batch).Close(); err != nil {
				t.Fatal(err)
			}
			stmts := tp.statements()
			if len(stmts) != n {
				t.Fatalf("batch of %d counted %d statements: %+v", n, len(stmts), summarize(stmts))
			}
			if fps := fingerprintCounts(stmts); fps["INSERT INTO b VALUES (?)"] != n {
				t.Errorf("fingerprints = %v", fps)
			}

			// An error inside the pipeline: the server skips the rest up
			// to the Sync, and so does the count.
			tp.reset()
			batch = &pgx.Batch{}
			batch.Queue("INSERT INTO b VALUES ($1)", 100)
			batch.Queue("SELECT 1/$1::int", 0)
			batch.Queue("INSERT INTO b VALUES ($1)", 101)
			batch.Queue("INSERT INTO b VALUES ($1)", 102)
			err := conn.SendBatch(ctx, batch).Close()
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "22012" {
				t.Fatalf("batch error = %v, want division by zero", err)
			}
			got := summarize(tp.statements())
			if len(got) != 2 || got[0].Err != "" || got[1].Err != "22012" {
				t.Errorf("statements of a failing batch = %+v, want the INSERT and the failing SELECT", got)
			}
			// The failing SELECT is an error, not a completed statement.
			if st := tp.Stats(); st.Statements != n+1+1 || st.Errors != 1 {
				t.Errorf("Stats() = %d statements, %d errors; want %d and 1", st.Statements, st.Errors, n+1+1)
			}
			// The connection still counts right after the error.
			tp.reset()
			if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			if got := len(tp.statements()); got != 1 {
				t.Errorf("after the failed batch: %d statements, want 1", got)
			}
		})
	}
}

func TestPgxPreparedAndPortals(t *testing.T) {
	tp, url, _ := proxied(t)
	conn := connect(t, url, pgx.QueryExecModeCacheStatement)
	ctx := context.Background()
	if _, err := conn.Prepare(ctx, "q", "SELECT $1::int + 1"); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		var v int
		if err := conn.QueryRow(ctx, "q", i).Scan(&v); err != nil || v != i+1 {
			t.Fatalf("q(%d) = %d, %v", i, v, err)
		}
	}
	if err := conn.Deallocate(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	// A new statement under the same name has the new text.
	if _, err := conn.Prepare(ctx, "q", "SELECT $1::text"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "q", "x"); err != nil {
		t.Fatal(err)
	}
	fps := fingerprintCounts(tp.statements())
	want := map[string]int{"SELECT ?::int + ?": 3, "SELECT ?::text": 1}
	if diff := cmp.Diff(want, fps); diff != "" {
		t.Errorf("fingerprints (-want +got):\n%s", diff)
	}
}

func TestLibPQ(t *testing.T) {
	tp, url, _ := proxied(t)
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE p (id int, v text)"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := tx.ExecContext(ctx, "INSERT INTO p VALUES ($1, $2)", i, "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	stmt, err := db.PrepareContext(ctx, "SELECT v FROM p WHERE id = $1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		var v string
		if err := stmt.QueryRowContext(ctx, i).Scan(&v); err != nil {
			t.Fatal(err)
		}
	}
	stmt.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM p").Scan(&n); err != nil || n != 3 {
		t.Fatalf("count = %d, %v", n, err)
	}
	if _, err := db.ExecContext(ctx, "SELECT * FROM missing"); err == nil {
		t.Fatal("query of a missing table succeeded")
	}
	fps := fingerprintCounts(tp.statements())
	want := map[string]int{
		"CREATE TABLE p (id int, v text)": 1,
		"BEGIN READ WRITE":                1,
		"INSERT INTO p VALUES (?)":        3,
		"COMMIT":                          1,
		"SELECT v FROM p WHERE id = ?":    3,
		"SELECT count(*) FROM p":          1,
		"SELECT * FROM missing":           1,
	}
	if diff := cmp.Diff(want, fps); diff != "" {
		t.Errorf("fingerprints (-want +got):\n%s", diff)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replaykit/replay/internal/pgtest"
)

// itemsApp serves GET /items/{id}, which runs 5 statements (BEGIN, a
// SELECT and an UPDATE, COMMIT, then a SELECT outside the transaction), on a
// pool of 4 connections.
func itemsApp(t *testing.T, dbURL string) http.Handler {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items/{id}", func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := r.PathValue("id")
		var n int
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, "SELECT hits FROM items WHERE id = $1", id).Scan(&n); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
			_, err := tx.Exec(ctx, "UPDATE items SET hits = hits + 1 WHERE id = $1", id)
			return err
		})
		if err == nil {
			time.Sleep(time.Millisecond)
			err = pool.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n)
		}
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprintln(w, n)
	})
	return mux
}

// itemsStatements is how many statements a GET /items/{id} runs.
const itemsStatements = 5

// TestSQLPerRequestUnderConcurrency records 48 requests from 4 concurrent
// clients through --inbound and --postgres, without sqlcommenter: most
// statements cannot be attributed to one request, yet record, inspect and
// a replay run with 4 VUs and no explain phase all give GET /items/{id}'s
// statements per request within 10% of the truth, labelled. (Telling
// several endpoints apart takes more requests than this: see
// analyzer.TestEstimateSQL.)
func TestSQLPerRequestUnderConcurrency(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, db.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, `CREATE TABLE items (id int PRIMARY KEY, hits int NOT NULL);
		INSERT INTO items SELECT g, 0 FROM generate_series(1, 10) g`); err != nil {
		t.Fatal(err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(t.TempDir(), "items.snap")
	rec, stop := recordInProcess(t, &recordOptions{
		out:      snap,
		inbound:  []string{"127.0.0.1:0=http://" + l.Addr().String()},
		postgres: postgresFlags{spec: "127.0.0.1:0=" + db.Addr()},
	})
	srv := &http.Server{Handler: itemsApp(t, strings.Replace(db.URL("postgres"), db.Addr(), dialable(rec.PostgresAddr()), 1))}
	go srv.Serve(l)
	defer srv.Close()

	base := "http://" + dialable(rec.InboundAddrs()[0])
	const clients, perClient = 4, 12
	var wg sync.WaitGroup
	errs := make(chan error, clients*perClient)
	for c := range clients {
		wg.Go(func() {
			for i := range perClient {
				path := fmt.Sprintf("/items/%d", 1+(c*perClient+i)%10)
				resp, err := http.Get(base + path)
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("GET %s: %d", path, resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	recorded, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Log(recorded)
	if !strings.Contains(recorded, "GET /items/{id}") {
		t.Errorf("record's summary shows no GET /items/{id}:\n%s", recorded)
	}

	// inspect: the truth is every statement of the snapshot over the
	// requests that run some.
	code, stdout, stderr := cliRun(t, "", "inspect", snap, "--format", "json")
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	var inv struct {
		Statements   int64 `json:"statements"`
		Unattributed int64 `json:"unattributed_statements"`
		Endpoints    []struct {
			Endpoint      string  `json:"endpoint"`
			Count         int64   `json:"count"`
			SQLPerRequest float64 `json:"sql_per_request"`
			SQLMethod     string  `json:"sql_method"`
			SQLMargin     float64 `json:"sql_margin"`
		} `json:"endpoints"`
	}
	schematest.Check(t, "inspect", []byte(stdout))
	if err := json.Unmarshal([]byte(stdout), &inv); err != nil {
		t.Fatal(err)
	}
	items := int64(clients * perClient)
	if inv.Statements != items*itemsStatements {
		t.Fatalf("the snapshot holds %d statements, want %d × %d", inv.Statements, items, itemsStatements)
	}
	t.Logf("inspect: %d statements, %d not attributed", inv.Statements, inv.Unattributed)
	checkFigures := func(what string, got map[string][3]any) {
		t.Helper()
		items := got["GET /items/{id}"]
		if per, _ := items[0].(float64); math.Abs(per-itemsStatements) > 0.1*itemsStatements {
			t.Errorf("%s: GET /items/{id}: %v statements per request, want %d ±10%%", what, items, itemsStatements)
		}
		for ep, f := range got {
			if m := f[1].(string); m != "exact" && m != "estimated" {
				t.Errorf("%s: %s: method %q, want exact or estimated", what, ep, m)
			}
		}
	}
	figs := map[string][3]any{}
	for _, e := range inv.Endpoints {
		figs[e.Endpoint] = [3]any{e.SQLPerRequest, e.SQLMethod, e.SQLMargin}
	}
	t.Logf("inspect: %v", figs)
	checkFigures("inspect", figs)

	// run: 4 VUs, no explain phase, against a fresh copy of the app whose
	// pool dials the counter's address.
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pgListen := pl.Addr().String()
	pl.Close()
	target := httptest.NewServer(itemsApp(t, strings.Replace(db.URL("postgres"), db.Addr(), pgListen, 1)))
	defer target.Close()
	out := filepath.Join(t.TempDir(), "items.run")
	code, stdout, stderr = replayRun(t, "--snapshot", snap, "--out", out, "--target", target.URL,
		"--postgres", pgListen+"="+db.Addr(), "--vus", "4", "--iterations", "2", "--explain", "0", "--format", "json")
	if code != 0 {
		t.Fatalf("run: exit %d: %s\n%s", code, stderr, stdout)
	}
	var doc struct {
		Endpoints []struct {
			Endpoint      string  `json:"endpoint"`
			SQLPerRequest float64 `json:"sql_per_request"`
			SQLSource     string  `json:"sql_source"`
			SQLMethod     string  `json:"sql_method"`
			SQLMargin     float64 `json:"sql_margin"`
		} `json:"endpoints"`
	}
	schematest.Check(t, "run", []byte(stdout))
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	figs = map[string][3]any{}
	for _, e := range doc.Endpoints {
		figs[e.Endpoint] = [3]any{e.SQLPerRequest, e.SQLMethod, e.SQLMargin}
		if !strings.HasPrefix(e.SQLSource, "load") {
			t.Errorf("run: %s: SQL source %q, want the load phase's", e.Endpoint, e.SQLSource)
		}
	}
	t.Logf("run: %v", figs)
	checkFigures("run", figs)
}

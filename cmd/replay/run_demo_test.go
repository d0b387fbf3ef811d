package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/examples/orders/catalog"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/snapshots"
)

// TestRunDemoWorkloadCountsSQLPerRequest replays the demo workload, started
// by replay with --cmd, with its catalog API mocked and the SQL counter in
// front of a real PostgreSQL: GET /orders runs 1 statement per request, and
// 51 with APP_SLOW=1 (the N+1 over the 50 newest orders).
func TestRunDemoWorkloadCountsSQLPerRequest(t *testing.T) {
	db := pgtest.New(t)
	dbURL := db.URL("postgres")
	ctx := context.Background()

	// Seed 55 orders through the app itself.
	a, err := app.New(ctx, app.Config{DatabaseURL: dbURL})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	ids, err := app.Seed(ctx, srv.URL, nil, 55)
	srv.Close()
	a.Close()
	if err != nil {
		t.Fatal(err)
	}

	// The demo's build.
	dir := t.TempDir()
	bin := filepath.Join(dir, "orders")
	build := exec.Command("go", "build", "-o", bin, "github.com/replaykit/replay/examples/orders")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build examples/orders: %v\n%s", err, out)
	}

	// A snapshot of inbound traffic and the catalog call it made.
	catalogBody := httptest.NewRecorder()
	catalog.Handler().ServeHTTP(catalogBody, httptest.NewRequest("GET", "/products", nil))
	snap := filepath.Join(dir, "orders.snap")
	w, err := snapshots.Create(snap, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	in := func(path string) int64 {
		start = start.Add(50 * time.Millisecond)
		id := w.NewID()
		w.AddExchange(&snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Protocol: "http", Service: "127.0.0.1:8080", Start: start,
			Duration: 5 * time.Millisecond, Method: "GET", URL: "http://127.0.0.1:8080" + path,
			RequestHeader: http.Header{"Accept": {"application/json"}, "User-Agent": {"demo"}}, Status: 200})
		return id
	}
	in("/orders")
	in("/orders/" + strconv.FormatInt(ids[3], 10))
	in("/orders/" + strconv.FormatInt(ids[4], 10) + "/status")
	catalogID := in("/catalog")
	in("/orders")
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Outbound, Protocol: "https", Service: "catalog.example:443", Start: start,
		Duration: 3 * time.Millisecond, Method: "GET", URL: "https://catalog.example/products", ParentID: catalogID,
		RequestHeader: http.Header{"Accept": {"application/json"}}, Status: 200,
		ResponseHeader: catalogBody.Header(), ResponseBody: catalogBody.Body.Bytes(), ResponseBodySize: int64(catalogBody.Body.Len())})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name     string
		extra    []string
		wantCode int
		wantSQL  float64
	}{
		{"APP_SLOW=0", []string{"--env", "APP_SLOW=0"}, 0, 1},
		{"APP_SLOW=1", []string{"--env", "APP_SLOW=1"}, exitRegression, 51},
		// The app tags its SQL with the request's traceparent: counts are
		// exact under concurrent load, without an explain phase.
		{"APP_SLOW=1 sqlcommenter", []string{"--env", "APP_SLOW=1", "--env", "APP_SQLCOMMENT=1", "--sql-traced", "--explain", "0", "--vus", "4"}, exitRegression, 51},
		// An app that insists on TLS to its database gets it from the
		// counter (the server behind it is in the clear).
		// The build names the server localhost, --postgres 127.0.0.1: the
		// same address, rewritten all the same (issue 23: it bypassed the
		// counter and the N+1 passed its goal).
		{"APP_SLOW=1 localhost", []string{"--env", "APP_SLOW=1", "--env", "DATABASE_URL=" + strings.Replace(dbURL, "127.0.0.1", "localhost", 1)}, exitRegression, 51},
		{"APP_SLOW=1 sslmode=require", []string{"--env", "APP_SLOW=1", "--env", "DATABASE_URL=" + strings.Replace(dbURL, "sslmode=disable", "sslmode=require", 1), "--postgres-tls"}, exitRegression, 51},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".run")
			args := []string{"--snapshot", snap, "--out", out, "--cmd", bin,
				"--env", "DATABASE_URL=" + dbURL, "--env", "CATALOG_URL=https://catalog.example",
				"--mock", "catalog.example:443", "--ca-dir", filepath.Join(dir, "ca"),
				"--postgres", "127.0.0.1:0=" + db.Addr(), "--vus", "2", "--iterations", "4",
				"--format", "json", "--goal", "GET /orders: sql<=5", "--goal", "success>99%"}
			code, stdout, stderr := replayRun(t, append(args, tt.extra...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr: %s\n%s", code, tt.wantCode, stderr, stdout)
			}
			t.Log(stdout)
			v := decodeRunJSON(t, stdout)
			sql := map[string]float64{}
			for _, e := range v.Endpoints {
				sql[e.Endpoint] = e.SQLPerRequest
				if e.Failed != 0 {
					t.Errorf("%s: %d failed", e.Endpoint, e.Failed)
				}
			}
			want := map[string]float64{"GET /orders": tt.wantSQL, "GET /orders/{id}": 1, "GET /orders/{id}/status": 1, "GET /catalog": 0}
			for ep, n := range want {
				if sql[ep] != n {
					t.Errorf("%s: %v statements per request, want %v (all: %v)", ep, sql[ep], n, sql)
				}
			}
			if v.Requests != 20 {
				t.Errorf("%d load requests, want 20", v.Requests)
			}
			run, err := snapshots.OpenRun(out)
			if err != nil {
				t.Fatal(err)
			}
			defer run.Close()
			if info := run.Info(); info.MockMisses != 0 || info.Statements == 0 {
				t.Errorf("run info: %d mock misses, %d statements", info.MockMisses, info.Statements)
			}
		})
	}
}

func TestRunMockSettingsForAURLTarget(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "m.snap")
	w, err := snapshots.Create(snap, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "app:80", Start: start, Method: "GET", URL: "http://app/x", Status: 200})
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Outbound, Protocol: "https", Service: "api.test:443", Start: start, Method: "GET",
		URL: "https://api.test/v1", Status: 200, ResponseBody: []byte("{}"), ResponseBodySize: 2})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rt := newRunTarget(t, 0)
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", rt.URL, "--out", filepath.Join(dir, "r.run"),
		"--mock", "api.test:443", "--ca-dir", filepath.Join(dir, "ca"), "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	decodeRunJSON(t, stdout) // stdout stays clean JSON
	for _, want := range []string{"mock: answering api.test:443 on 127.0.0.1:", "HTTPS_PROXY=http://127.0.0.1:", "SSL_CERT_FILE=" + filepath.Join(dir, "ca", "bundle.pem")} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

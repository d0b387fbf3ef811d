package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// tracer records the SQL of every query pgx runs (Query, QueryRow, Exec,
// and so Begin and Commit), independently of the app's code paths.
type tracer struct {
	mu   sync.Mutex
	sqls []string
}

func (tr *tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	tr.mu.Lock()
	tr.sqls = append(tr.sqls, data.SQL)
	tr.mu.Unlock()
	return ctx
}

func (tr *tracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements traced since the last take.
func (tr *tracer) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	s := tr.sqls
	tr.sqls = nil
	return s
}

// newPool opens a pool on url with pgx's defaults plus tr as tracer.
func newPool(t *testing.T, url string, tr *tracer, appName string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if tr != nil {
		cfg.ConnConfig.Tracer = tr
	}
	if appName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = appName
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// startApp builds the app with cfg and serves it on a loopback test server.
func startApp(t *testing.T, cfg app.Config) (*app.App, string) {
	t.Helper()
	a, err := app.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("app.New: %v", err)
	}
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	return a, srv.URL
}

// response is what call got back.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorMessage returns the "error" of a JSON error body, failing the test if
// the body is not one.
func (r response) errorMessage(t *testing.T) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type = %q, want application/json", ct)
	}
	var e struct {
		Error string `json:"error"`
	}
	r.decode(t, &e)
	if e.Error == "" {
		t.Errorf("error body %s has no \"error\"", r.body)
	}
	return e.Error
}

var testClient = &http.Client{Timeout: 60 * time.Second}

// call sends one request; body is sent as is when it is a string, as JSON
// otherwise.
func call(t *testing.T, method, url string, body any, header ...string) response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

func TestRecordUsageErrors(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.snap")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no out", []string{"--inbound", ":0=http://127.0.0.1:1"}, "--out SNAP is required"},
		{"nothing to record", []string{"--out", out}, "nothing to record"},
		{"inbound without URL", []string{"--out", out, "--inbound", "127.0.0.1:0"}, "want LISTEN=URL"},
		{"inbound bad listen", []string{"--out", out, "--inbound", "nohost=http://127.0.0.1:1"}, `listen address "nohost" is not [HOST]:PORT`},
		{"inbound bad port", []string{"--out", out, "--inbound", "127.0.0.1:99999=http://127.0.0.1:1"}, "has no valid port"},
		{"inbound bad URL", []string{"--out", out, "--inbound", ":0=ftp://x"}, "want http://HOST:PORT"},
		{"inbound empty URL", []string{"--out", out, "--inbound", ":0="}, "want http://HOST:PORT"},
		{"outbound bad listen", []string{"--out", out, "--outbound", "x"}, "--outbound"},
		{"postgres without server", []string{"--out", out, "--postgres", "127.0.0.1:0"}, "want HOST:PORT of PostgreSQL, or LISTEN=HOST:PORT"},
		{"postgres bad server", []string{"--out", out, "--postgres", "127.0.0.1:0=db"}, `the server "db" is not HOST:PORT`},
		{"bad endpoint rule", []string{"--out", out, "--inbound", ":0=http://127.0.0.1:1", "--endpoint", "orders"}, "--endpoint"},
		{"negative body limit", []string{"--out", out, "--inbound", ":0=http://127.0.0.1:1", "--body-limit", "-1"}, "--body-limit -1"},
		{"bad redact header", []string{"--out", out, "--inbound", ":0=http://127.0.0.1:1", "--redact-header", "X-A: b"}, "want a header name"},
		{"resolve without outbound", []string{"--out", out, "--inbound", ":0=http://127.0.0.1:1", "--resolve", "a:1=b:2"}, "--resolve applies to --outbound"},
		{"bad resolve", []string{"--out", out, "--outbound", "127.0.0.1:0", "--resolve", "a=b"}, "want HOST:PORT=ADDR"},
		{"http2 without outbound", []string{"--out", out, "--inbound", ":0=http://127.0.0.1:1", "--outbound-http2"}, "--outbound-http2 applies to --outbound"},
		{"positional argument", []string{"--out", out, "--inbound", ":0=http://127.0.0.1:1", "extra"}, `takes no arguments, got "extra"`},
		{"unknown flag", []string{"--out", out, "--inbund", ":0=http://127.0.0.1:1"}, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"record"}, tt.args...), streams{out: &stdout, err: &stderr})
			if code != exitUsage {
				t.Errorf("exit code %d; want %d", code, exitUsage)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q; want one line containing %q", msg, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a snapshot was created")
			}
		})
	}
}

func TestRecordCannotRun(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.snap")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	fresh := filepath.Join(dir, "new.snap")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"out exists", []string{"--out", existing, "--inbound", "127.0.0.1:0=http://127.0.0.1:1"}, "already exists"},
		{"port in use", []string{"--out", fresh, "--inbound", busy.Addr().String() + "=http://127.0.0.1:1"}, "address already in use"},
		{"second port in use", []string{"--out", fresh, "--inbound", "127.0.0.1:0=http://127.0.0.1:1", "--inbound", busy.Addr().String() + "=http://127.0.0.1:1"}, "address already in use"},
		{"upstream CA missing", []string{"--out", fresh, "--inbound", "127.0.0.1:0=http://127.0.0.1:1", "--upstream-ca", filepath.Join(dir, "nope.pem")}, "--upstream-ca"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"record"}, tt.args...), streams{out: &stdout, err: &stderr})
			if code != exitError {
				t.Errorf("exit code %d; want %d", code, exitError)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q; want one line containing %q", msg, tt.want)
			}
			if b, _ := os.ReadFile(existing); string(b) != "keep me" {
				t.Errorf("the existing file was changed")
			}
			if _, err := os.Stat(fresh); err == nil {
				t.Errorf("a snapshot was left behind")
			}
		})
	}
}

// recordInProcess runs recordRun until the returned stop is called; it
// returns the recording once it listens.
func recordInProcess(t *testing.T, opts *recordOptions) (rec *recorder.Session, stop func() (stdout string, err error)) {
	t.Helper()
	var stdout, stderr syncbuf.Buffer
	opts.stdout, opts.stderr = &stdout, &stderr
	if opts.bodyLimit == 0 {
		opts.bodyLimit = 1 << 20
	}
	if opts.stopTimeout == 0 {
		opts.stopTimeout = 30 * time.Second
	}
	ready := make(chan *recorder.Session, 1)
	opts.onReady = func(r *recorder.Session) { ready <- r }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- recordRun(ctx, opts) }()
	select {
	case rec = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("record: %v; stderr %s", err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("record did not start listening within 60s")
	}
	var once sync.Once
	var err error
	stop = func() (string, error) {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return stdout.String(), err
	}
	t.Cleanup(func() { stop() })
	return rec, stop
}

// TestRecordOutboundHTTP2: with --outbound-http2 an app that offers h2
// speaks it inside the intercepted tunnel and the exchange is recorded as
// HTTP/2; without it the same app gets HTTP/1.1. (The proxy's own call to
// the upstream is HTTP/1.1 either way.)
func TestRecordOutboundHTTP2(t *testing.T) {
	upstream := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "items at %s", r.URL.Path)
	}))
	upstream.StartTLS()
	defer upstream.Close()
	dir := t.TempDir()
	upstreamCA := filepath.Join(dir, "upstream.pem")
	if err := os.WriteFile(upstreamCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: upstream.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, h2 := range []bool{true, false} {
		t.Run(fmt.Sprintf("http2=%v", h2), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "h2.snap")
			rec, stop := recordInProcess(t, &recordOptions{
				out:           out,
				outbound:      "127.0.0.1:0",
				outboundHTTP2: h2,
				caDir:         filepath.Join(dir, "ca"),
				resolve:       []string{"api.example.com:443=" + upstream.Listener.Addr().String()},
				upstreamCA:    upstreamCA,
			})
			authority, err := ca.LoadOrCreate(filepath.Join(dir, "ca"))
			if err != nil {
				t.Fatal(err)
			}
			proxyURL, _ := url.Parse("http://" + rec.OutboundAddr().String())
			client := &http.Client{Transport: &http.Transport{
				Proxy:             http.ProxyURL(proxyURL),
				TLSClientConfig:   &tls.Config{RootCAs: authority.Pool()},
				ForceAttemptHTTP2: true,
			}}
			res, err := client.Get("https://api.example.com/v1/items")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			client.CloseIdleConnections()
			want := "HTTP/1.1"
			if h2 {
				want = "HTTP/2.0"
			}
			if res.Proto != want || string(body) != "items at /v1/items" {
				t.Errorf("app got %s %q; want %s", res.Proto, body, want)
			}
			if _, err := stop(); err != nil {
				t.Fatal(err)
			}
			snap, err := snapshots.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer snap.Close()
			var got []string
			for e, err := range snap.Exchanges(context.Background(), snapshots.Filter{}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, e.Proto+" "+e.URL+" "+string(e.ResponseBody))
			}
			if w := want + " https://api.example.com/v1/items items at /v1/items"; len(got) != 1 || got[0] != w {
				t.Errorf("recorded %q; want [%q]", got, w)
			}
		})
	}
}

// TestRecordInboundOutboundPostgres records an app that, for each request,
// queries PostgreSQL through --postgres and calls an HTTPS upstream through
// --outbound: everything lands in one snapshot, linked to its request.
func TestRecordInboundOutboundPostgres(t *testing.T) {
	db := pgtest.New(t)
	dir := t.TempDir()

	upstream := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"items":[%q]}`, r.URL.Path)
	}))
	defer upstream.Close()
	upstreamCA := filepath.Join(dir, "upstream.pem")
	if err := os.WriteFile(upstreamCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: upstream.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}

	// The app reaches the database and the upstream through the recorder;
	// it learns their addresses once the recorder listens.
	var app struct {
		sync.Mutex
		pool   *pgxpool.Pool
		client *http.Client
	}
	appSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app.Lock()
		pool, client := app.pool, app.client
		app.Unlock()
		var n int
		if err := pool.QueryRow(r.Context(), "SELECT $1::int + 1", 41).Scan(&n); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		if _, err := pool.Exec(r.Context(), "SELECT 1"); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		req, _ := http.NewRequestWithContext(r.Context(), "GET", "https://api.example.com/v1/items/7", nil)
		req.Header.Set("X-Upstream-Key", "upstream-secret")
		res, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Fprintf(w, `{"n":%d,"catalog":%s}`, n, body)
	}))
	defer appSrv.Close()

	out := filepath.Join(dir, "all.snap")
	rec, stop := recordInProcess(t, &recordOptions{
		out:        out,
		inbound:    []string{"127.0.0.1:0=" + appSrv.URL},
		outbound:   "127.0.0.1:0",
		postgres:   postgresFlags{spec: "127.0.0.1:0=" + db.Addr()},
		caDir:      filepath.Join(dir, "ca"),
		resolve:    []string{"api.example.com:443=" + upstream.Listener.Addr().String()},
		upstreamCA: upstreamCA,
		bodyLimit:  10,
		// X-Api-Key is redacted on the way in, X-Upstream-Key on the way out.
		redact: redact.Config{Headers: []string{"X-Api-Key", "x-upstream-key"}},
	})
	authority, err := ca.LoadOrCreate(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	pgURL := strings.Replace(db.URL("postgres"), db.Addr(), rec.PostgresAddr().String(), 1)
	pool, err := pgxpool.New(context.Background(), pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	proxyURL, _ := url.Parse("http://" + rec.OutboundAddr().String())
	app.Lock()
	app.pool = pool
	app.client = &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxyURL),
		TLSClientConfig: &tls.Config{RootCAs: authority.Pool()},
	}}
	app.Unlock()

	const requests = 5
	front := "http://" + rec.InboundAddrs()[0].String()
	for i := range requests {
		req, _ := http.NewRequest("GET", fmt.Sprintf("%s/orders/%d", front, i+1), nil)
		req.Header.Set("X-Api-Key", "secret")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if want := `{"n":42,"catalog":{"items":["/v1/items/7"]}}`; string(body) != want {
			t.Fatalf("app answered %d %s; want %s", res.StatusCode, body, want)
		}
	}
	pool.Close()
	stdout, err := stop()
	if err != nil {
		t.Fatal(err)
	}

	for _, row := range [][]string{
		{"inbound", rec.InboundAddrs()[0].String(), "GET", "/orders/{id}", "5", "2.0"},
		{"outbound", "api.example.com:443", "GET", "/v1/items/{id}", "5", "-"},
	} {
		if !hasRow(stdout, row...) {
			t.Errorf("summary lacks the row %q:\n%s", row, stdout)
		}
	}
	if want := "10 statements, 10 attributed to requests"; !strings.Contains(stdout, want) {
		t.Errorf("summary lacks %q:\n%s", want, stdout)
	}

	snap, err := snapshots.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	inbound := map[int64]bool{}
	var outbound []*snapshots.Exchange
	for e, err := range snap.Exchanges(context.Background(), snapshots.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Direction == snapshots.Inbound {
			inbound[e.ID] = true
			if got := e.RequestHeader.Get("X-Api-Key"); got != "[REDACTED]" {
				t.Errorf("inbound X-Api-Key recorded as %q", got)
			}
		} else {
			outbound = append(outbound, e)
			if got := e.RequestHeader.Get("X-Upstream-Key"); got != "[REDACTED]" {
				t.Errorf("outbound X-Upstream-Key recorded as %q", got)
			}
		}
		if len(e.ResponseBody) != 10 || !e.ResponseTruncated() {
			t.Errorf("%s response body recorded as %d of %d bytes; want 10 (--body-limit)", e.URL, len(e.ResponseBody), e.ResponseBodySize)
		}
	}
	if len(inbound) != requests || len(outbound) != requests {
		t.Fatalf("%d inbound and %d outbound exchanges; want %d each", len(inbound), len(outbound), requests)
	}
	for _, e := range outbound {
		if !inbound[e.ParentID] || e.URL != "https://api.example.com/v1/items/7" && e.URL != "https://api.example.com:443/v1/items/7" {
			t.Errorf("outbound %s has parent %d; want one of the inbound exchanges", e.URL, e.ParentID)
		}
	}
	perExchange := map[int64]int{}
	for s, err := range snap.Statements(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if s.ExchangeID != 0 {
			perExchange[s.ExchangeID]++
		}
	}
	for id := range inbound {
		if perExchange[id] != 2 {
			t.Errorf("exchange %d has %d statements; want 2", id, perExchange[id])
		}
	}
}

// hasRow reports whether text has a line made of fields.
func hasRow(text string, fields ...string) bool {
	for line := range strings.Lines(text) {
		if slices.Equal(strings.Fields(line), fields) {
			return true
		}
	}
	return false
}

// TestRecordPostgresTLS: --postgres-tls and --postgres-upstream-tls put TLS
// on both sides of the SQL counter, for an app that insists on a verified
// connection and a server that admits only TLS; the statements are recorded
// and linked to their requests as in the clear.
func TestRecordPostgresTLS(t *testing.T) {
	dir := t.TempDir()
	caDir := filepath.Join(dir, "ca")
	db, authority := tlsOnlyCluster(t, caDir)

	var app struct {
		sync.Mutex
		pool *pgxpool.Pool
	}
	appSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app.Lock()
		pool := app.pool
		app.Unlock()
		var ssl bool
		if err := pool.QueryRow(r.Context(), "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		fmt.Fprintf(w, "ssl=%v", ssl)
	}))
	defer appSrv.Close()

	rec, stop := recordInProcess(t, &recordOptions{
		out:     filepath.Join(dir, "tls.snap"),
		inbound: []string{"127.0.0.1:0=" + appSrv.URL},
		postgres: postgresFlags{spec: "127.0.0.1:0=" + db.Addr(),
			tls: pgTLSOptions{prefix: "postgres-", offer: true, upstream: sqlcount.TLSVerifyFull, upstreamCA: authority.CertPath()}},
		caDir: caDir,
	})
	pool, err := pgxpool.New(context.Background(),
		"postgres://"+db.User+"@"+rec.PostgresAddr().String()+"/postgres?sslmode=verify-full&sslrootcert="+authority.CertPath())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	app.Lock()
	app.pool = pool
	app.Unlock()
	front := "http://" + rec.InboundAddrs()[0].String()
	for range 3 {
		res, err := http.Get(front + "/tls")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if string(body) != "ssl=true" {
			t.Fatalf("app answered %d %q; want the server to see TLS", res.StatusCode, body)
		}
	}
	pool.Close()
	stdout, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 statements, 3 attributed to requests",
		"postgres " + rec.PostgresAddr().String() + " (TLS offered) → " + db.Addr() + " over TLS (verify-full)"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
}

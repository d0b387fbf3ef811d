package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/sqlcount"
)

func TestSQLCountUsage(t *testing.T) {
	for _, args := range [][]string{
		{"sqlcount", "--upstream", "127.0.0.1:5432"},
		{"sqlcount", "--listen", "127.0.0.1:0"},
		{"sqlcount", "--listen", "127.0.0.1:0", "--upstream", "nohostport"},
		{"sqlcount", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:5432", "extra"},
		{"sqlcount", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:5432", "--upstream-tls", "prefer"},
		{"sqlcount", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:5432", "--upstream-tls-ca", "ca.pem"},
		{"record", "--out", "x.snap", "--inbound", "127.0.0.1:0=http://127.0.0.1:1", "--postgres-tls"},
		{"run", "--snapshot", "x.snap", "--target", "http://127.0.0.1:1", "--out", "x.run", "--postgres-upstream-tls", "require"},
		{"compare", "--snapshot", "x.snap", "--baseline-url", "http://127.0.0.1:1", "--candidate-url", "http://127.0.0.1:2", "--postgres-tls"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, streams{in: strings.NewReader(""), out: &out, err: &errOut}); code != exitUsage {
			t.Errorf("replay %s: exit %d, want %d (stderr %q)", strings.Join(args, " "), code, exitUsage, errOut.String())
		}
	}
}

func TestSQLCountRun(t *testing.T) {
	c := pgtest.New(t)
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "counts.json")
	addr, stop := startSQLCount(t, &sqlcountOptions{upstream: c.Addr(), jsonPath: jsonPath})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://"+c.User+"@"+addr.String()+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := conn.Exec(ctx, "SELECT $1::int", i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "SELECT 'a'; SELECT 'b'"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	text, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listening on " + addr.String(), "5 statements, 2 fingerprints", "FINGERPRINT", "SELECT ?::int", "SELECT ?"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "SELECT ?::int") > strings.Index(text, "SELECT ?\n") {
		t.Errorf("table not sorted by count:\n%s", text)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Statements   int64 `json:"statements"`
		Fingerprints []struct {
			Fingerprint string   `json:"fingerprint"`
			Count       int64    `json:"count"`
			TotalMS     *float64 `json:"total_ms"`
			MeanMS      *float64 `json:"mean_ms"`
		} `json:"fingerprints"`
	}
	schematest.Check(t, "sqlcount", b)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got.Statements != 5 || len(got.Fingerprints) != 2 ||
		got.Fingerprints[0].Fingerprint != "SELECT ?::int" || got.Fingerprints[0].Count != 3 ||
		got.Fingerprints[1].Fingerprint != "SELECT ?" || got.Fingerprints[1].Count != 2 ||
		got.Fingerprints[0].TotalMS == nil || got.Fingerprints[0].MeanMS == nil {
		t.Errorf("json file:\n%s", b)
	}
}

// TestSQLCountTLS: with --tls and --upstream-tls verify-full, an app that
// insists on a verified TLS connection reaches a server that admits only
// TLS, through sqlcount, which counts its statements.
func TestSQLCountTLS(t *testing.T) {
	caDir := t.TempDir()
	c, authority := tlsOnlyCluster(t, caDir)
	addr, stop := startSQLCount(t, &sqlcountOptions{upstream: c.Addr(), caDir: caDir,
		tls: pgTLSOptions{offer: true, upstream: sqlcount.TLSVerifyFull, upstreamCA: authority.CertPath()}})
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, "postgres://"+c.User+"@"+addr.String()+"/postgres?sslmode=verify-full&sslrootcert="+authority.CertPath())
	if err != nil {
		t.Fatal(err)
	}
	var ssl bool
	if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Errorf("server side of sqlcount encrypted: %v, %v", ssl, err)
	}
	conn.Close(ctx)
	text, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listening on " + addr.String() + " (TLS offered), forwarding to " + c.Addr() + " over TLS (verify-full)", "1 statement, 1 fingerprint"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

// startSQLCount runs `replay sqlcount` with opts on a free loopback port;
// stop ends it as SIGINT does and returns what it printed and its error.
func startSQLCount(t *testing.T, opts *sqlcountOptions) (addr net.Addr, stop func() (string, error)) {
	t.Helper()
	var out, errOut syncbuf.Buffer
	addrs := make(chan net.Addr, 1)
	opts.listen, opts.out, opts.errOut = "127.0.0.1:0", &out, &errOut
	opts.onListen = func(a net.Addr) { addrs <- a }
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- sqlcountRun(ctx, opts) }()
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("sqlcount ended before listening: %v; stderr %s", err, errOut.String())
	}
	return addr, func() (string, error) {
		cancel()
		select {
		case err := <-done:
			return out.String(), err
		case <-time.After(30 * time.Second):
			t.Fatal("sqlcount did not stop")
			return "", nil
		}
	}
}

// tlsOnlyCluster starts a cluster that admits TCP clients over TLS only,
// with a certificate for 127.0.0.1 from the CA in caDir (made if missing).
func tlsOnlyCluster(t *testing.T, caDir string) (*pgtest.Cluster, *ca.CA) {
	t.Helper()
	authority, err := ca.LoadOrCreate(caDir)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := authority.Leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return pgtest.New(t, pgtest.Config{TLS: leaf, RequireTLS: true}), authority
}

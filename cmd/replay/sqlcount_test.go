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

	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/internal/syncbuf"
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
	var out, errOut bytes.Buffer
	addrs := make(chan net.Addr, 1)
	opts := &sqlcountOptions{
		listen: "127.0.0.1:0", upstream: c.Addr(), jsonPath: jsonPath,
		out: &out, errOut: &errOut, onListen: func(a net.Addr) { addrs <- a },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sqlcountRun(ctx, opts) }()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("sqlcount ended before listening: %v", err)
	}

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
	cancel() // as SIGINT does
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sqlcount did not stop")
	}

	text := out.String()
	for _, want := range []string{"listening on " + addr.String(), "5 statements, 2 fingerprints", "FINGERPRINT", "SELECT ? :: int", "SELECT ?"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Index(text, "SELECT ? :: int") > strings.Index(text, "SELECT ?\n") {
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
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got.Statements != 5 || len(got.Fingerprints) != 2 ||
		got.Fingerprints[0].Fingerprint != "SELECT ? :: int" || got.Fingerprints[0].Count != 3 ||
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
	authority, err := ca.LoadOrCreate(caDir)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := authority.Leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	c := pgtest.New(t, pgtest.Config{TLS: leaf, RequireTLS: true})
	var out, errOut syncbuf.Buffer
	addrs := make(chan net.Addr, 1)
	opts := &sqlcountOptions{
		listen: "127.0.0.1:0", upstream: c.Addr(), caDir: caDir,
		tls: pgTLSOptions{offer: true, upstream: pgTLSVerifyFull, upstreamCA: authority.CertPath()},
		out: &out, errOut: &errOut, onListen: func(a net.Addr) { addrs <- a },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sqlcountRun(ctx, opts) }()
	var addr net.Addr
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("sqlcount ended before listening: %v", err)
	}
	conn, err := pgx.Connect(ctx, "postgres://"+c.User+"@"+addr.String()+"/postgres?sslmode=verify-full&sslrootcert="+authority.CertPath())
	if err != nil {
		t.Fatal(err)
	}
	var ssl bool
	if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Errorf("server side of sqlcount encrypted: %v, %v", ssl, err)
	}
	conn.Close(ctx)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sqlcount did not stop")
	}
	text := out.String()
	for _, want := range []string{"listening on " + addr.String() + " (TLS offered), forwarding to " + c.Addr() + " over TLS (verify-full)", "1 statements"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

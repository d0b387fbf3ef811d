package pgtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/ca"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestDatabasesAreIsolated(t *testing.T) {
	ctx := context.Background()
	a, b := Database(t), Database(t)
	if a == b {
		t.Fatalf("two databases share a URL: %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n)
	if n != 0 {
		t.Errorf("table created in one database is visible in the other")
	}
}

func TestSeveralClustersAtOnce(t *testing.T) {
	if os.Getenv(EnvURL) != "" {
		t.Skip("uses " + EnvURL)
	}
	a, b := New(t), New(t)
	if a.Port == b.Port {
		t.Fatalf("two clusters on one port %d", a.Port)
	}
	for _, c := range []*Cluster{a, b} {
		conn, err := pgx.Connect(context.Background(), c.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		conn.Close(context.Background())
	}
}

// TestTLSCluster: with TLS and RequireTLS the server admits TCP clients over
// TLS only, presenting the given certificate.
func TestTLSCluster(t *testing.T) {
	authority, err := ca.LoadOrCreate(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := authority.Leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	c := New(t, Config{TLS: leaf, RequireTLS: true})
	ctx := context.Background()
	if conn, err := pgx.Connect(ctx, c.URL("postgres")); err == nil || !strings.Contains(err.Error(), "no pg_hba.conf entry") {
		if conn != nil {
			conn.Close(ctx)
		}
		t.Errorf("in the clear: %v, want refused", err)
	}
	cfg, err := pgx.ParseConfig(strings.Replace(c.URL("postgres"), "sslmode=disable", "sslmode=verify-full", 1))
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSConfig = &tls.Config{RootCAs: authority.Pool(), ServerName: "127.0.0.1"}
	var verified []*x509.Certificate
	cfg.TLSConfig.VerifyConnection = func(cs tls.ConnectionState) error { verified = cs.PeerCertificates; return nil }
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var ssl bool
	if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Errorf("ssl %v, %v", ssl, err)
	}
	if len(verified) == 0 || !verified[0].Equal(leaf.Leaf) {
		t.Errorf("the server presented %d certificates, not the given one", len(verified))
	}
}

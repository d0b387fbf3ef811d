package pgwire

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgtest"
)

// tlsCluster starts a cluster that admits TCP clients over TLS only, with a
// certificate for 127.0.0.1 signed by authority.
func tlsCluster(t *testing.T, authority *ca.CA) *pgtest.Cluster {
	t.Helper()
	leaf, err := authority.Leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return pgtest.New(t, pgtest.Config{TLS: leaf, RequireTLS: true})
}

// TestTLS: an app that insists on TLS (sslmode=verify-full, trusting
// replay's CA) talks TLS to sqlcount, sqlcount talks TLS to a server that
// admits nothing else, and every statement is still counted; psql with
// sslmode=require works the same.
func TestTLS(t *testing.T) {
	authority, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := tlsCluster(t, authority)
	tp := startProxy(t, c.Addr(), func(cfg *Config) {
		cfg.ClientTLS = authority.TLSConfig("127.0.0.1")
		cfg.UpstreamTLS = &tls.Config{RootCAs: authority.Pool()}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	url := fmt.Sprintf("postgres://%s@%s/postgres?sslmode=verify-full&sslrootcert=%s", c.User, tp.Addr, authority.CertPath())
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Left open: ending Serve (the test's cleanup) must end it.
	if _, err := pgx.Connect(ctx, url); err != nil {
		t.Fatal(err)
	}
	if _, ok := conn.PgConn().Conn().(*tls.Conn); !ok {
		t.Errorf("the app's connection to sqlcount is %T, not TLS", conn.PgConn().Conn())
	}
	var serverSSL bool
	if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&serverSSL); err != nil {
		t.Fatal(err)
	}
	if !serverSSL {
		t.Error("the server sees sqlcount's connection in the clear")
	}
	for i := range 5 {
		var n int
		if err := conn.QueryRow(ctx, "SELECT $1::int + 1", i).Scan(&n); err != nil || n != i+1 {
			t.Fatalf("query %d: %d, %v", i, n, err)
		}
	}

	psql := exec.CommandContext(ctx, bin(t, "psql"), "-X", "-A", "-t",
		fmt.Sprintf("host=%s port=%d user=%s dbname=postgres sslmode=require", tp.Host, tp.Port, c.User),
		"-c", "SELECT 40 + 2", "-c", "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
	psql.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=30")
	out, err := psql.CombinedOutput()
	if err != nil || strings.Fields(string(out))[0] != "42" || strings.Fields(string(out))[1] != "t" {
		t.Errorf("psql sslmode=require: %v: %q", err, out)
	}

	want := map[string]int{
		"SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()": 2,
		"SELECT ?::int + ?": 5,
		"SELECT ? + ?":      1,
	}
	deadline := time.Now().Add(10 * time.Second)
	got := fingerprintCounts(tp.statements())
	for !mapsEqual(got, want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		got = fingerprintCounts(tp.statements())
	}
	if !mapsEqual(got, want) {
		t.Errorf("statements per fingerprint %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestTLSRefusals: each side that does not get the TLS it needs fails the
// app's connection with a reason, and the proxy goes on serving.
func TestTLSRefusals(t *testing.T) {
	authority, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	plain := pgtest.New(t)
	secure := tlsCluster(t, authority)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func(tp *testProxy, user, sslmode string) error {
		conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://%s@%s/postgres?sslmode=%s", user, tp.Addr, sslmode))
		if err == nil {
			conn.Close(ctx)
		}
		return err
	}

	// sqlcount in the clear to a server that wants TLS: the server's own
	// refusal reaches the app.
	tp := startProxy(t, secure.Addr())
	if err := connect(tp, secure.User, "disable"); err == nil || !strings.Contains(err.Error(), "no pg_hba.conf entry") {
		t.Errorf("clear upstream to a TLS-only server: %v", err)
	}
	// An app that requires TLS from a sqlcount that offers none.
	if err := connect(tp, secure.User, "require"); err == nil || !strings.Contains(err.Error(), "server refused TLS connection") {
		t.Errorf("sslmode=require without ClientTLS: %v", err)
	}

	// sqlcount requiring TLS of a server without it.
	tp = startProxy(t, plain.Addr(), func(c *Config) { c.UpstreamTLS = &tls.Config{RootCAs: authority.Pool()} })
	if err := connect(tp, plain.User, "disable"); err == nil || !strings.Contains(err.Error(), "does not accept TLS") {
		t.Errorf("UpstreamTLS to a server without TLS: %v", err)
	}
	// ... or with a certificate it does not trust.
	tp = startProxy(t, secure.Addr(), func(c *Config) { c.UpstreamTLS = &tls.Config{} })
	if err := connect(tp, secure.User, "disable"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("UpstreamTLS with an untrusted server certificate: %v", err)
	}
	// Still serving: a good connection after the failures.
	tp = startProxy(t, secure.Addr(), func(c *Config) { c.UpstreamTLS = &tls.Config{RootCAs: authority.Pool()} })
	if err := connect(tp, secure.User, "disable"); err != nil {
		t.Errorf("TLS upstream, clear client: %v", err)
	}
}

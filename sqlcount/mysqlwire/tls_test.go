package mysqlwire

import (
	"context"
	"crypto/tls"
	"database/sql"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/mariadbtest"
)

// TestTLS: an app that insists on TLS and verifies the server (trusting
// replay's CA) talks TLS to the proxy, the proxy talks TLS to a MariaDB that
// admits nothing else, and every statement is counted. Without ClientTLS a
// client that insists on TLS is refused, and one that only prefers it goes
// on in the clear.
func TestTLS(t *testing.T) {
	authority, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := authority.Leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	s := mariadbtest.New(t, mariadbtest.Config{TLS: leaf, RequireTLS: true})
	mysql.RegisterTLSConfig("replay-verify", &tls.Config{RootCAs: authority.Pool(), ServerName: "127.0.0.1"})
	tp := startProxy(t, s.Addr(), func(c *Config) {
		c.ClientTLS = authority.TLSConfig("127.0.0.1")
		c.UpstreamTLS = &tls.Config{RootCAs: authority.Pool()}
	})
	ctx := context.Background()
	query := func(addr string, params ...string) error {
		db, err := sql.Open("mysql", s.DSN(addr, "mysql", params...))
		if err != nil {
			return err
		}
		defer db.Close()
		var n int
		return db.QueryRowContext(ctx, "SELECT COUNT(*) FROM user WHERE user = ?", mariadbtest.User).Scan(&n)
	}
	if err := query(tp.Addr, "tls=replay-verify"); err != nil {
		t.Fatalf("TLS both ways: %v", err)
	}
	if err := query(tp.Addr, "tls=replay-verify", "interpolateParams=true"); err != nil {
		t.Fatalf("TLS both ways, text protocol: %v", err)
	}
	if n := len(tp.statements()); n != 2 {
		t.Errorf("%d statements counted, want 2", n)
	}
	if err := query(s.Addr()); err == nil {
		t.Fatal("the server admits clients without TLS: the test proves nothing")
	}

	plain := startProxy(t, s.Addr(), func(c *Config) { c.UpstreamTLS = &tls.Config{RootCAs: authority.Pool()} })
	if err := query(plain.Addr, "tls=replay-verify"); err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Errorf("a client insisting on TLS through a proxy without ClientTLS: %v, want an error about TLS", err)
	}
	if err := query(plain.Addr, "tls=preferred"); err != nil {
		t.Errorf("a client preferring TLS through a proxy without ClientTLS: %v", err)
	}
	if n := len(plain.statements()); n != 1 {
		t.Errorf("%d statements counted in the clear, want 1", n)
	}
	// TLS toward the app only, in front of a server in the clear: the proxy
	// offers TLS itself.
	s2 := mariadbtest.Shared(t)
	clientOnly := startProxy(t, s2.Addr(), func(c *Config) { c.ClientTLS = authority.TLSConfig("127.0.0.1") })
	db, err := sql.Open("mysql", s2.DSN(clientOnly.Addr, "mysql", "tls=replay-verify"))
	if err != nil {
		t.Fatal(err)
	}
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Errorf("TLS toward the app only: %v", err)
	}
	db.Close()
	if n := len(clientOnly.statements()); n != 1 {
		t.Errorf("%d statements counted with TLS toward the app only, want 1", n)
	}
	// A server without TLS, when the proxy must use it: refused, said so.
	noTLS := startProxy(t, s2.Addr(), func(c *Config) { c.UpstreamTLS = &tls.Config{InsecureSkipVerify: true} })
	err = query(noTLS.Addr)
	if err == nil || !strings.Contains(err.Error(), "does not accept TLS") {
		t.Errorf("UpstreamTLS to a server without TLS: %v, want 'does not accept TLS'", err)
	}
	if noTLS.Stats().UpstreamErrors != 1 {
		t.Errorf("UpstreamErrors = %d, want 1", noTLS.Stats().UpstreamErrors)
	}
}

package mysqlwire

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/server"
	"github.com/go-sql-driver/mysql"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/mariadbtest"
)

// TestAuthSwitch: a MariaDB account identified by ed25519 makes the server
// switch the client from the greeting's mysql_native_password; the proxy
// relays the switch, and a wrong password's rejection reaches the client.
func TestAuthSwitch(t *testing.T) {
	s := mariadbtest.Shared(t)
	ctx := context.Background()
	admin, err := s.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	admin.ExecContext(ctx, "INSTALL SONAME 'auth_ed25519'")
	if _, err := admin.ExecContext(ctx, "CREATE USER IF NOT EXISTS 'edu'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('ed-secret')"); err != nil {
		t.Fatal(err)
	}
	tp := startProxy(t, s.Addr())
	for _, tc := range []struct {
		password string
		ok       bool
	}{{"ed-secret", true}, {"wrong", false}} {
		db, err := sql.Open("mysql", "edu:"+tc.password+"@tcp("+tp.Addr+")/")
		if err != nil {
			t.Fatal(err)
		}
		var one int
		err = db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		db.Close()
		switch {
		case tc.ok && (err != nil || one != 1):
			t.Errorf("ed25519 through the proxy: %v", err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "1045")):
			t.Errorf("a wrong ed25519 password: %v, want access denied (1045)", err)
		}
	}
	if n := len(tp.statements()); n != 1 {
		t.Errorf("%d statements counted, want the one SELECT", n)
	}
}

// sha2Server is go-mysql's MySQL server (its server package) with
// caching_sha2_password: full authentication on an account's first
// connection, fast from its cache after, TLS offered with an RSA key that
// also decrypts passwords sent by RSA.
type sha2Server struct {
	addr string
}

type sha2Creds struct{}

func (sha2Creds) CheckUsername(u string) (bool, error) { return u == "sha2user", nil }
func (sha2Creds) GetCredential(u string) (string, bool, error) {
	return "sha2-secret", u == "sha2user", nil
}

type sha2Handler struct{ server.EmptyHandler }

func (sha2Handler) HandleQuery(q string) (*gomysql.Result, error) {
	rs, err := gomysql.BuildSimpleTextResultset([]string{"one"}, [][]any{{1}})
	if err != nil {
		return nil, err
	}
	return &gomysql.Result{Resultset: rs}, nil
}

func startSha2Server(t *testing.T) *sha2Server {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv := server.NewServer("8.0.36", gomysql.DEFAULT_COLLATION_ID, gomysql.AUTH_CACHING_SHA2_PASSWORD, pubPEM, tlsCfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				conn, err := server.NewCustomizedConn(c, srv, sha2Creds{}, sha2Handler{})
				if err != nil {
					return
				}
				for conn.HandleCommand() == nil {
				}
			}()
		}
	}()
	return &sha2Server{addr: l.Addr().String()}
}

// TestCachingSha2 authenticates by caching_sha2_password through the proxy,
// full and then fast authentication, with TLS on neither side, the
// client's side only (the proxy encrypts the password for the server with
// its RSA key), the server's side only (the proxy hands the client its own
// key and sends the password in TLS) and both.
func TestCachingSha2(t *testing.T) {
	authority, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mysql.RegisterTLSConfig("replayca", &tls.Config{RootCAs: authority.Pool(), ServerName: "127.0.0.1"})
	for _, tc := range []struct {
		name                 string
		clientTLS, serverTLS bool
	}{{"plain", false, false}, {"client TLS", true, false}, {"server TLS", false, true}, {"both TLS", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			up := startSha2Server(t)
			tp := startProxy(t, up.addr, func(c *Config) {
				if tc.clientTLS {
					c.ClientTLS = authority.TLSConfig("127.0.0.1")
				}
				if tc.serverTLS {
					c.UpstreamTLS = &tls.Config{InsecureSkipVerify: true}
				}
			})
			dsn := "sha2user:sha2-secret@tcp(" + tp.Addr + ")/"
			if tc.clientTLS {
				dsn += "?tls=replayca"
			}
			for _, round := range []string{"full", "fast"} {
				db, err := sql.Open("mysql", dsn)
				if err != nil {
					t.Fatal(err)
				}
				var one int
				err = db.QueryRow("SELECT 1").Scan(&one)
				db.Close()
				if err != nil || one != 1 {
					t.Errorf("%s authentication: SELECT 1 = %d, %v", round, one, err)
				}
			}
			if n := len(tp.statements()); n != 2 {
				t.Errorf("%d statements counted, want 2", n)
			}
		})
	}
}

package replayer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeHosts resolves the host names of the tests below as a resolver of
// the machine would: localhost to both loopbacks, db.internal to the
// server's address, elsewhere.internal elsewhere; any other name fails.
func fakeHosts(_ context.Context, host string) ([]string, error) {
	switch host {
	case "localhost":
		return []string{"127.0.0.1", "::1"}, nil
	case "db.internal", "db-alias.internal":
		return []string{"10.0.0.5"}, nil
	case "pg.local":
		return []string{"127.0.0.1"}, nil
	case "elsewhere.internal":
		return []string{"10.0.0.9"}, nil
	}
	return nil, errors.New("no such host")
}

// TestDatabaseAddressForms: every form in which a build's environment
// names its database is pointed at the counter when it names the server by
// any spelling of its address, and left alone when it names another one.
func TestDatabaseAddressForms(t *testing.T) {
	pg := func(upstream string) DatabaseRoute {
		return DatabaseRoute{Protocol: PostgreSQL, Upstream: upstream, Counter: "127.0.0.1:7000"}
	}
	my := func(upstream string) DatabaseRoute {
		return DatabaseRoute{Protocol: MySQL, Upstream: upstream, Counter: "127.0.0.1:7306"}
	}
	tests := []struct {
		name  string
		route DatabaseRoute
		in    string // NAME=VALUE
		want  string // "": unchanged
	}{
		{"postgres: localhost for 127.0.0.1", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://u:pw@localhost:5432/orders", "DATABASE_URL=postgres://u:pw@127.0.0.1:7000/orders"},
		{"postgres: [::1] for 127.0.0.1", pg("127.0.0.1:5432"), "DATABASE_URL=postgresql://u@[::1]:5432/orders?sslmode=disable", "DATABASE_URL=postgresql://u@127.0.0.1:7000/orders?sslmode=disable"},
		{"postgres: 127.0.0.1 for localhost", pg("localhost:5432"), "DATABASE_URL=postgres://u@127.0.0.1:5432/x", "DATABASE_URL=postgres://u@127.0.0.1:7000/x"},
		{"postgres: no port is 5432", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://u@localhost/x", "DATABASE_URL=postgres://u@127.0.0.1:7000/x"},
		{"postgres: no port, no path", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://localhost", "DATABASE_URL=postgres://127.0.0.1:7000"},
		{"postgres: a name that resolves to the server", pg("10.0.0.5:5432"), "DATABASE_URL=postgres://u@db.internal:5432/x", "DATABASE_URL=postgres://u@127.0.0.1:7000/x"},
		{"postgres: two names of one server", pg("db.internal:5432"), "DATABASE_URL=postgres://u@db-alias.internal/x", "DATABASE_URL=postgres://u@127.0.0.1:7000/x"},
		{"postgres: a name that resolves to loopback", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://u@pg.local:5432/x", "DATABASE_URL=postgres://u@127.0.0.1:7000/x"},
		{"postgres: another server", pg("10.0.0.5:5432"), "DATABASE_URL=postgres://u@elsewhere.internal:5432/x", ""},
		{"postgres: another port", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://u@localhost:5433/x", ""},
		{"postgres: a name that does not resolve", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://u@nowhere.test:5432/x", ""},
		{"postgres: a password with @ and :", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://u:p@ss:w@localhost:5432/x", "DATABASE_URL=postgres://u:p@ss:w@127.0.0.1:7000/x"},
		{"postgres: several hosts", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://u@elsewhere.internal:5432,localhost:5432/x", "DATABASE_URL=postgres://u@elsewhere.internal:5432,127.0.0.1:7000/x"},
		{"postgres: host and port in the query", pg("127.0.0.1:5432"), "DATABASE_URL=postgres:///x?host=localhost&port=5432&sslmode=disable", "DATABASE_URL=postgres:///x?host=127.0.0.1&port=7000&sslmode=disable"},
		{"postgres: host in the query, no port", pg("127.0.0.1:5432"), "DATABASE_URL=postgresql:///x?host=localhost", "DATABASE_URL=postgresql:///x?host=127.0.0.1&port=7000"},
		{"postgres: a port in the query", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://localhost/x?port=5432", "DATABASE_URL=postgres://127.0.0.1/x?port=7000"},
		{"postgres: a Unix socket in the query", pg("127.0.0.1:5432"), "DATABASE_URL=postgres:///x?host=/var/run/postgresql", ""},
		{"postgres: a socket as the URL's host", pg("127.0.0.1:5432"), "DATABASE_URL=postgres://%2Fvar%2Frun%2Fpostgresql/x", ""},
		{"postgres: JDBC", pg("127.0.0.1:5432"), "SPRING_DATASOURCE_URL=jdbc:postgresql://localhost:5432/x", "SPRING_DATASOURCE_URL=jdbc:postgresql://127.0.0.1:7000/x"},
		{"postgres: SQLAlchemy's driver suffix", pg("127.0.0.1:5432"), "DB=postgresql+asyncpg://u@localhost/x", "DB=postgresql+asyncpg://u@127.0.0.1:7000/x"},
		{"postgres: a URL inside a longer value", pg("127.0.0.1:5432"), "ARGS=--db postgres://localhost/x --verbose", "ARGS=--db postgres://127.0.0.1:7000/x --verbose"},
		{"postgres: key/value", pg("127.0.0.1:5432"), "DSN=host=localhost port=5432 dbname=x user=u", "DSN=host=127.0.0.1 port=7000 dbname=x user=u"},
		{"postgres: key/value, no port", pg("127.0.0.1:5432"), "DSN=host=localhost dbname=x", "DSN=port=7000 host=127.0.0.1 dbname=x"},
		{"postgres: key/value, quoted, hostaddr wins", pg("127.0.0.1:5432"), "DSN=host='db.example' hostaddr = '127.0.0.1' password='it\\'s'", "DSN=port=7000 host=127.0.0.1 hostaddr = 127.0.0.1 password='it\\'s'"},
		{"postgres: key/value, another server", pg("127.0.0.1:5432"), "DSN=host=elsewhere.internal port=5432", ""},
		{"postgres: HOST:PORT alone", pg("127.0.0.1:5432"), "DB_ADDR=localhost:5432", "DB_ADDR=127.0.0.1:7000"},
		{"postgres: the exact address in other text", pg("127.0.0.1:5432"), "OPTS=-addr=127.0.0.1:5432,x", "OPTS=-addr=127.0.0.1:7000,x"},
		{"postgres: a MySQL URL is not its to rewrite", pg("127.0.0.1:5432"), "DB=mysql://u@localhost:5432/x", ""},
		{"postgres: an unrelated key=value", pg("127.0.0.1:5432"), "LS_COLORS=rs=0:di=01;34", ""},

		{"mysql: URL, localhost for 127.0.0.1", my("127.0.0.1:3306"), "DATABASE_URL=mysql://u:pw@localhost:3306/shop", "DATABASE_URL=mysql://u:pw@127.0.0.1:7306/shop"},
		{"mysql: URL, no port is 3306", my("127.0.0.1:3306"), "DATABASE_URL=mysql://u@localhost/shop?parseTime=true", "DATABASE_URL=mysql://u@127.0.0.1:7306/shop?parseTime=true"},
		{"mysql: MariaDB URL", my("127.0.0.1:3306"), "DATABASE_URL=mariadb://u@[::1]:3306/shop", "DATABASE_URL=mariadb://u@127.0.0.1:7306/shop"},
		{"mysql: URL around a driver DSN", my("127.0.0.1:3306"), "MIGRATE_URL=mysql://u:pw@tcp(localhost:3306)/shop", "MIGRATE_URL=mysql://u:pw@tcp(127.0.0.1:7306)/shop"},
		{"mysql: go-sql-driver DSN", my("127.0.0.1:3306"), "MYSQL_DSN=root:secret@tcp(localhost:3306)/shop?interpolateParams=true", "MYSQL_DSN=root:secret@tcp(127.0.0.1:7306)/shop?interpolateParams=true"},
		{"mysql: DSN, no port", my("127.0.0.1:3306"), "MYSQL_DSN=root@tcp(localhost)/shop", "MYSQL_DSN=root@tcp(127.0.0.1:7306)/shop"},
		{"mysql: DSN, no address (the driver's 127.0.0.1:3306)", my("127.0.0.1:3306"), "MYSQL_DSN=root:pw@/shop", "MYSQL_DSN=root:pw@tcp(127.0.0.1:7306)/shop"},
		{"mysql: DSN, tcp without an address", my("localhost:3306"), "MYSQL_DSN=root@tcp/shop", "MYSQL_DSN=root@tcp(127.0.0.1:7306)/shop"},
		{"mysql: DSN, no user", my("127.0.0.1:3306"), "MYSQL_DSN=tcp([::1]:3306)/shop", "MYSQL_DSN=tcp(127.0.0.1:7306)/shop"},
		{"mysql: DSN, a password with @ and /", my("127.0.0.1:3306"), "MYSQL_DSN=u:p@s/s@tcp(localhost:3306)/shop", "MYSQL_DSN=u:p@s/s@tcp(127.0.0.1:7306)/shop"},
		{"mysql: DSN over a Unix socket", my("127.0.0.1:3306"), "MYSQL_DSN=u@unix(/run/mysqld/mysqld.sock)/shop", ""},
		{"mysql: DSN, another server", my("127.0.0.1:3306"), "MYSQL_DSN=u@tcp(elsewhere.internal:3306)/shop", ""},
		{"mysql: DSN, another port", my("127.0.0.1:3306"), "MYSQL_DSN=u@tcp(localhost:3307)/shop", ""},
		{"mysql: MYSQL_ADDR", my("127.0.0.1:3306"), "MYSQL_ADDR=localhost", "MYSQL_ADDR=127.0.0.1:7306"},
		{"mysql: MYSQL_ADDR with a port", my("10.0.0.5:3306"), "MYSQL_ADDR=db.internal:3306", "MYSQL_ADDR=127.0.0.1:7306"},
		{"mysql: a path is no DSN", my("127.0.0.1:3306"), "HOME=/root", ""},
		{"mysql: a Postgres URL is not its to rewrite", my("127.0.0.1:3306"), "DATABASE_URL=postgres://localhost:3306/x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Wiring{Databases: []DatabaseRoute{tt.route}, LookupHost: fakeHosts}
			want := tt.want
			if want == "" {
				want = tt.in
			}
			if got := lookup(w.Environ(nil, []string{tt.in}, 8081), name(tt.in)); got != want {
				t.Errorf("%s\n got %s\nwant %s", tt.in, got, want)
			}
		})
	}
}

// TestDatabaseHostPortVariables: the protocols' host and port variables,
// rewritten together when they name the server (an unset port is the
// default), left alone otherwise.
func TestDatabaseHostPortVariables(t *testing.T) {
	tests := []struct {
		name  string
		route DatabaseRoute
		in    []string
		want  []string
	}{
		{"PGHOST=localhost, no PGPORT", DatabaseRoute{Protocol: PostgreSQL, Upstream: "127.0.0.1:5432", Counter: "127.0.0.1:7000"},
			[]string{"PGHOST=localhost"}, []string{"PGHOST=127.0.0.1", "PGPORT=7000", "PORT=1", "REPLAY_SQLCOUNT_ADDR=127.0.0.1:7000"}},
		{"PGHOST and PGPORT of another server", DatabaseRoute{Protocol: PostgreSQL, Upstream: "127.0.0.1:5432", Counter: "127.0.0.1:7000"},
			[]string{"PGHOST=localhost", "PGPORT=5433"}, []string{"PGHOST=localhost", "PGPORT=5433", "PORT=1", "REPLAY_SQLCOUNT_ADDR=127.0.0.1:7000"}},
		{"MYSQL_HOST and MYSQL_PORT", DatabaseRoute{Protocol: MySQL, Upstream: "127.0.0.1:3306", Counter: "127.0.0.1:7306"},
			[]string{"MYSQL_HOST=localhost", "MYSQL_PORT=3306"}, []string{"MYSQL_HOST=127.0.0.1", "MYSQL_PORT=7306", "PORT=1", "REPLAY_MYSQLCOUNT_ADDR=127.0.0.1:7306"}},
		{"MYSQL_HOST without a port, LISTEN", DatabaseRoute{Protocol: MySQL, Upstream: "10.0.0.5:3306", Listen: "127.0.0.1:3306", Counter: "127.0.0.1:7306"},
			[]string{"MYSQL_HOST=::1"}, []string{"MYSQL_HOST=127.0.0.1", "MYSQL_PORT=7306", "PORT=1", "REPLAY_MYSQLCOUNT_ADDR=127.0.0.1:7306"}},
		{"no host variable: a port alone is left", DatabaseRoute{Protocol: PostgreSQL, Upstream: "127.0.0.1:5432", Counter: "127.0.0.1:7000"},
			[]string{"PGPORT=5432"}, []string{"PGPORT=5432", "PORT=1", "REPLAY_SQLCOUNT_ADDR=127.0.0.1:7000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := Wiring{Databases: []DatabaseRoute{tt.route}, LookupHost: fakeHosts}
			if diff := cmp.Diff(tt.want, w.Environ(nil, tt.in, 1)); diff != "" {
				t.Errorf("Environ (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTwoDatabaseRoutes: a build with PostgreSQL and MySQL has each
// database pointed at its own counter, with each protocol's variables.
func TestTwoDatabaseRoutes(t *testing.T) {
	w := Wiring{LookupHost: fakeHosts, Databases: []DatabaseRoute{
		{Protocol: PostgreSQL, Upstream: "127.0.0.1:5432", Counter: "127.0.0.1:7000", App: "replay-baseline"},
		{Protocol: MySQL, Upstream: "127.0.0.1:3306", Counter: "127.0.0.1:7306", App: "replay-baseline"},
	}}
	in := []string{"DATABASE_URL=postgres://localhost/x", "CACHE_DSN=u@tcp(localhost)/c", "PGHOST=localhost", "MYSQL_HOST=localhost", "MYSQL_PORT=3306"}
	want := []string{"DATABASE_URL=postgres://127.0.0.1:7000/x", "CACHE_DSN=u@tcp(127.0.0.1:7306)/c", "PGHOST=127.0.0.1", "MYSQL_HOST=127.0.0.1", "MYSQL_PORT=7306",
		"PGPORT=7000", "PORT=1", "REPLAY_SQLCOUNT_ADDR=127.0.0.1:7000", "PGAPPNAME=replay-baseline", "REPLAY_MYSQLCOUNT_ADDR=127.0.0.1:7306"}
	if diff := cmp.Diff(want, w.Environ(nil, in, 1)); diff != "" {
		t.Errorf("Environ (-want +got):\n%s", diff)
	}
}

// TestDatabaseAddressSystemResolver: with the machine's own resolver,
// localhost names the server at 127.0.0.1 (the case of issue 23: the
// build bypassed the counter and an N+1 passed its SQL goal).
func TestDatabaseAddressSystemResolver(t *testing.T) {
	w := Wiring{Databases: []DatabaseRoute{{Protocol: PostgreSQL, Upstream: "127.0.0.1:5432", Counter: "127.0.0.1:7000"}}}
	got := lookup(w.Environ(nil, []string{"DATABASE_URL=postgres://postgres@localhost:5432/orders"}, 1), "DATABASE_URL")
	if want := "DATABASE_URL=postgres://postgres@127.0.0.1:7000/orders"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func name(kv string) string { k, _, _ := strings.Cut(kv, "="); return k }

func lookup(env []string, k string) string {
	for _, kv := range env {
		if name(kv) == k {
			return kv
		}
	}
	return ""
}

// FuzzDatabaseAddress: any value through both protocols' rewriting never
// panics, rewrites to a value that no longer names the server (a second
// pass changes nothing), and leaves a value without the server's port
// alone.
func FuzzDatabaseAddress(f *testing.F) {
	for _, s := range []string{"postgres://u:pw@localhost:5432/x?host=localhost&port=5432", "host='a\\'b' hostaddr=127.0.0.1 port=5432",
		"u:p@tcp([::1]:5432)/db", "u@/db", "jdbc:postgresql://[::1],localhost:5432/x", "mysql://tcp(localhost)/x", "localhost:5432", "[::1]:5432"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		for _, p := range []DatabaseProtocol{PostgreSQL, MySQL} {
			w := Wiring{Databases: []DatabaseRoute{{Protocol: p, Upstream: "127.0.0.1:5432", Counter: "127.0.0.1:7000"}}, LookupHost: fakeHosts}
			once := lookup(w.Environ(nil, []string{"V=" + v}, 1), "V")
			if once == "" {
				continue // not one variable's value (a newline, say)
			}
			twice := lookup(w.Environ(nil, []string{once}, 1), "V")
			if twice != once {
				t.Errorf("%s: %q → %q → %q: a second pass rewrote again", p.Name, v, once, twice)
			}
			if !strings.Contains(v, "5432") && !strings.Contains(v, "@/") && !strings.Contains(v, "tcp") && !strings.Contains(v, "://") && !strings.Contains(v, "host") && once != "V="+v {
				t.Errorf("%s: %q rewritten to %q", p.Name, v, once)
			}
		}
	})
}

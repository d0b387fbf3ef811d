package replayer

// DatabaseProtocol says how a build's environment names a database server
// of one wire protocol: the URL schemes, connection-string forms and
// variables its client libraries read. It is data, so that the rewriting
// (dbaddr.go) never asks which protocol it is rewriting for.
type DatabaseProtocol struct {
	// Name is the protocol's name, as `replay sqlcount --protocol` takes it.
	Name string
	// DefaultPort is the port a client dials when an address gives none.
	DefaultPort string
	// Schemes are the URL schemes of the protocol ("postgres://…"), also
	// found after a prefix such as "jdbc:".
	Schemes []string
	// HostPortVars are pairs of variables naming the server's host and
	// port apart (PGHOST, PGPORT); an unset port is DefaultPort, an unset
	// host leaves the pair alone.
	HostPortVars [][2]string
	// AddrVars are variables whose whole value is HOST[:PORT].
	AddrVars []string
	// KeyValue: connection strings of key=value pairs (libpq's
	// "host=db port=5432 dbname=x") and URL query parameters host,
	// hostaddr and port are read.
	KeyValue bool
	// TCPDSN: go-sql-driver/mysql's DSNs, user:pw@tcp(host:port)/db (an
	// empty address, user@/db, is 127.0.0.1 on DefaultPort), are read.
	TCPDSN bool
	// CounterVar is set to the counter's address in the build's
	// environment, for builds that read it; empty: none.
	CounterVar string
	// AppVar is the variable that names the client application to the
	// server (PGAPPNAME), set to DatabaseRoute.App unless the environment
	// sets it; empty: the protocol has none.
	AppVar string
}

// PostgreSQL is how builds name a PostgreSQL server: postgres:// and
// postgresql:// URLs (several hosts, query parameters), libpq's key=value
// strings, PGHOST/PGPORT (and POSTGRES_HOST/POSTGRES_PORT, DB_HOST/DB_PORT).
var PostgreSQL = DatabaseProtocol{
	Name:         "postgres",
	DefaultPort:  "5432",
	Schemes:      []string{"postgres", "postgresql"},
	HostPortVars: [][2]string{{"PGHOST", "PGPORT"}, {"POSTGRES_HOST", "POSTGRES_PORT"}, {"DB_HOST", "DB_PORT"}},
	KeyValue:     true,
	CounterVar:   "REPLAY_SQLCOUNT_ADDR",
	AppVar:       "PGAPPNAME",
}

// MySQL is how builds name a MySQL or MariaDB server: mysql:// and
// mariadb:// URLs, go-sql-driver/mysql DSNs (user:pw@tcp(host:port)/db),
// MYSQL_HOST/MYSQL_PORT (and DB_HOST/DB_PORT) and MYSQL_ADDR.
var MySQL = DatabaseProtocol{
	Name:         "mysql",
	DefaultPort:  "3306",
	Schemes:      []string{"mysql", "mariadb", "mysqlx"},
	HostPortVars: [][2]string{{"MYSQL_HOST", "MYSQL_PORT"}, {"DB_HOST", "DB_PORT"}},
	AddrVars:     []string{"MYSQL_ADDR"},
	TCPDSN:       true,
	CounterVar:   "REPLAY_MYSQLCOUNT_ADDR",
}

// DatabaseRoute is one database server that a build reaches through a SQL
// counter: every address in the build's environment that names the server
// (or Listen) is rewritten to Counter (Wiring.Environ).
type DatabaseRoute struct {
	// Protocol says how the build's environment names such a server.
	Protocol DatabaseProtocol
	// Upstream is the real server's HOST:PORT as the build would reach it
	// (HOST of `--postgres HOST:PORT`); required.
	Upstream string
	// Listen is an address the build's environment may name for the
	// counter out of habit: LISTEN of `--postgres LISTEN=HOST:PORT`, where
	// `record` had the app connect. It is rewritten to Counter like
	// Upstream, so that each side of a comparison reaches its own counter.
	// Empty: none.
	Listen string
	// Counter is the address of the SQL counter in front of Upstream;
	// required.
	Counter string
	// App is the client application name the build is to give
	// (Protocol.AppVar), so that a counter can tell which build connected;
	// empty: not set.
	App string
}

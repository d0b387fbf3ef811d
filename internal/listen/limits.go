package listen

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// The defaults of Limits, chosen for real apps: a client sends its request
// headers, and a PostgreSQL client its startup and credentials, at once
// (milliseconds; PostgreSQL's own authentication_timeout, 1m, is far
// looser than any real client needs), but pools keep idle keep-alive HTTP connections for a
// minute or two (Go's transport 90s) and idle PostgreSQL connections for
// many minutes (pgxpool 30m, HikariCP 10m), and closing one under a pool
// fails the app's next call on it.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 2 * time.Minute
	DefaultSQLStartupTimeout = 10 * time.Second
	DefaultSQLIdleTimeout    = 30 * time.Minute
	DefaultMaxConns          = 4096
)

// Limits bound the connections of a listener. For every field, zero means
// its default and a negative value means no bound.
type Limits struct {
	// ReadHeaderTimeout bounds reading a request's headers on an HTTP
	// listener (from the connection's first byte, or from the end of the
	// idle wait): slowloris clients are closed after it.
	ReadHeaderTimeout time.Duration
	// IdleTimeout closes a keep-alive HTTP connection waiting this long for
	// its next request.
	IdleTimeout time.Duration
	// SQLStartupTimeout closes a SQL counter client that has not finished
	// its startup and authentication this long after connecting.
	SQLStartupTimeout time.Duration
	// SQLIdleTimeout closes a SQL counter client with no statement in
	// progress and no traffic either way for this long.
	SQLIdleTimeout time.Duration
	// MaxConns is the number of connections one listener holds at once;
	// further connections wait in the kernel's backlog until one closes.
	MaxConns int
}

// AddFlags registers every flag of the group on fs, with the defaults.
func (o *Limits) AddFlags(fs *pflag.FlagSet) {
	o.AddHTTPFlags(fs)
	o.AddSQLFlags(fs)
}

// AddHTTPFlags registers the flags of HTTP listeners and --max-conns.
func (o *Limits) AddHTTPFlags(fs *pflag.FlagSet) {
	fs.Var(newDuration(&o.ReadHeaderTimeout, DefaultReadHeaderTimeout), "read-header-timeout", "close an HTTP connection whose request headers take longer than `DURATION` (0: never)")
	fs.Var(newDuration(&o.IdleTimeout, DefaultIdleTimeout), "idle-timeout", "close a keep-alive HTTP connection idle for `DURATION` (0: never)")
	o.addMaxConns(fs)
}

// AddSQLFlags registers the flags of the SQL counter and --max-conns.
func (o *Limits) AddSQLFlags(fs *pflag.FlagSet) {
	fs.Var(newDuration(&o.SQLStartupTimeout, DefaultSQLStartupTimeout), "sql-startup-timeout", "close a SQL client not authenticated after `DURATION` (0: never)")
	fs.Var(newDuration(&o.SQLIdleTimeout, DefaultSQLIdleTimeout), "sql-idle-timeout", "close a SQL client connection idle for `DURATION` (0: never)")
	o.addMaxConns(fs)
}

func (o *Limits) addMaxConns(fs *pflag.FlagSet) {
	if fs.Lookup("max-conns") == nil {
		o.MaxConns = DefaultMaxConns // first: the help shows the default it was registered with
		fs.Var(&maxConns{&o.MaxConns}, "max-conns", "connections each listener holds at once; more wait until one closes (0: no limit)")
	}
}

// Resolved returns o with the defaults in place of zeros and zero in place
// of "no bound", as http.Server and sqlcount.Config take them.
func (o Limits) Resolved() Limits {
	pick := func(d, def time.Duration) time.Duration {
		switch {
		case d == 0:
			return def
		case d < 0:
			return 0
		}
		return d
	}
	r := Limits{
		ReadHeaderTimeout: pick(o.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		IdleTimeout:       pick(o.IdleTimeout, DefaultIdleTimeout),
		SQLStartupTimeout: pick(o.SQLStartupTimeout, DefaultSQLStartupTimeout),
		SQLIdleTimeout:    pick(o.SQLIdleTimeout, DefaultSQLIdleTimeout),
		MaxConns:          o.MaxConns,
	}
	switch {
	case o.MaxConns == 0:
		r.MaxConns = DefaultMaxConns
	case o.MaxConns < 0:
		r.MaxConns = 0
	}
	return r
}

// SQLTimeouts returns the SQL counter's startup and idle timeouts as
// sqlcount.Config takes them (negative: none).
func (o Limits) SQLTimeouts() (startup, idle time.Duration) {
	r := o.Resolved()
	startup, idle = r.SQLStartupTimeout, r.SQLIdleTimeout
	if startup == 0 {
		startup = -1
	}
	return startup, idle
}

// Server returns an HTTP server of h with the timeouts of o.
func (o Limits) Server(h http.Handler, errLog *slog.Logger) *http.Server {
	r := o.Resolved()
	hs := &http.Server{Handler: h, ReadHeaderTimeout: r.ReadHeaderTimeout, IdleTimeout: r.IdleTimeout}
	if errLog != nil {
		hs.ErrorLog = slog.NewLogLogger(errLog.Handler(), slog.LevelWarn)
	}
	return hs
}

// Listen is how every replay listener opens. It listens on Addr(addr)
// (loopback when addr names no host), tells warn (when set) the Warning of
// a listener reachable from the network, and limits the listener to
// MaxConns connections, logging to log the first time the limit is reached.
// what names the listener ("outbound proxy") and reach says what it lets
// others do ("it forwards requests to any host").
func (o Limits) Listen(addr, what, reach string, log *slog.Logger, warn func(error)) (net.Listener, error) {
	a, err := Addr(addr)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", a)
	if err != nil {
		return nil, err
	}
	if w := Warning(what, addr, l.Addr(), reach); w != nil && warn != nil {
		warn(w)
	}
	return o.Limit(l, what, log), nil
}

// durationValue is a pflag.Value whose "0" means none (stored as -1).
type durationValue struct{ d *time.Duration }

func newDuration(d *time.Duration, def time.Duration) *durationValue {
	*d = def
	return &durationValue{d}
}

func (v *durationValue) String() string {
	if v.d == nil || *v.d < 0 {
		return "0s"
	}
	return v.d.String()
}

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("%q: want a duration such as 10s or 2m, or 0 for none", s)
	}
	if d == 0 {
		d = -1
	}
	*v.d = d
	return nil
}

func (v *durationValue) Type() string { return "duration" }

// maxConns is the pflag.Value of --max-conns: "0" means no limit.
type maxConns struct{ n *int }

func (v *maxConns) String() string {
	if v.n == nil || *v.n < 0 {
		return "0"
	}
	return strconv.Itoa(*v.n)
}

func (v *maxConns) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: want a number of connections, or 0 for no limit", s)
	}
	if n == 0 {
		n = -1
	}
	*v.n = n
	return nil
}

func (v *maxConns) Type() string { return "int" }

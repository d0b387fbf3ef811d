package main

import (
	"net"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/session"
)

// postgresFlags put a SQL counter in front of a database: --postgres (or,
// named "mysql", --mysql) and its TLS flags, the same forms on `record`,
// `run` and `compare`.
type postgresFlags struct {
	name string // of the flag: "" for postgres, or "mysql"
	spec string
	tls  pgTLSOptions
}

// mysqlFlags are postgresFlags named mysql.
func mysqlFlags() postgresFlags { return postgresFlags{name: "mysql"} }

// flag returns the flag's name.
func (p *postgresFlags) flag() string {
	if p.name == "" {
		return "postgres"
	}
	return p.name
}

// product names the server for help and errors.
func (p *postgresFlags) product() string {
	if p.flag() == "mysql" {
		return "MySQL or MariaDB"
	}
	return "PostgreSQL"
}

func (p *postgresFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&p.spec, p.flag(), "", "count and record SQL: `[LISTEN=]HOST:PORT` puts a SQL counter on LISTEN in front of "+p.product()+" at HOST:PORT "+
		"(LISTEN: a free loopback port when not given; compare runs one counter per side, on \"A,B\", or on P and P+1 for LISTEN with port P)")
	p.tls.addFlags(f, p.flag()+"-")
}

func (p *postgresFlags) used() bool { return p.spec != "" }

// parse reads --postgres for sides sides (1 for record and run, 2 for
// compare): the address each side's counter listens on and the server's.
// Its errors are usage errors prefixed with cmd.
func (p *postgresFlags) parse(cmd string, sides int) (listen []string, server string, err error) {
	if err := p.tls.validate(cmd, p.used()); err != nil {
		return nil, "", err
	}
	if !p.used() {
		return nil, "", nil
	}
	example := "127.0.0.1:5432 or 127.0.0.1:6543=127.0.0.1:5432"
	if p.flag() == "mysql" {
		example = "127.0.0.1:3306 or 127.0.0.1:3307=127.0.0.1:3306"
	}
	bad := usagef("%s: --%s %q: want HOST:PORT of %s, or LISTEN=HOST:PORT, e.g. %s", cmd, p.flag(), p.spec, p.product(), example)
	l, server, ok := strings.Cut(p.spec, "=")
	if !ok {
		l, server = "127.0.0.1:0", p.spec
	}
	if h, port, err := net.SplitHostPort(server); err != nil || h == "" || port == "" || port == "0" {
		if ok {
			return nil, "", usagef("%s: --%s %q: the server %q is not HOST:PORT", cmd, p.flag(), p.spec, server)
		}
		return nil, "", bad
	}
	if a, b, two := strings.Cut(l, ","); two {
		if sides != 2 {
			return nil, "", usagef("%s: --%s %q: LISTEN is one address here (A,B is for the two sides of compare)", cmd, p.flag(), p.spec)
		}
		listen = []string{strings.TrimSpace(a), strings.TrimSpace(b)}
	} else {
		host, port, err := net.SplitHostPort(l)
		if err != nil {
			return nil, "", bad
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 0 || n > 65535-(sides-1) {
			return nil, "", bad
		}
		for i := range sides {
			next := 0
			if n > 0 {
				next = n + i
			}
			listen = append(listen, net.JoinHostPort(host, strconv.Itoa(next)))
		}
	}
	for _, a := range listen {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, "", bad
		}
	}
	return listen, server, nil
}

// config returns the SQL counter of a session: the server, and TLS as the
// flags ask, with certificates from the CA in caDir; listen is where the
// first counter listens (its host names the certificate).
func (p *postgresFlags) config(server, listen, caDir string) (*session.Database, error) {
	client, upstream, err := p.tls.configs(caDir, listen)
	if err != nil {
		return nil, err
	}
	return &session.Database{Protocol: p.flag(), Upstream: server, ClientTLS: client, UpstreamTLS: upstream, Listen: p.habit()}, nil
}

// habit is the LISTEN of --postgres LISTEN=HOST:PORT given as one address
// with a port: where `record` had the app connect, so where a user's
// DATABASE_URL points out of habit. Each side's build has it rewritten to
// its own counter. Empty for the A,B form, port 0 or no LISTEN.
func (p *postgresFlags) habit() string {
	l, _, ok := strings.Cut(p.spec, "=")
	if !ok || strings.Contains(l, ",") {
		return ""
	}
	if _, port, err := net.SplitHostPort(l); err != nil || port == "0" {
		return ""
	}
	return l
}

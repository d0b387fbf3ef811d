package replayer

import (
	"context"
	"strconv"
	"strings"
)

// Wiring is what replay has set up around a build it starts, and what the
// build's environment must point at.
type Wiring struct {
	// Proxy is the host:port of the mock's forward proxy; empty: no proxy
	// variables are set.
	Proxy string
	// CABundle is a PEM file with the system roots plus replay's CA (for
	// SSL_CERT_FILE and REQUESTS_CA_BUNDLE); empty: not set.
	CABundle string
	// CACert is a PEM file with replay's CA alone (for NODE_EXTRA_CA_CERTS,
	// which adds to Node's roots); empty: not set.
	CACert string
	// Databases are the database servers the build reaches through a SQL
	// counter, one route per server; none: no database rewriting.
	Databases []DatabaseRoute
	// LookupHost resolves the host names the environment gives for a
	// database, to tell whether one names a route's server; nil:
	// net.DefaultResolver.LookupHost.
	LookupHost func(ctx context.Context, host string) ([]string, error)
}

// Environ returns the environment of a build listening on port: base (e.g.
// os.Environ()), then extra (KEY=VALUE entries that override base), then
// replay's wiring:
//
//   - PORT: the port the build must listen on;
//   - with a proxy: HTTP_PROXY, HTTPS_PROXY, http_proxy, https_proxy set to
//     "http://PROXY", and NO_PROXY/no_proxy to "localhost,127.0.0.1,::1" so
//     that loopback calls (replay's own, the database) bypass it;
//   - with a CA: SSL_CERT_FILE and REQUESTS_CA_BUNDLE set to the bundle
//     (system roots plus replay's CA), NODE_EXTRA_CA_CERTS to the CA alone;
//   - for each database route: every address that names the route's
//     server, Upstream or Listen, gets the counter's host and port instead.
//     An address names the server when its port is the same (an absent
//     port is the protocol's default) and its host is the same name or
//     resolves to a common address; loopback is one host (localhost,
//     127.0.0.1, [::1]). Addresses are read in URLs of the protocol's
//     schemes (several hosts, libpq's host/port query parameters, after a
//     "jdbc:" prefix too), libpq key=value strings (host, hostaddr, port),
//     go-sql-driver/mysql DSNs (user@tcp(host:port)/db, user@/db), the
//     protocol's host/port variable pairs (PGHOST/PGPORT, MYSQL_HOST/
//     MYSQL_PORT…) and address variables (MYSQL_ADDR), and a value that is
//     HOST:PORT alone; other text has the route's exact HOST:PORT replaced
//     (not where a digit follows it: 127.0.0.1:543 is not in
//     127.0.0.1:5432). Protocol.CounterVar (REPLAY_SQLCOUNT_ADDR) is set to
//     the counter, Protocol.AppVar (PGAPPNAME) to App unless the
//     environment sets it.
//
// Later entries win; the result has one entry per name.
func (w Wiring) Environ(base, extra []string, port int) []string {
	env := newEnvList(base)
	for _, kv := range extra {
		env.setKV(kv)
	}
	w.rewriteDatabases(env)
	env.set("PORT", strconv.Itoa(port))
	if w.Proxy != "" {
		p := "http://" + w.Proxy
		for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
			env.set(k, p)
		}
		for _, k := range []string{"NO_PROXY", "no_proxy"} {
			env.set(k, "localhost,127.0.0.1,::1")
		}
	}
	if w.CABundle != "" {
		env.set("SSL_CERT_FILE", w.CABundle)
		env.set("REQUESTS_CA_BUNDLE", w.CABundle)
	}
	if w.CACert != "" {
		env.set("NODE_EXTRA_CA_CERTS", w.CACert)
	}
	for _, r := range w.Databases {
		env.set(r.Protocol.CounterVar, r.Counter)
		if r.App != "" && r.Protocol.AppVar != "" && env.get(r.Protocol.AppVar) == "" {
			env.set(r.Protocol.AppVar, r.App)
		}
	}
	return env.kvs
}

// rewriteDatabases points the database addresses of env at the routes'
// counters.
func (w Wiring) rewriteDatabases(env *envList) {
	m := newAddrMatcher(w.LookupHost)
	for _, dr := range w.Databases {
		r, ok := newRoute(dr, m)
		if !ok {
			continue
		}
		done := map[string]bool{}
		for _, pair := range r.Protocol.HostPortVars {
			h, p := env.get(pair[0]), env.get(pair[1])
			if h != "" && !strings.Contains(h, ",") && r.names(h, p) {
				env.set(pair[0], r.host)
				env.set(pair[1], r.port)
				done[pair[0]], done[pair[1]] = true, true
			}
		}
		for _, k := range r.Protocol.AddrVars {
			if v := env.get(k); v != "" {
				if nv, ok := r.addrValue(v); ok {
					env.set(k, nv)
					done[k] = true
				}
			}
		}
		for i, kv := range env.kvs {
			k, v, _ := strings.Cut(kv, "=")
			if done[k] {
				continue
			}
			if nv := r.value(v); nv != v {
				env.kvs[i] = k + "=" + nv
			}
		}
	}
}

// envList is an environment with one entry per name, in order.
type envList struct {
	kvs []string
	idx map[string]int
}

func newEnvList(base []string) *envList {
	e := &envList{idx: map[string]int{}}
	for _, kv := range base {
		e.setKV(kv)
	}
	return e
}

func (e *envList) setKV(kv string) {
	k, _, ok := strings.Cut(kv, "=")
	if !ok || k == "" {
		return
	}
	if i, ok := e.idx[k]; ok {
		e.kvs[i] = kv
		return
	}
	e.idx[k] = len(e.kvs)
	e.kvs = append(e.kvs, kv)
}

func (e *envList) set(k, v string) { e.setKV(k + "=" + v) }

func (e *envList) get(k string) string {
	if i, ok := e.idx[k]; ok {
		_, v, _ := strings.Cut(e.kvs[i], "=")
		return v
	}
	return ""
}

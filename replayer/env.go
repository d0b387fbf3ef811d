package replayer

import (
	"net"
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
	// Postgres is the real database's host:port as the build would reach it
	// (the upstream of --postgres); SQLCount is the address of the SQL
	// counter in front of it. Both empty: no database rewriting.
	Postgres, SQLCount string
	// Listen is an address the build's environment may name for the SQL
	// counter out of habit: LISTEN of `--postgres LISTEN=HOST:PORT`, where
	// `record` had the app connect. It is rewritten to SQLCount like
	// Postgres, so that each side of a comparison reaches its own counter.
	// Empty: none.
	Listen string
	// App is the application_name the build's PostgreSQL clients give
	// (PGAPPNAME, which libpq and pgx honour), so that a counter can tell
	// which build connected; set only when the environment sets no
	// PGAPPNAME. Empty: not set.
	App string
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
//   - with a SQL counter: every variable whose value contains the
//     --postgres upstream HOST:PORT exactly (DATABASE_URL inherited or
//     given, any other given one), or the Listen address, gets that text
//     replaced by the counter's HOST:PORT (not where a digit follows it:
//     127.0.0.1:543 is not in 127.0.0.1:5432); PGHOST and PGPORT are
//     rewritten when they name the upstream or Listen host and port;
//     REPLAY_SQLCOUNT_ADDR is set to the counter's address, and PGAPPNAME to
//     App unless the environment sets it. A URL naming the server
//     differently (another host name, or no port for 5432) is left alone:
//     give it with --env.
//
// Later entries win; the result has one entry per name.
func (w Wiring) Environ(base, extra []string, port int) []string {
	env := newEnvList(base)
	for _, kv := range extra {
		env.setKV(kv)
	}
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
	if w.Postgres != "" && w.SQLCount != "" {
		w.rewriteDatabase(env)
	}
	return env.kvs
}

// rewriteDatabase points the database variables of env at the SQL counter.
func (w Wiring) rewriteDatabase(env *envList) {
	from := []string{w.Postgres}
	if w.Listen != "" && w.Listen != w.SQLCount {
		from = append(from, w.Listen)
	}
	for i, kv := range env.kvs {
		k, v, _ := strings.Cut(kv, "=")
		if nv := replaceAddrs(v, from, w.SQLCount); nv != v {
			env.kvs[i] = k + "=" + nv
		}
	}
	ch, cp, err := net.SplitHostPort(w.SQLCount)
	for _, a := range from {
		h, p, err2 := net.SplitHostPort(a)
		if err == nil && err2 == nil && env.get("PGHOST") == h && env.get("PGPORT") == p {
			env.set("PGHOST", ch)
			env.set("PGPORT", cp)
			break
		}
	}
	env.set("REPLAY_SQLCOUNT_ADDR", w.SQLCount)
	if w.App != "" && env.get("PGAPPNAME") == "" {
		env.set("PGAPPNAME", w.App)
	}
}

// replaceAddrs replaces in v every occurrence of an address of from that
// no digit follows (a longer port) with to, in one pass: what it writes is
// not searched again.
func replaceAddrs(v string, from []string, to string) string {
	var b strings.Builder
	i := 0
	for i < len(v) {
		n := 0
		for _, a := range from {
			if strings.HasPrefix(v[i:], a) && (i+len(a) == len(v) || !isDigit(v[i+len(a)])) {
				n = len(a)
				break
			}
		}
		if n == 0 {
			b.WriteByte(v[i])
			i++
			continue
		}
		b.WriteString(to)
		i += n
	}
	return b.String()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

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

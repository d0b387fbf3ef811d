package replayer

import (
	"slices"
	"strings"
)

// The forms in which a build's environment names a database server: URLs
// (anywhere in a value, after a prefix such as "jdbc:" too), libpq's
// key=value strings and go-sql-driver/mysql's DSNs. Each rewrites only the
// host and port of an address that names one of the route's targets and
// leaves every other byte alone.

// urls rewrites the addresses of every URL of the protocol's schemes in v;
// false when v holds none that names a target.
func (r *route) urls(v string) (string, bool) {
	var edits []edit
	for i := 0; i < len(v); {
		j := strings.Index(v[i:], "://")
		if j < 0 {
			break
		}
		j += i
		k := j
		for k > 0 && isSchemeChar(v[k-1]) {
			k--
		}
		i = j + 3
		scheme, _, _ := strings.Cut(strings.ToLower(v[k:j]), "+") // postgresql+asyncpg://
		if !slices.Contains(r.Protocol.Schemes, scheme) {
			continue
		}
		e, end := r.urlEdits(v, j+3)
		edits, i = append(edits, e...), max(i, end)
	}
	if len(edits) == 0 {
		return v, false
	}
	return applyEdits(v, edits), true
}

func isSchemeChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c == '+' || c == '-' || c == '.'
}

// urlHost is one host[:port] of a URL's authority, with where its host and
// port are in the value (portAt < 0: no port).
type urlHost struct {
	host, port       string
	hostAt, hostEnd  int
	portAt, portEnd  int
	insertPortAt     int  // where ":PORT" goes when there is none
	inTCP            bool // tcp(host:port), at tcpStart:tcpEnd
	tcpStart, tcpEnd int
}

// urlEdits are the edits that point the URL whose authority starts at
// start at the counter, and where the URL ends.
func (r *route) urlEdits(v string, start int) ([]edit, int) {
	end := start
	for end < len(v) && !strings.ContainsRune("/?#'\" \t\n", rune(v[end])) {
		end++
	}
	hostsAt := start
	if at := strings.LastIndexByte(v[start:end], '@'); at >= 0 {
		hostsAt = start + at + 1
	}
	qhosts, qport, qend := r.queryAddr(v, end)
	if len(qhosts) > 0 {
		return r.queryEdits(qhosts, qport, hosts(v, hostsAt, end)), qend
	}
	var edits []edit
	portEdited := false
	for _, h := range hosts(v, hostsAt, end) {
		port := h.port
		if h.portAt < 0 && qport != nil {
			port = qport.value
		}
		if !r.names(unescapeHost(h.host), port) {
			continue
		}
		if h.inTCP {
			edits = append(edits, edit{h.tcpStart, h.tcpEnd, r.counter()})
			continue
		}
		edits = append(edits, edit{h.hostAt, h.hostEnd, bracket(r.host)})
		switch {
		case h.portAt >= 0:
			edits = append(edits, edit{h.portAt, h.portEnd, r.port})
		case qport != nil && !portEdited:
			edits = append(edits, edit{qport.at, qport.end, r.port})
			portEdited = true
		case qport == nil:
			edits = append(edits, edit{h.insertPortAt, h.insertPortAt, ":" + r.port})
		}
	}
	return edits, qend
}

// hosts splits the hosts of a URL's authority v[at:end] (a comma-separated
// list, or go-sql-driver's tcp(host:port)).
func hosts(v string, at, end int) []urlHost {
	s := v[at:end]
	if strings.HasPrefix(s, "tcp(") && strings.HasSuffix(s, ")") {
		h, p := splitHostPort(s[4 : len(s)-1])
		return []urlHost{{host: h, port: p, inTCP: true, tcpStart: at + 4, tcpEnd: end - 1, portAt: -1}}
	}
	var out []urlHost
	for off := at; off <= end; {
		next := strings.IndexByte(v[off:end], ',')
		e := end
		if next >= 0 {
			e = off + next
		}
		out = append(out, oneHost(v, off, e))
		off = e + 1
	}
	return out
}

// oneHost parses v[at:end], a host[:port] of a URL.
func oneHost(v string, at, end int) urlHost {
	s := v[at:end]
	h, p := splitHostPort(s)
	u := urlHost{host: h, port: p, portAt: -1, insertPortAt: end}
	u.hostAt, u.hostEnd = at, at+len(h)
	if e := strings.IndexByte(s, ']'); strings.HasPrefix(s, "[") && e >= 0 {
		u.hostEnd = at + e + 1 // the brackets go with the host
	}
	if i := strings.LastIndexByte(s, ':'); p != "" && i >= 0 {
		u.portAt, u.portEnd = at+i+1, end
	}
	return u
}

// bracket writes an IPv6 host as a URL does.
func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// queryParam is a parameter of a URL's query or of a key=value string,
// with where its value is.
type queryParam struct {
	key, value string
	at, end    int
}

// queryAddr finds libpq's host and hostaddr (which wins) parameters and
// its port in the query of the URL whose authority ends at end; none for
// those absent, or for protocols without them; and where the URL ends.
func (r *route) queryAddr(v string, end int) (hosts []*queryParam, port *queryParam, stop int) {
	stop = end
	for stop < len(v) && !strings.ContainsRune("'\" \t\n", rune(v[stop])) {
		stop++
	}
	q := strings.IndexByte(v[end:stop], '?')
	if !r.Protocol.KeyValue || q < 0 {
		return nil, nil, stop
	}
	at := end + q + 1
	if h := strings.IndexByte(v[at:stop], '#'); h >= 0 {
		stop = at + h
	}
	for off := at; off < stop; {
		e := strings.IndexByte(v[off:stop], '&')
		if e < 0 {
			e = stop - off
		}
		k, val, ok := strings.Cut(v[off:off+e], "=")
		p := &queryParam{key: strings.ToLower(k), value: unescapeHost(val), at: off + len(k) + 1, end: off + e}
		switch k = p.key; {
		case !ok:
		case k == "host" || k == "hostaddr":
			hosts = append(hosts, p)
		case k == "port":
			port = p
		}
		off += e + 1
	}
	return hosts, port, stop
}

// dialed is the parameter a libpq client dials of host and hostaddr: the
// last hostaddr, else the last host.
func dialed(hosts []*queryParam) *queryParam {
	var d *queryParam
	for _, p := range hosts {
		if p.key == "hostaddr" || d == nil || d.key == "host" {
			d = p
		}
	}
	return d
}

// queryEdits points a URL whose query names its host at the counter.
func (r *route) queryEdits(qhosts []*queryParam, qport *queryParam, hs []urlHost) []edit {
	port := ""
	if qport != nil {
		port = qport.value
	} else if len(hs) > 0 {
		port = hs[0].port
	}
	if !r.names(dialed(qhosts).value, port) {
		return nil
	}
	var edits []edit
	for _, p := range qhosts {
		edits = append(edits, edit{p.at, p.end, r.host})
	}
	if qport != nil {
		return append(edits, edit{qport.at, qport.end, r.port})
	}
	last := qhosts[len(qhosts)-1]
	return append(edits, edit{last.end, last.end, "&port=" + r.port})
}

// keyValue rewrites libpq's key=value connection string v ("host=db
// port=5432 dbname=x"); false when v is not one, or names no target.
func (r *route) keyValue(v string) (string, bool) {
	params, ok := parseKeyValue(v)
	if !ok {
		return v, false
	}
	var hosts []*queryParam
	var port *queryParam
	for i := range params {
		switch p := &params[i]; p.key {
		case "host", "hostaddr":
			hosts = append(hosts, p)
		case "port":
			port = p
		}
	}
	portValue := ""
	if port != nil {
		portValue = port.value
	}
	addr := dialed(hosts)
	if strings.Contains(addr.value, ",") || strings.Contains(portValue, ",") || !r.names(addr.value, portValue) {
		return v, false
	}
	var edits []edit
	for _, p := range hosts {
		edits = append(edits, edit{p.at, p.end, r.host})
	}
	if port != nil {
		edits = append(edits, edit{port.at, port.end, r.port})
	} else {
		// First: after a last "key=" with no value, it would be that value.
		edits = append(edits, edit{0, 0, "port=" + r.port + " "})
	}
	return applyEdits(v, edits), true
}

// parseKeyValue reads libpq's key=value pairs, separated by spaces, values
// bare or in single quotes with backslash escapes; false unless all of v
// is such pairs and one of them is host or hostaddr.
func parseKeyValue(v string) ([]queryParam, bool) {
	var out []queryParam
	hasHost := false
	i := 0
	for {
		for i < len(v) && isSpace(v[i]) {
			i++
		}
		if i == len(v) {
			break
		}
		k := i
		for i < len(v) && (isDigit(v[i]) || v[i] == '_' || 'a' <= v[i] && v[i] <= 'z' || 'A' <= v[i] && v[i] <= 'Z') {
			i++
		}
		key := v[k:i]
		for i < len(v) && isSpace(v[i]) {
			i++
		}
		if key == "" || i == len(v) || v[i] != '=' {
			return nil, false
		}
		i++
		for i < len(v) && isSpace(v[i]) {
			i++
		}
		p := queryParam{key: key, at: i}
		var ok bool
		if p.value, i, ok = kvValue(v, i); !ok {
			return nil, false
		}
		p.end = i
		hasHost = hasHost || key == "host" || key == "hostaddr"
		out = append(out, p)
	}
	return out, hasHost
}

// kvValue reads the value at v[i:] of a key=value string and returns it
// and where it ends.
func kvValue(v string, i int) (string, int, bool) {
	if i < len(v) && v[i] == '\'' {
		var b strings.Builder
		for i++; i < len(v); i++ {
			switch v[i] {
			case '\\':
				if i+1 < len(v) {
					i++
					b.WriteByte(v[i])
				}
			case '\'':
				return b.String(), i + 1, true
			default:
				b.WriteByte(v[i])
			}
		}
		return "", i, false
	}
	s := i
	for i < len(v) && !isSpace(v[i]) {
		i++
	}
	return v[s:i], i, true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// tcpDSN rewrites go-sql-driver/mysql's DSN v,
// [user[:password]@][tcp[(host[:port])]]/dbname[?params]; false when v is
// not one (a URL, a path, another network), or names no target. An empty
// address is what the driver dials for it: 127.0.0.1 on the default port.
func (r *route) tcpDSN(v string) (string, bool) {
	if strings.Contains(v, "://") || strings.ContainsAny(v, " \t\n") {
		return v, false
	}
	slash := strings.LastIndexByte(v, '/')
	if slash < 0 {
		return v, false
	}
	at := strings.LastIndexByte(v[:slash], '@')
	network := v[at+1 : slash]
	var host, port string
	switch {
	case network == "" && at >= 0, network == "tcp":
		host = "127.0.0.1"
	case strings.HasPrefix(network, "tcp(") && strings.HasSuffix(network, ")"):
		host, port = splitHostPort(network[4 : len(network)-1])
	default:
		return v, false
	}
	if !r.names(host, port) {
		return v, false
	}
	return v[:at+1] + "tcp(" + r.counter() + ")" + v[slash:], true
}

package replayer

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
)

// lookupTimeout bounds the resolution of one host name a build's
// environment gives for its database.
const lookupTimeout = 2 * time.Second

// addrMatcher tells whether two addresses name the same server: the same
// port (an absent one is the protocol's default) on hosts that are the same
// name, or resolve to a common address. Loopback is one host: 127.0.0.1,
// ::1, localhost and an unspecified address (0.0.0.0, ":5432") all name this
// machine. Each host name is resolved once.
type addrMatcher struct {
	lookup func(ctx context.Context, host string) ([]string, error)
	cache  map[string][]netip.Addr
}

func newAddrMatcher(lookup func(ctx context.Context, host string) ([]string, error)) *addrMatcher {
	if lookup == nil {
		lookup = net.DefaultResolver.LookupHost
	}
	return &addrMatcher{lookup: lookup, cache: map[string][]netip.Addr{}}
}

// addrs returns what host resolves to, loopback and unspecified addresses
// folded into 127.0.0.1; none when it does not resolve.
func (m *addrMatcher) addrs(host string) []netip.Addr {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if a, ok := m.cache[host]; ok {
		return a
	}
	var names []string
	if _, err := netip.ParseAddr(host); err == nil || host == "" {
		names = []string{host}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
		names, _ = m.lookup(ctx, host)
		cancel()
	}
	var out []netip.Addr
	for _, n := range names {
		a, err := netip.ParseAddr(n)
		if n == "" {
			a, err = netip.IPv4Unspecified(), nil
		}
		if err != nil {
			continue
		}
		if a = a.Unmap(); a.IsLoopback() && a.Is6() || a.IsUnspecified() {
			a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	m.cache[host] = out
	return out
}

// sameHost reports whether hosts a and b name the same machine.
func (m *addrMatcher) sameHost(a, b string) bool {
	if strings.EqualFold(strings.Trim(a, "[]"), strings.Trim(b, "[]")) {
		return true
	}
	bs := m.addrs(b)
	for _, x := range m.addrs(a) {
		if slices.Contains(bs, x) {
			return true
		}
	}
	return false
}

// route rewrites the addresses of one database route in a build's
// environment: whatever names Upstream or Listen becomes Counter.
type route struct {
	DatabaseRoute
	m       *addrMatcher
	targets [][2]string // host, port
	literal []string    // the targets as given, for text that no form reads
	host    string      // the counter's host and port
	port    string
}

func newRoute(r DatabaseRoute, m *addrMatcher) (*route, bool) {
	rt := &route{DatabaseRoute: r, m: m}
	var err error
	if rt.host, rt.port, err = net.SplitHostPort(r.Counter); err != nil {
		return nil, false
	}
	for _, a := range []string{r.Upstream, r.Listen} {
		if a == "" || (a == r.Listen && a == r.Counter) {
			continue
		}
		h, p, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		rt.targets = append(rt.targets, [2]string{h, p})
		rt.literal = append(rt.literal, a)
	}
	return rt, len(rt.targets) > 0
}

// names reports whether host and port (empty: the protocol's default) name
// one of the route's targets. Ports are compared first: most addresses are
// told apart without resolving a name.
func (r *route) names(host, port string) bool {
	if port == "" {
		port = r.Protocol.DefaultPort
	}
	if host == "" || strings.HasPrefix(host, "/") {
		return false // a Unix socket, or the client's default
	}
	for _, t := range r.targets {
		if t[1] == port && r.m.sameHost(host, t[0]) {
			return true
		}
	}
	return false
}

// counter is the counter's address as a URL or DSN writes it.
func (r *route) counter() string { return net.JoinHostPort(r.host, r.port) }

// value returns v with every address of the route it names rewritten to
// the counter, trying each form the protocol's clients read; text in no
// form has the targets' exact HOST:PORT replaced.
func (r *route) value(v string) string {
	if nv, ok := r.urls(v); ok {
		return nv
	}
	if r.Protocol.KeyValue {
		if nv, ok := r.keyValue(v); ok {
			return nv
		}
	}
	if r.Protocol.TCPDSN {
		if nv, ok := r.tcpDSN(v); ok {
			return nv
		}
	}
	if h, p, err := net.SplitHostPort(v); err == nil && p != "" && isNumber(p) && r.names(h, p) {
		return r.counter()
	}
	return replaceAddrs(v, r.literal, r.counter())
}

// addrValue rewrites a variable whose whole value is HOST[:PORT].
func (r *route) addrValue(v string) (string, bool) {
	h, p := splitHostPort(v)
	if !r.names(h, p) {
		return v, false
	}
	return r.counter(), true
}

// splitHostPort splits HOST[:PORT] (HOST may be [v6]); the port is empty
// when absent.
func splitHostPort(s string) (host, port string) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return s, ""
		}
		host, rest := s[1:end], s[end+1:]
		if p, ok := strings.CutPrefix(rest, ":"); ok {
			return host, p
		}
		return host, ""
	}
	if strings.Count(s, ":") > 1 {
		return s, "" // a bare IPv6 address
	}
	host, port, _ = strings.Cut(s, ":")
	return host, port
}

// unescapeHost percent-decodes a host taken from a URL; a host that does
// not decode is kept as it is.
func unescapeHost(h string) string {
	if u, err := url.PathUnescape(h); err == nil {
		return u
	}
	return h
}

func isNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

// edit is a replacement of v[start:end].
type edit struct {
	start, end int
	text       string
}

// applyEdits applies edits, in order and not overlapping, to v.
func applyEdits(v string, edits []edit) string {
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	var b strings.Builder
	last := 0
	for _, e := range edits {
		if e.start < last {
			continue // overlapping: never made by the forms, kept out all the same
		}
		b.WriteString(v[last:e.start])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(v[last:])
	return b.String()
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
